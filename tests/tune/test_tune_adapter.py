"""The shipped adapter and merging it: hash checked against the manifest, corrupt or missing refused by name,
the base never touched, and the same merge twice gives the same weights hash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
import torch
from safetensors.torch import save_file

from agent_eval.builds import prepare, spec
from agent_eval.builds.preparing.adapter import (
    ADAPTER_FILE,
    MANIFEST_FILE,
    MAX_ADAPTER_BYTES,
    merge_adapter,
    read_adapter,
)
from agent_eval.builds.serving.weights import sha256_file, weights_hash
from agent_eval.builds.spec import (
    declare_prompt_extension,
    load_builds,
    parse_builds,
    repo_root,
    sends_the_prompts_of,
)
from agent_eval.errors import BuildError

SHIPPED = repo_root() / "adapters" / "smollm2-135m-agent"
LAYER = "model.layers.0.self_attn.q_proj"


def tiny_base(directory: Path) -> Path:
    directory.mkdir()
    g = torch.Generator().manual_seed(0)
    tensors = {
        f"{LAYER}.weight": torch.randn(8, 8, generator=g).to(torch.bfloat16),
        "model.norm.weight": torch.ones(8, dtype=torch.bfloat16),
    }
    save_file(tensors, str(directory / "model.safetensors"))
    (directory / "config.json").write_text('{"model_type": "llama"}')
    return directory


def tiny_adapter(directory: Path, rank: int = 2) -> Path:
    directory.mkdir()
    g = torch.Generator().manual_seed(1)
    lora = {
        f"base_model.model.{LAYER}.lora_A.weight": torch.randn(rank, 8, generator=g).to(torch.bfloat16),
        f"base_model.model.{LAYER}.lora_B.weight": torch.randn(8, rank, generator=g).to(torch.bfloat16),
    }
    save_file(lora, str(directory / ADAPTER_FILE))
    manifest = {
        "adapter_sha256": sha256_file(directory / ADAPTER_FILE),
        "adapter_bytes": (directory / ADAPTER_FILE).stat().st_size,
        "rank": rank,
        "alpha": 2 * rank,
        "target_modules": ["q_proj"],
        "base_weights_hash": "sha256:test",
        "prompt_format": "compact",
    }
    (directory / MANIFEST_FILE).write_text(json.dumps(manifest))
    return directory


def test_merging_twice_gives_the_same_weights_and_leaves_the_base_alone(tmp_path: Path) -> None:
    base = tiny_base(tmp_path / "base")
    adapter = tiny_adapter(tmp_path / "adapter")
    before = weights_hash(base)
    merge_adapter(base, adapter, tmp_path / "one")
    merge_adapter(base, adapter, tmp_path / "two")
    assert weights_hash(tmp_path / "one") == weights_hash(tmp_path / "two") != before
    assert weights_hash(base) == before
    assert (tmp_path / "one" / "config.json").read_text() == '{"model_type": "llama"}'


def test_a_corrupt_adapter_is_refused_by_name(tmp_path: Path) -> None:
    base = tiny_base(tmp_path / "base")
    adapter = tiny_adapter(tmp_path / "adapter")
    data = bytearray((adapter / ADAPTER_FILE).read_bytes())
    data[-1] ^= 0xFF
    (adapter / ADAPTER_FILE).write_bytes(bytes(data))
    with pytest.raises(BuildError, match=r"adapter .*adapter_model.safetensors is corrupt"):
        merge_adapter(base, adapter, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_missing_adapter_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match=r"adapter .*nowhere is missing"):
        read_adapter(tmp_path / "nowhere")


def test_the_shipped_adapter_matches_its_manifest() -> None:
    manifest = read_adapter(SHIPPED)
    size = (SHIPPED / ADAPTER_FILE).stat().st_size
    assert size == manifest.adapter_bytes <= MAX_ADAPTER_BYTES
    extra = manifest.model_dump()
    assert extra["prompt_format"] == "compact-noted"
    # Every tuned build in the shipped build files is played with the prompts the adapter was tuned on.
    for file in ("default.yaml", "ladder.yaml"):
        for build in load_builds(repo_root() / "builds" / file).builds:
            if build.agent is not None:
                assert sends_the_prompts_of(build.agent, extra["prompt_format"]), (file, build.name)
    assert not set(extra["held_out_tasks"]) & set(extra["tasks_used"])


def _base_and_tuned(base: Path, adapter: Path, agent: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Build entries: the base (the reference) and `tuned`, the adapter merged into it, played by `agent`."""
    plain = {"name": "base", "reference": True, "scheme": "bf16", "engine": "vllm-cpu"}
    plain["model_path"] = str(base)
    tuned = {
        "name": "tuned",
        "scheme": "bf16",
        "engine": "vllm-cpu",
        "model_path": "tuned",
        "prepare": {"kind": "merge-adapter", "source": "base", "adapter": str(adapter)},
        **({"agent": agent} if agent else {}),
    }
    return plain, tuned


