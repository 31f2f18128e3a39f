"""A build's weights as its engine is given them: found on disk, hashed, and checked against prepared.json
(what `builds prepare` recorded making them) and, for a GGUF, against the architectures llama.cpp loads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field

from agent_eval.builds.serving.gguf_file import read_gguf
from agent_eval.builds.serving.llama_server import check_architecture
from agent_eval.builds.spec import Build
from agent_eval.errors import BuildError
from agent_eval.records import StrictModel

PREPARED_FILE = "prepared.json"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")


class Prepared(StrictModel):
    """prepared.json: what is in a build's weights directory and how it was made."""

    build: str
    scheme: str
    weights_hash: str = Field(description="sha256 over the weight files (name + bytes, sorted by name).")
    files: list[str]
    recipe: dict[str, Any] | None = None
    source_hash: str | None = Field(None, description="Hash of what it was made from (GGUF or source build).")
    calibration_hash: str | None = Field(None, description="sha256 of the calibration prompts (gptq).")
    seconds: float = 0.0
    gguf: dict[str, Any] | None = Field(
        None, description="GGUF rungs: quant type, imatrix hash, bits per weight, tensor types, tools."
    )
    facts: dict[str, Any] | None = Field(
        None, description="What another recipe kind (a plug-in's) records about what it made."
    )


def file_chunks(path: Path) -> Iterator[bytes]:
    """A file's bytes a MiB at a time, for hashing weights larger than memory."""
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            yield chunk


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    for chunk in file_chunks(path):
        digest.update(chunk)
    return digest.hexdigest()


def weight_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(_WEIGHT_SUFFIXES))


# path → (each weight file's name, size and mtime when hashed, the hash): a run hashes a build's weights once.
_HASHED: dict[Path, tuple[tuple[tuple[str, int, int], ...], str]] = {}


def weights_hash(path: Path) -> str:
    """Content hash of a checkpoint dir's weight files (or of one GGUF file); read again only when a file's
    size or modification time changed since this process last hashed it."""
    files = weight_files(path)
    if not files:
        raise BuildError(f"{path}: no weight files ({', '.join(_WEIGHT_SUFFIXES)}) to hash")
    stamp = tuple((f.name, (st := f.stat()).st_size, st.st_mtime_ns) for f in files)
    known = _HASHED.get(path.resolve())
    if known is not None and known[0] == stamp:
        return known[1]
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode() + b"\0")
        for chunk in file_chunks(file):
            digest.update(chunk)
    _HASHED[path.resolve()] = (stamp, "sha256:" + digest.hexdigest())
    return _HASHED[path.resolve()][1]


def prepared_path(build: Build) -> Path:
    path = build.resolved_path()
    assert path is not None, "endpoint builds have no weights"
    return (path.parent if path.suffix == ".gguf" else path) / PREPARED_FILE


def read_prepared(build: Build) -> Prepared | None:
    file = prepared_path(build)
    try:
        return Prepared.model_validate_json(file.read_text())
    except (OSError, ValueError):
        return None


def missing_weights(build: Build) -> BuildError | None:
    """The error for a build whose weights are not on disk (None when they are, or it has none to have)."""
    path = build.resolved_path()
    if path is None or path.exists():
        return None
    hint = "run `agent-eval builds prepare`" if build.prepare else "put the weights there or fix model_path"
    return BuildError(f"build {build.name!r}: weights missing at {path}; {hint}")


def verify(build: Build) -> str:
    """The build's weights hash, once its weights are found and match prepared.json; else BuildError."""
    path = build.resolved_path()
    if path is None:
        raise BuildError(f"build {build.name!r} is an endpoint build and has no weights")
    missing = missing_weights(build)
    if missing is not None:
        raise missing
    if path.suffix == ".gguf":
        try:
            # A truncated or corrupt file, or a model llama.cpp cannot load, is refused here, before a server.
            check_architecture(read_gguf(path), path)
        except BuildError as e:
            raise BuildError(f"build {build.name!r}: {e}") from None
    actual = weights_hash(path)
    recorded = read_prepared(build)
    if recorded is not None and recorded.weights_hash != actual:
        raise BuildError(
            f"build {build.name!r}: weights at {path} changed since they were prepared "
            f"({recorded.weights_hash[:19]} → {actual[:19]}); re-run `agent-eval builds prepare`"
        )
    return actual
