"""A tiny end-to-end tune: a handful of demonstrations, two optimiser steps at rank 2, shipped, merged into
the base, and the merged checkpoint served by the real vLLM CPU engine (one server start)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _engines import prepared_default_builds

from agent_eval.builds import serve
from agent_eval.builds.preparing.adapter import merge_adapter, read_adapter
from agent_eval.builds.serving.weights import weights_hash
from agent_eval.chat.client import ChatClient
from agent_eval.tune.dataset import Example, read_dataset, write_dataset
from agent_eval.tune.ship import ship
from agent_eval.tune.train import TrainConfig, train

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def demonstrations() -> list[Example]:
    screens = [
        ("Settings", "0 Clock\n1 Settings"),
        ("Internet", "0 Navigate up (ImageButton)\n1 Wi-Fi switch=off"),
    ]
    examples = []
    for i, (name, lines) in enumerate(screens * 2):
        user = f"Goal: Turn Wi-Fi on.\nScreen {name}:\n{lines}"
        messages = [{"role": "system", "content": "Phone agent."}, {"role": "user", "content": user}]
        examples.append(
            Example(
                task_id="wifi_on",
                seed=i,
                episode=i,
                source="oracle",
                step=1,
                goal="Turn Wi-Fi on.",
                prompt_format="compact",
                messages=messages,
                prompt_hash=f"h{i}",
                answer='{"type": "tap", "element": 1}',
                action_type="tap",
            )
        )
    return examples


def test_a_tiny_tune_merges_and_serves(tmp_path: Path) -> None:
    builds, _ = prepared_default_builds()
    base_build = builds.get("bf16-base")
    base = base_build.resolved_path()
    assert base is not None
    base_hash = weights_hash(base)
    write_dataset(demonstrations(), tmp_path)
    examples, summary = read_dataset(tmp_path)
    cfg = TrainConfig(rank=2, alpha=4, epochs=1.0, max_batch=2, checkpoint_every=1, warmup_steps=1)
    state = train(examples, base, tmp_path / "train", cfg, progress=False)
    assert state.step == 2 and len(state.losses) == 2
    shipped = tmp_path / "adapter"
    manifest = ship(
        train_dir=tmp_path / "train",
        dataset=summary,
        held_out=[],
        base_dir=base,
        cfg=cfg,
        state=state,
        dest=shipped,
        prompt_format="compact",
    )
    assert read_adapter(shipped).adapter_sha256 == manifest.adapter_sha256
    merge_adapter(base, shipped, tmp_path / "merged")
    assert weights_hash(base) == base_hash  # the base is never touched
    # one short chat: bf16-base's AVX-512 requirement is about the main job's long prompts, not this
    tuned = base_build.model_copy(
        update={
            "name": "tiny-tune",
            "model_path": str(tmp_path / "merged"),
            "prepare": None,
            "requires_cpu_flags": [],
        }
    )
    with serve(tuned, tmp_path / "engine") as served, ChatClient(served.endpoint) as client:
        result = client.chat(examples[1].messages, seed=0)
    assert result.completion_tokens > 0 and result.text
