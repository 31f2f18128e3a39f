"""`tune ship`: the trained adapter as a tracked artifact — bf16 safetensors (≤ 8 MB) and manifest.json.

The manifest says what the adapter was made from (dataset hash and counts, tasks, base weights hash), how
(hyperparameters, loss curve, wall time) and with what (package versions); `builds prepare` checks the
adapter's hash against it before merging.
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from agent_eval.builds.preparing.adapter import (
    ADAPTER_FILE,
    MANIFEST_FILE,
    MAX_ADAPTER_BYTES,
    AdapterManifest,
)
from agent_eval.builds.serving.weights import sha256_file, weights_hash
from agent_eval.errors import ConfigError
from agent_eval.tune.dataset import DatasetSummary
from agent_eval.tune.train import LORA_TARGETS, TrainConfig, TrainState

PACKAGES = ("torch", "transformers", "peft", "safetensors")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def bf16_adapter(trained: Path, dest: Path) -> int:
    """Writes the adapter's tensors in bf16 with sorted keys (same input, same bytes); returns the size."""
    import torch
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(trained / ADAPTER_FILE))
    out = {k: v.to(torch.bfloat16).contiguous() for k, v in sorted(tensors.items())}
    dest.parent.mkdir(parents=True, exist_ok=True)
    save_file(out, str(dest), metadata={"format": "pt"})
    return dest.stat().st_size


def ship(
    *,
    train_dir: Path,
    dataset: DatasetSummary,
    held_out: list[str],
    base_dir: Path,
    cfg: TrainConfig,
    state: TrainState,
    dest: Path,
    prompt_format: str,
    collect: dict[str, Any] | None = None,
    generated: dict[str, Any] | None = None,
) -> AdapterManifest:
    """Copies the adapter in `train_dir` to `dest` with its manifest; refuses one over the size limit."""
    trained = train_dir / "adapter"
    if not (trained / ADAPTER_FILE).is_file():
        raise ConfigError(f"no trained adapter in {trained}: run `agent-eval tune train` first")
    size = bf16_adapter(trained, dest / ADAPTER_FILE)
    if size > MAX_ADAPTER_BYTES:
        (dest / ADAPTER_FILE).unlink()
        raise ConfigError(
            f"the adapter is {size / 2**20:.1f} MiB, over the 8 MiB limit: train with a lower rank"
        )
    extra: dict[str, Any] = {
        "dataset": dataset.model_dump(mode="json"),
        "collect_settings": collect or {},
        "tasks_used": dataset.tasks,
        "held_out_tasks": held_out,
        "hyperparameters": asdict(cfg),
        "steps": state.step,
        "loss_curve": state.losses,
        "train_tokens": state.tokens,
        "train_seconds": round(state.seconds, 1),
        "train_tokens_per_s": round(state.tokens / state.seconds, 1) if state.seconds else 0.0,
        "collect_seconds": round(dataset.collect_seconds, 1),
        "wall_seconds": round(state.seconds + dataset.collect_seconds, 1),
        "skipped_long_examples": state.skipped_long,
        "packages": package_versions(),
    }
    if generated is not None:  # the generated goals the data holds, and their held-out splits
        extra["generated_goals"] = generated
    manifest = AdapterManifest(
        adapter_sha256=sha256_file(dest / ADAPTER_FILE),
        adapter_bytes=size,
        rank=cfg.rank,
        alpha=cfg.alpha,
        target_modules=list(LORA_TARGETS),
        base_weights_hash=weights_hash(base_dir),
        prompt_format=prompt_format,
        **extra,
    )
    (dest / MANIFEST_FILE).write_text(
        json.dumps(manifest.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8"
    )
    return manifest
