"""GGUF rungs end to end on a tiny Llama with SmolLM2's tokenizer: llama.cpp's converter and quantizer
(with and without an importance matrix on the agent's prompts), what prepared.json reads from the files,
broken files refused by name, both types served through the real llama.cpp server with the action schema,
and fidelity's teacher forcing on them giving a finite KL."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import torch
from _synthetic import SyntheticRun, write_synthetic_run

from agent_eval.agent.parse import parse_action
from agent_eval.agent.prompt import SYSTEM_PROMPT, action_schema
from agent_eval.builds import BuildSet, load_builds, prepare
from agent_eval.builds.preparing.gguf_recipe import missing_tools
from agent_eval.builds.serving.gguf_file import read_gguf
from agent_eval.builds.serving.launcher import serve
from agent_eval.builds.serving.weights import read_prepared, verify
from agent_eval.builds.spec import parse_builds, repo_root
from agent_eval.chat.client import ChatClient
from agent_eval.errors import BuildError
from agent_eval.fidelity.run import TEACHER_FORCING, assemble, probe_build
from agent_eval.fidelity.steps import StepsFrom, load_source_steps
from agent_eval.records import StepRecord

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (scripts/setup.sh installs it)")
if missing_tools():
    pytest.skip(str(missing_tools()), allow_module_level=True)

CALIBRATION = repo_root() / "tests" / "data" / "ladder_calibration.jsonl"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
SAMPLING = {"temperature": 0.7, "top_p": 1.0, "max_tokens": 48}


def _tiny_llama(directory: Path) -> Path:
    """2 layers, hidden 128 (rows k-quants cannot take: a fallback type) and intermediate 256 (they can)."""
    import transformers

    hf: Any = transformers  # its stubs do not know every model class's keywords
    builds = load_builds()
    prepare(builds, only=["bf16-base"], say=lambda line: print(f"[prepare] {line}", flush=True))
    base = builds.get("bf16-base").resolved_path()
    assert base is not None
    torch.manual_seed(0)
    config = hf.LlamaConfig(
        vocab_size=49152, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=2048, tie_word_embeddings=True, bos_token_id=1,
        eos_token_id=2, rms_norm_eps=1e-5, rope_theta=100000.0,
    )  # fmt: skip
    hf.LlamaForCausalLM(config).to(torch.bfloat16).save_pretrained(directory)
    for name in TOKENIZER_FILES:
        if (base / name).exists():
            shutil.copy(base / name, directory / name)
    return directory


def _gguf(name: str, gguf_type: str, source: str, calibration: bool = False) -> dict[str, Any]:
    recipe: dict[str, Any] = {"kind": "gguf", "source": source, "gguf_type": gguf_type}
    if calibration:
        recipe |= {"calibration": str(CALIBRATION.relative_to(repo_root())), "calibration_samples": 8}
    return {
        "name": name, "scheme": f"gguf-{gguf_type}", "engine": "llama.cpp", "agent": "compact",
        "model_path": f"gguf-test/{name}/model.gguf", "prepare": recipe, "sampling": SAMPLING,
        "engine_args": {"max_model_len": 1024},
    }  # fmt: skip


@cache
def _builds(models: Path) -> BuildSet:
    tiny = models / "gguf-test" / "tiny-hf"
    if not (tiny / "config.json").exists():
        _tiny_llama(tiny)
    reference = {
        "name": "tiny",
        "reference": True,
        "scheme": "bf16",
        "engine": "vllm-cpu",
        "model_path": str(tiny),
        "agent": "compact",  # the GGUF copies are played by the agent of the model they convert
    }
    return parse_builds(
        {
            "builds": [
                reference,
                _gguf("tiny-bf16", "bf16", "tiny"),
                _gguf("tiny-q8_0", "q8_0", "tiny-bf16"),
                _gguf("tiny-q4_k_m", "q4_k_m", "tiny-bf16", calibration=True),
                _gguf("tiny-q4_k_m-noimat", "q4_k_m", "tiny-bf16"),
            ]
        },
        "gguf test builds",
    )


@pytest.fixture(scope="module")
def prepared() -> BuildSet:
    from agent_eval.builds.spec import models_dir

    builds = _builds(models_dir())
    prepare(builds, say=lambda line: print(f"[prepare] {line}", flush=True))
    return builds


def _facts(builds: BuildSet, name: str) -> dict[str, Any]:
    recorded = read_prepared(builds.get(name))
    assert recorded is not None and recorded.gguf is not None
    return recorded.gguf


@pytest.mark.slow
def test_each_file_records_its_type_bits_and_tools(prepared: BuildSet) -> None:
    bf16, q8, q4 = (_facts(prepared, n) for n in ("tiny-bf16", "tiny-q8_0", "tiny-q4_k_m"))
    assert bf16["tensor_types"].get("bf16", 0) >= 14
    assert bf16["bits_per_weight"] == pytest.approx(16.0, abs=0.01)
    assert q8["tensor_types"].get("q8_0", 0) >= 14
    assert q8["bits_per_weight"] == pytest.approx(8.5, abs=0.01)
    # 128-wide rows fall back to a block-32 type; only down_proj's 256-wide rows take a k-quant.
    assert q4["tensor_types"].get("q4_K", 0) + q4["tensor_types"].get("q6_K", 0) >= 2, q4["tensor_types"]
    assert any(t in q4["tensor_types"] for t in ("q5_0", "q5_1", "q8_0")), q4["tensor_types"]
    # Measured 8.37: the tied 49152 × 128 embedding dominates and falls back to q8_0, far from the name's 4.5.
    assert 4.5 < q4["bits_per_weight"] < q8["bits_per_weight"]
    assert q4["imatrix_hash"].startswith("sha256:") and q8["imatrix_hash"] is None
    assert q4["tools"]["llama-cpp-python"] == "0.3.36" and q4["tools"].get("gguf-py")
    build = prepared.get("tiny-q4_k_m")
    rung = build.manifest(verify(build))
    assert rung.rung is not None and rung.rung.method == "gguf" and "imatrix" in rung.rung.label
    assert rung.bits_per_weight == q4["bits_per_weight"]


@pytest.mark.slow
def test_the_importance_matrix_changes_the_weights_and_prepare_repeats_itself(prepared: BuildSet) -> None:
    with_matrix, without = (read_prepared(prepared.get(n)) for n in ("tiny-q4_k_m", "tiny-q4_k_m-noimat"))
    assert with_matrix is not None and without is not None
    assert with_matrix.weights_hash != without.weights_hash
    assert with_matrix.calibration_hash is not None and "calibration=" in (with_matrix.source_hash or "")
    source, converted = prepared.get("tiny-bf16").resolved_path(), read_prepared(prepared.get("tiny-bf16"))
    assert source is not None and converted is not None
    for matrix in source.parent.glob("imatrix-*.gguf"):
        matrix.unlink()  # computed again too, not taken from the last run
    again = prepare(prepared, only=["tiny-bf16", "tiny-q4_k_m"], force=True, say=lambda _: None)
    assert _facts(prepared, "tiny-q4_k_m")["imatrix_hash"] == (with_matrix.gguf or {})["imatrix_hash"]
    assert again["tiny-q4_k_m"] == with_matrix.weights_hash  # same inputs, same bytes
    assert again["tiny-bf16"] == converted.weights_hash


@pytest.mark.slow
def test_a_truncated_or_corrupt_gguf_is_refused_by_name(prepared: BuildSet, tmp_path: Path) -> None:
    good = prepared.get("tiny-q8_0").resolved_path()
    assert good is not None
    data = good.read_bytes()
    cases = {"truncated": data[: len(data) - 4096], "corrupt": b"GGUX" + data[4:], "header": data[:200]}
    for what, content in cases.items():
        broken = prepared.get("tiny-q8_0").model_dump(exclude_defaults=True)
        path = tmp_path / what / "model.gguf"
        path.parent.mkdir()
        path.write_bytes(content)
        broken.update(name=f"broken-{what}", model_path=str(path))
        broken.pop("prepare")
        build = parse_builds({"builds": [{**broken, "reference": True}]}, "broken").get(f"broken-{what}")
        with pytest.raises(BuildError, match=f"broken-{what}.*(truncated|not a GGUF)"):
            verify(build)
        with pytest.raises(BuildError, match=f"broken-{what}"), serve(build, tmp_path / "run"):
            pass
    assert read_gguf(good).size == len(data)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gguf-run")


@pytest.mark.engine
@pytest.mark.parametrize("name", ["tiny-q8_0", "tiny-q4_k_m"])
def test_both_types_are_served_with_the_action_schema(prepared: BuildSet, run_dir: Path, name: str) -> None:
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "Goal: open Wi-Fi"}]
    with serve(prepared.get(name), run_dir) as served:
        assert served.manifest.engine == "llama.cpp" and served.manifest.rung is not None
        # Random weights give near-flat distributions: a prompt the slot has cached gets its last position's
        # logits from a batch of one instead of the prompt's batch, and the last bits that differ flip a draw.
        # Computed alike (no prompt cache), a seed draws the same answer. (The real model's peaked
        # distributions keep the same seed's answer with the cache: test_builds_llama_server_engine.py.)
        alike = dataclasses.replace(
            served.endpoint, extra_body=(*served.endpoint.extra_body, ("cache_prompt", False))
        )
        with ChatClient(alike) as client:
            answers = [client.chat(messages, json_schema=action_schema(), seed=s) for s in (1, 1, 2)]
            usage = client.usage()
        record = served.record(usage)
    assert answers[0].text == answers[1].text  # the same seed, the same answer
    for answer in answers:
        # Random weights ramble inside the schema; when the answer closes, it is one action of the schema.
        assert re.match(r'\s*\{\s*"type"', answer.text), answer
        if answer.finish_reason == "stop":
            assert parse_action(answer.text).action is not None, answer.text
    # The engine process adds the usage chunk llama-cpp-python leaves out of a stream: the prompt's tokens as
    # /tokenize counts them, one completion token per content chunk.
    prompt_tokens = {a.prompt_tokens for a in answers}
    assert len(prompt_tokens) == 1 and prompt_tokens.pop() > 10, answers
    assert all(1 <= a.completion_tokens <= 96 for a in answers), answers
    assert record.prefill_tok_s is not None and record.prefill_tok_s > 0, record
    assert record.peak_rss_mb is not None and record.peak_rss_mb > 0


def _record_prompts(run: Path) -> None:
    for path in run.glob("episodes/*/*/*/steps.jsonl"):
        records = [StepRecord.model_validate_json(line) for line in path.read_text().splitlines()]
        for r in records:
            r.prompt = [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": f"Step {r.step}: the screen lists [0] Wi-Fi, [1] Display"},
            ]
        path.write_text("".join(r.model_dump_json() + "\n" for r in records))


@pytest.mark.engine
def test_fidelity_on_gguf_builds_gives_a_finite_kl(prepared: BuildSet, tmp_path: Path) -> None:
    write_synthetic_run(
        tmp_path, SyntheticRun(builds=("tiny-bf16", "tiny-q4_k_m"), tasks=("wifi_on",), seeds=2)
    )
    _record_prompts(tmp_path)
    steps, _ = load_source_steps(tmp_path, StepsFrom.REFERENCE, "tiny-bf16")
    assert steps
    spans: dict[tuple[str, int], tuple[list[int], list[int]]] = {}
    for name in ("tiny-bf16", "tiny-q4_k_m"):
        with serve(prepared.get(name), tmp_path / "engines", serving=TEACHER_FORCING) as served:
            probe_build(tmp_path, name, served.endpoint, steps, spans, top_k=5)
    result = assemble(
        tmp_path, "tiny-bf16", ["tiny-bf16", "tiny-q4_k_m"], steps_from=StepsFrom.REFERENCE, skipped={},
        requests={}, speed={},
    )  # fmt: skip
    reference, quantized = result.builds
    assert reference.kl.value.mean == pytest.approx(0.0, abs=1e-9)
    assert quantized.kl.value.mean is not None and math.isfinite(quantized.kl.value.mean)
    assert quantized.kl.value.mean > 0.0  # 4-bit weights move the distribution
    assert json.loads((tmp_path / "fidelity.json").read_text())["builds"][1]["kl"]["value"]["mean"] > 0
