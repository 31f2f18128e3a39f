"""The `gguf` recipe kind: llama.cpp's own converter (HF checkpoint → BF16/F16 GGUF), its importance matrix
tool on the agent's own prompts, and its quantizer; plus what the manifest records about the result.

The tools are the ones scripts/setup.sh builds from llama-cpp-python's vendored source, beside the harness
venv's interpreter (`llama-quantize`, `llama-imatrix`) and in its share/llama.cpp (`convert_hf_to_gguf.py`).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from agent_eval.builds.ladder_rungs import gguf_grid_bits, gguf_rung
from agent_eval.builds.preparing.ladder_recipes import calibration_set
from agent_eval.builds.recipe_kinds import Plan, Recipe, Say, Weights
from agent_eval.builds.serving.gguf_file import read_gguf
from agent_eval.builds.serving.weights import sha256_file
from agent_eval.builds.spec import Build, Step
from agent_eval.errors import BuildError
from agent_eval.records import RungInfo

# Converter output types, and the quantizer's types (its own names), by the lower-case name a recipe uses.
CONVERT_TYPES = {"bf16": "bf16", "f16": "f16"}
_QUANTIZER_NAMES = [
    "Q8_0", "Q6_K", "Q5_K_M", "Q5_0", "Q4_K_M", "Q4_1", "Q4_0", "IQ4_NL", "IQ4_XS", "Q3_K_M", "Q2_K",
]  # fmt: skip
QUANT_TYPES = {t.lower(): t for t in _QUANTIZER_NAMES}
SETUP_HINT = "run scripts/setup.sh (it builds llama.cpp once for this CPU)"


def check_gguf_recipe(source: str | None, gguf_type: str | None, calibration: str | None) -> None:
    """ValueError for a 'gguf' recipe that cannot be made (shown with the build's name)."""
    if source is None:
        raise ValueError("a 'gguf' recipe needs 'source': an HF build to convert or a GGUF build to quantize")
    known = sorted({*CONVERT_TYPES, *QUANT_TYPES})
    if gguf_type not in known:
        raise ValueError(f"gguf_type {gguf_type!r}: use one of {known}")
    if calibration and gguf_type in CONVERT_TYPES:
        raise ValueError(f"gguf_type {gguf_type}: a conversion takes no importance matrix (no 'calibration')")


class GgufRecipe(Recipe):
    """`gguf`: an HF build converted to BF16/F16 GGUF, or a GGUF build quantized to a llama.cpp type."""

    calibration: str | None = Field(
        None, description="The importance matrix's prompts: a run dir's recorded steps or a JSONL of chats."
    )
    calibration_samples: int = Field(64, gt=0, description="Prompts used at most.")
    gguf_type: str | None = Field(
        None, description="bf16/f16 (convert an HF build) or a llama.cpp quant type (q4_k_m ...)."
    )

    @model_validator(mode="after")
    def _makeable(self) -> GgufRecipe:
        check_gguf_recipe(self.source, self.gguf_type, self.calibration)
        return self


class GgufKind:
    """GGUF rungs made with llama.cpp's tools; bits per weight and tensor types are read from the file."""

    name = "gguf"
    fields = GgufRecipe

    def bits(self, recipe: Recipe, scheme: str) -> float | None:
        return None  # the scheme's nominal bits; the manifest's rung has the file's own

    def list_group(self, recipe: Recipe, scheme: str) -> str:
        return "served"

    def rung(self, recipe: Recipe, weights: Weights) -> RungInfo | None:
        gguf_type = recipe.own(GgufRecipe).gguf_type
        path, bpw = weights.path, weights.bits_per_weight
        return gguf_rung(gguf_type or "", gguf_grid_bits(gguf_type), bpw, path, weights.weights_hash)

    def plan(self, step: Step) -> Plan:
        build, own = step.build, step.recipe.own(GgufRecipe)
        source_hash = step.made_from
        if own.gguf_type in CONVERT_TYPES:
            # The converted file also holds the tokenizer and chat template; the weights hash leaves them out.
            source_hash = f"{source_hash}+{tokenizer_hash(step.source_path())}"
        prompts, calibration = calibration_set(build) if own.calibration else (None, None)
        if calibration is not None:
            source_hash = f"{source_hash};calibration={calibration}"

        def made(say: Say) -> dict[str, Any]:
            how = "converting" if own.gguf_type in CONVERT_TYPES else "quantizing"
            matrix = f", importance matrix on {len(prompts)} of the agent's prompts" if prompts else ""
            say(f"{build.name}: {how} {own.source} to GGUF {own.gguf_type} with llama.cpp's tools{matrix}")
            return {"gguf": make(build, step.source_path(), prompts)}

        return Plan(source_hash, made, calibration)


TOKENIZER_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "tokenizer.model",
)