@pytest.mark.parametrize("agent", [None, "compact"])
def test_a_build_whose_agent_is_not_the_one_its_adapter_was_tuned_for_is_refused(
    agent: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An adapter tuned on compact-noted's prompts, served with another agent's, would be sent prompts it has
    # never seen: prepare says which agent to set, and writes nothing.
    monkeypatch.setenv("AGENT_EVAL_MODELS", str(tmp_path / "models"))
    (tmp_path / "models").mkdir()
    base = tiny_base(tmp_path / "models" / "base")
    adapter = tiny_adapter(tmp_path / "adapter")
    manifest = json.loads((adapter / MANIFEST_FILE).read_text())
    (adapter / MANIFEST_FILE).write_text(json.dumps({**manifest, "prompt_format": "compact-noted"}))
    plain, tuned = _base_and_tuned(base, adapter, agent)
    builds = parse_builds({"builds": [plain, tuned]}, "test")
    said = "agent is 'compact'" if agent else r"names no agent \(the default\)"
    refused = (
        rf"build 'tuned': its adapter .* agent 'compact-noted', and the build {said}; set `agent: compact-"
    )
    with pytest.raises(BuildError, match=refused):
        prepare(builds, say=lambda _: None)
    assert not (tmp_path / "models" / "tuned").exists()
    (adapter / MANIFEST_FILE).write_text(json.dumps(manifest))  # tuned on compact's prompts: it merges
    ready = prepare(
        parse_builds({"builds": [plain, {**tuned, "agent": "compact"}]}, "test"), say=lambda _: None
    )
    assert "tuned" in ready and (tmp_path / "models" / "tuned" / "model.safetensors").is_file()


def test_an_agent_that_extends_the_adapter_s_prompts_may_play_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # compact-noted sends compact's prompts byte for byte plus a `Noted:` line after an app switch: a model
    # tuned on compact's prompts may be served with it; the other way round it may not (above).
    import agent_eval.agent.agents  # noqa: F401  (registers the shipped agents and what they extend)

    assert sends_the_prompts_of("compact-noted", "compact")
    assert not sends_the_prompts_of("compact", "compact-noted")
    assert not sends_the_prompts_of("default", "compact")
    monkeypatch.setenv("AGENT_EVAL_MODELS", str(tmp_path / "models"))
    (tmp_path / "models").mkdir()
    base = tiny_base(tmp_path / "models" / "base")
    adapter = tiny_adapter(tmp_path / "adapter")  # its manifest says compact
    assert json.loads((adapter / MANIFEST_FILE).read_text())["prompt_format"] == "compact"
    plain, tuned = _base_and_tuned(base, adapter, "compact-noted")
    ready = prepare(parse_builds({"builds": [plain, tuned]}, "test"), say=lambda _: None)
    assert "tuned" in ready and (tmp_path / "models" / "tuned" / "model.safetensors").is_file()


def test_an_extension_cycle_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spec, "_EXTENDS", {})
    declare_prompt_extension("loop-a", "loop-b")
    declare_prompt_extension("loop-b", "loop-a")
    assert sends_the_prompts_of("loop-a", "loop-b") and not sends_the_prompts_of("loop-a", "compact")


@pytest.mark.slow
@pytest.mark.parametrize("base_dtype", ["bfloat16", "float32"])
def test_the_base_is_loaded_in_the_dtype_asked_and_the_adapter_trains_in_float32(
    base_dtype: Literal["bfloat16", "float32"],
) -> None:
    from _engines import prepared_default_builds

    from agent_eval.tune.train import TrainConfig, load_base

    builds, _ = prepared_default_builds()
    base = builds.get("bf16-base").resolved_path()
    assert base is not None
    model, _ = load_base(base, TrainConfig(base_dtype=base_dtype, bf16_autocast=base_dtype == "bfloat16"))
    frozen = {p.dtype for p in model.parameters() if not p.requires_grad}
    trained = {p.dtype for p in model.parameters() if p.requires_grad}
    assert frozen == {getattr(torch, base_dtype)} and trained == {torch.float32}
