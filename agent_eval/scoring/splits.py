"""Rates per build for training and held-out tasks apart (a task's split is recorded in run.json).

Held-out tasks are never in the tuning data: their rates say how the tuned agent generalises, the training
tasks' rates how well it learned what it was shown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import Field

from agent_eval.records import EpisodeRecord, StrictModel
from agent_eval.scoring.build_score import (
    BuildName,
    InvalidActionRate,
    InvalidActions,
    Navigation,
    Rate,
    Success,
    rate,
)

SPLITS = ("train", "held_out")


class SplitScore(StrictModel):
    """One build's rates on the tasks of one split."""

    build: BuildName
    split: str = Field(description="train, or held_out (never in the tuning data).")
    tasks: int = Field(description="Tasks of this split with a scored episode.")
    success: Success
    navigation: Navigation
    invalid_actions: InvalidActions
    steps: int = Field(description="Steps played in this split's scored episodes.")
    invalid_action_rate: InvalidActionRate


def split_scores(scored: Sequence[EpisodeRecord], task_splits: Mapping[str, str]) -> list[SplitScore]:
    """Per (build, split) rates over scored episodes; tasks missing from `task_splits` count as train."""
    out = []
    for build in sorted({e.build for e in scored}):
        for split in SPLITS:
            eps = [e for e in scored if e.build == build and task_splits.get(e.task_id, "train") == split]
            if not eps:
                continue
            steps = sum(e.steps for e in eps)
            invalid = sum(e.invalid_actions for e in eps)
            out.append(
                SplitScore(
                    build=build,
                    split=split,
                    tasks=len({e.task_id for e in eps}),
                    success=rate(sum(e.success for e in eps), len(eps)),
                    navigation=rate(sum(e.reached for e in eps), len(eps)),
                    invalid_actions=invalid,
                    steps=steps,
                    invalid_action_rate=invalid / steps if steps else None,
                )
            )
    return out


def split_table(splits: Sequence[SplitScore]) -> list[str]:
    """Markdown lines: one row per (build, split), with Wilson 95% intervals."""
    if not {s.split for s in splits} - {"train"}:
        return []

    def show(r: Rate) -> str:
        if r.rate is None or r.low is None or r.high is None:
            return "–"
        return f"{r.rate:.2f} [{r.low:.2f}, {r.high:.2f}] ({r.count}/{r.of})"

    lines = [
        "## Training and held-out tasks",
        "",
        "| build | split | tasks | success | navigation | invalid / step |",
        "|---|---|---|---|---|---|",
    ]
    for s in splits:
        invalid = f"{s.invalid_action_rate:.3f}" if s.invalid_action_rate is not None else "–"
        lines.append(
            f"| {s.build} | {s.split} | {s.tasks} | {show(s.success)} | {show(s.navigation)} | {invalid} |"
        )
    return [*lines, ""]


def read_task_splits(run_dir: Path) -> dict[str, str]:
    """{task id: split} from run.json's task list (empty when the run has none recorded)."""
    from agent_eval.rundir.layout import MANIFEST_FILE

    try:
        manifest = json.loads((run_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    tasks = manifest.get("tasks") if isinstance(manifest, dict) else None
    return {
        str(t["id"]): str(t.get("split", "train")) for t in tasks or [] if isinstance(t, dict) and "id" in t
    }
