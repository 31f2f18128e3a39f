"""The shipped adapter and merging it: hash checked against the manifest, corrupt or missing refused by name,
the base never touched, and the same merge twice gives the same weights hash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from agent_eval.builds import prepare
from agent_eval.builds.adapter import (
    ADAPTER_FILE,
    MANIFEST_FILE,
    MAX_ADAPTER_BYTES,
    merge_adapter,
    read_adapter,
    sha256_file,
)
from agent_eval.builds.prepare import weights_hash
from agent_eval.builds.spec import parse_builds, repo_root
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
    assert extra["prompt_format"] == "compact"
    assert not set(extra["held_out_tasks"]) & set(extra["tasks_used"])


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
    tuned = {
        "name": "tuned",
        "scheme": "bf16",
        "engine": "vllm-cpu",
        "model_path": "tuned",
        "prepare": {"kind": "merge-adapter", "source": "base", "adapter": str(adapter)},
        **({"agent": agent} if agent else {}),
    }
    plain = {
        "name": "base",
        "reference": True,
        "scheme": "bf16",
        "engine": "vllm-cpu",
        "model_path": str(base),
    }
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
