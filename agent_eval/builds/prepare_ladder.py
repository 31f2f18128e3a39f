"""`builds prepare` for ladder rungs ('round', 'gptq', 'awq'): checks the grid fits, gathers the calibration
prompts.

The calibration set is the agent's own prompts: the recorded steps of a run dir, or a JSONL of chat messages
(the tuning demonstrations). Its hash joins the source hash, so new calibration data re-prepares the rung.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from agent_eval.builds.spec import Build, Recipe, repo_root
from agent_eval.errors import BuildError

LADDER_KINDS = ("round", "gptq", "awq")


def recipe_record(recipe: dict[str, Any] | None) -> dict[str, Any] | None:
    """A recipe as prepared.json records and compares it: fields at their default are left out, so a new
    optional recipe field (ladder's bits/calibration, tuning's adapter) does not make older builds stale."""
    if recipe is None:
        return None
    fields = Recipe.model_fields
    return {k: v for k, v in recipe.items() if k not in fields or v != fields[k].default}


def layer_widths(source_dir: Path) -> dict[str, int]:
    """Input widths of the Linear layers a grid groups along (Llama-style config.json)."""
    try:
        config = json.loads((source_dir / "config.json").read_text())
    except (OSError, ValueError) as e:
        raise BuildError(
            f"{source_dir}: cannot read config.json ({e}); prepare the source build first"
        ) from None
    heads = config.get("num_attention_heads", 0) * config.get("head_dim", 0)
    widths = {"hidden_size": config.get("hidden_size"), "intermediate_size": config.get("intermediate_size")}
    if heads:
        widths["attention heads × head_dim"] = heads
    return {k: int(v) for k, v in widths.items() if v}


def check_group_size(build: Build, source_dir: Path) -> None:
    group = build.prepare.group_size if build.prepare else None
    if group is None:
        return
    for what, width in layer_widths(source_dir).items():
        if width % group:
            raise BuildError(
                f"build {build.name!r}: prepare.group_size {group} does not divide the layer width {width} "
                f"({what}); pick a divisor of {width}, e.g. 32, 64 or 128"
            )


def _conversations_in(path: Path) -> list[list[dict[str, Any]]]:
    files = sorted(path.glob("episodes/**/steps.jsonl")) if path.is_dir() else [path]
    out: list[list[dict[str, Any]]] = []
    for file in files:
        for line in file.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            messages = record.get("prompt") or record.get("messages") if isinstance(record, dict) else record
            if isinstance(messages, list) and messages:
                out.append(messages)
    return out


def calibration_set(build: Build) -> tuple[list[list[dict[str, Any]]], str]:
    """The distinct prompts the rung is calibrated on (sorted, capped) and their sha256."""
    recipe = build.prepare
    assert recipe is not None
    where = Path(recipe.calibration or "")
    path = where if where.is_absolute() else repo_root() / where
    if not recipe.calibration or not path.exists():
        raise BuildError(
            f"build {build.name!r}: prepare.calibration {recipe.calibration!r} does not exist; record a run "
            "of the reference (its steps hold the prompts) or point it at the demonstrations JSONL"
        )
    try:
        found = _conversations_in(path)
    except (OSError, ValueError) as e:
        raise BuildError(f"build {build.name!r}: prepare.calibration {path}: unreadable ({e})") from None
    unique = sorted({json.dumps(c, sort_keys=True) for c in found})
    if not unique:
        raise BuildError(
            f"build {build.name!r}: prepare.calibration {recipe.calibration!r} holds no prompts "
            "(no episodes/**/steps.jsonl with a 'prompt', no JSONL line with 'messages')"
        )
    # Spread over the set, not its first N: the sorted order groups prompts of one task together.
    step = max(1, len(unique) // recipe.calibration_samples)
    chosen = unique[::step][: recipe.calibration_samples]
    digest = hashlib.sha256("\n".join(chosen).encode()).hexdigest()
    return [json.loads(c) for c in chosen], "sha256:" + digest


def ladder_job(
    build: Build, source_dir: Path, out_dir: Path, scratch: Path
) -> tuple[dict[str, Any], str | None]:
    """The quantization job for a ladder rung, and its calibration hash (None for round-to-nearest)."""
    recipe = build.prepare
    assert recipe is not None and recipe.kind in LADDER_KINDS
    check_group_size(build, source_dir)
    job: dict[str, Any] = {
        "kind": recipe.kind,
        "name": build.name,
        "source_dir": str(source_dir),
        "out_dir": str(out_dir),
        "bits": recipe.bits,
        "group_size": recipe.group_size,
        "symmetric": recipe.symmetric,
        "output": "rounded" if build.scheme == "bf16" else "compressed",
    }
    calibration = None
    if recipe.kind in ("gptq", "awq"):
        prompts, calibration = calibration_set(build)
        scratch.mkdir(parents=True, exist_ok=True)
        file = scratch / f".{build.name}-calibration.json"
        file.write_text(json.dumps(prompts))
        job["calibration_file"] = str(file)
    return job, calibration