def tokenizer_hash(source_dir: Path | None) -> str:
    """sha256 of the files besides the weights that the converter writes into the GGUF."""
    digest = hashlib.sha256()
    for name in TOKENIZER_FILES:
        file = source_dir / name if source_dir is not None else None
        if file is not None and file.is_file():
            digest.update(name.encode() + b"\0" + file.read_bytes())
    return "tokenizer=sha256:" + digest.hexdigest()


def tool_dir() -> Path:
    return Path(sys.executable).parent


def converter() -> Path:
    return Path(sys.prefix) / "share" / "llama.cpp" / "convert_hf_to_gguf.py"


def missing_tools() -> str | None:
    """Why GGUF rungs cannot be made here (None: they can)."""
    needed = [tool_dir() / "llama-quantize", tool_dir() / "llama-imatrix", converter()]
    absent = [p.name for p in needed if not p.exists()]
    return f"llama.cpp's {', '.join(absent)} not installed; {SETUP_HINT}" if absent else None


def tool_versions() -> dict[str, str]:
    """What made the file: llama-cpp-python (its vendored llama.cpp built the tools), the converter's gguf."""
    versions = {"llama-cpp-python": _dist_version("llama_cpp_python")}
    gguf_py = converter().parent / "gguf-py" / "pyproject.toml"
    for line in gguf_py.read_text().splitlines() if gguf_py.exists() else []:
        if line.startswith("version"):
            versions["gguf-py"] = line.split("=", 1)[1].strip().strip('"')
            break
    return versions


def _dist_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def _run(command: list[str], what: str, cwd: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-15:])
        raise BuildError(f"{what} failed (exit {proc.returncode}); last output:\n{tail}")


def convert(source_dir: Path, out: Path, out_type: str) -> None:
    """HF checkpoint → GGUF of `out_type` (bf16/f16) with llama.cpp's convert_hf_to_gguf.py."""
    tmp = out.with_name(f".{out.name}.tmp")
    out.parent.mkdir(parents=True, exist_ok=True)
    driver = Path(__file__).with_name("_convert_script.py")  # takes the byte-level BPE vocabulary path
    command = [sys.executable, str(driver), str(converter()), str(source_dir), "--outfile", str(tmp)]
    command += ["--outtype", out_type]
    _run(command, f"converting {source_dir.name} to GGUF {out_type}", out.parent)
    tmp.rename(out)


def calibration_text(source: Path, conversations: list[list[dict[str, Any]]]) -> str:
    """The prompts (and answers) rendered with the chat template stored in the source GGUF, as served."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    template = read_gguf(source).metadata.get("tokenizer.chat_template")
    if not isinstance(template, str):
        raise BuildError(f"{source}: no chat template in the GGUF; cannot render the calibration prompts")
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    render = env.from_string(template).render
    return "".join(
        render(messages=c, add_generation_prompt=False, bos_token="", eos_token="") for c in conversations
    )


def importance_matrix(source: Path, text: str, out: Path, threads: int) -> None:
    """llama-imatrix over `text`: the mean squared activation of each input column of each matrix."""
    work = out.parent
    work.mkdir(parents=True, exist_ok=True)
    text_file = work / f"{out.stem}.txt"
    text_file.write_text(text, encoding="utf-8")
    # Relative paths: the tool writes them into the matrix's metadata, which would tie its hash to the host.
    command = [str(tool_dir() / "llama-imatrix"), "-m", os.path.relpath(source, work), "-f", text_file.name,
               "-o", out.name, "--parse-special", "--no-ppl", "-c", "512", "-t", str(threads)]  # fmt: skip
    _run(command, f"computing the importance matrix on {source.name}", work)
    text_file.unlink()


def quantize(source: Path, out: Path, gguf_type: str, imatrix: Path | None, threads: int) -> None:
    """llama-quantize `source` to `gguf_type`, with the importance matrix when given."""
    work = out.parent
    work.mkdir(parents=True, exist_ok=True)
    tmp = f".{out.name}.tmp"
    command = [str(tool_dir() / "llama-quantize")]
    if imatrix is not None:
        command += ["--imatrix", os.path.relpath(imatrix, work)]
    command += [os.path.relpath(source, work), tmp, QUANT_TYPES[gguf_type], str(threads)]
    _run(command, f"quantizing {source.name} to {QUANT_TYPES[gguf_type]}", work)
    (work / tmp).rename(out)


def file_facts(path: Path, gguf_type: str, imatrix_hash: str | None) -> dict[str, Any]:
    """What prepared.json records about a GGUF rung, read from the file itself."""
    info = read_gguf(path)
    return {
        "gguf_type": gguf_type,
        "imatrix_hash": imatrix_hash,
        "bits_per_weight": info.bits_per_weight(),
        "tensor_types": info.type_counts(),
        "tools": tool_versions(),
    }


def make(build: Build, source: Path, calibration: list[list[dict[str, Any]]] | None) -> dict[str, Any]:
    """Make a GGUF rung's file from `source` (an HF dir or a GGUF file); returns its facts."""
    assert build.prepare is not None
    recipe, out = build.prepare.own(GgufRecipe), build.resolved_path()
    assert recipe.gguf_type is not None and out is not None
    why = missing_tools()
    if why is not None:
        raise BuildError(f"build {build.name!r}: {why}")
    threads = len(build.pinning.cpu_ids())
    if recipe.gguf_type in CONVERT_TYPES:
        if not (source / "config.json").is_file():
            raise BuildError(f"build {build.name!r}: source {source} is not an HF checkpoint to convert")
        convert(source, out, CONVERT_TYPES[recipe.gguf_type])
        return file_facts(out, recipe.gguf_type, None)
    if source.suffix != ".gguf":
        raise BuildError(
            f"build {build.name!r}: quantizing needs a GGUF source (a gguf-bf16 build), not {source}"
        )
    read_gguf(source)  # a broken source is named before the tools see it
    matrix, matrix_hash = None, None
    if calibration is not None:
        matrix, matrix_hash = shared_matrix(source, calibration_text(source, calibration), threads)
    quantize(source, out, recipe.gguf_type, matrix, threads)
    return file_facts(out, recipe.gguf_type, matrix_hash)


def shared_matrix(source: Path, text: str, threads: int) -> tuple[Path, str]:
    """The importance matrix of `source` on `text`, kept beside the source: the rungs made from one source on
    one calibration set share it (computing it is the slow part of preparing them)."""
    key = hashlib.sha256(text.encode() + sha256_file(source).encode()).hexdigest()[:16]
    matrix = source.with_name(f"imatrix-{key}.gguf")
    if matrix.is_file():
        return matrix, "sha256:" + sha256_file(matrix)
    tmp = matrix.with_name(f".{matrix.name}.tmp.gguf")
    importance_matrix(source, text, tmp, threads)
    tmp.rename(matrix)
    return matrix, "sha256:" + sha256_file(matrix)
