"""Engine busy: per build and phase, the share of wall time its engine was computing, and why it sat idle.

Read from the episodes' times and each step's model call (steps.jsonl); phases from run.json's seed levels.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from agent_eval.records import EngineRecord, EpisodeRecord, StepRecord, StrictModel
from agent_eval.rundir import MANIFEST_FILE

BIN_S = 0.05  # the timeline's resolution: well under a step's observe (~0.2 s) or model call (~0.5 s)
StepsOf = Callable[[EpisodeRecord], Sequence[StepRecord]]


class EngineBusy(StrictModel):
    """One build in one phase: how much of the wall time its engine computed, and the idle time by cause."""

    build: str = Field(description="The build whose engine served the phase's episodes.")
    phase: int = Field(description="1 = the first seed level; 2.. = each top-up level.")
    episodes: int = Field(
        description="Its scored episodes in the phase, navigation probes included (they ask the same engine)."
    )
    wall_s: float = Field(description="First episode's start to last episode's end, seconds.")
    model_s: float = Field(
        description="Sum of the episodes' model time (phones' calls overlap: can pass wall_s)."
    )
    model_time_share: float | None = Field(description="model_s / wall_s.")
    busy_share: float | None = Field(
        description="Share of wall_s with at least one model call in flight; null: no call times recorded."
    )
    idle_phone_reset_s: float | None = Field(
        description="Idle seconds while a phone reset for its next episode (start to first model call)."
    )
    idle_observe_s: float | None = Field(
        description="Idle seconds while phones acted, observed and checked the goal between calls."
    )
    idle_last_cells_s: float | None = Field(
        description="Idle seconds after the phase's last episode began: fewer phones than cells left to play."
    )
    idle_other_s: float | None = Field(
        description="Idle seconds with no episode running (the harness between cells)."
    )
    engine_start_s: float | None = Field(
        description="The engine's start time (engines/<build>.json), in the phase it first played; it stays "
        "resident after when memory allows."
    )
    engine_start_waited_s: float | None = Field(
        None,
        description="Seconds the grid waited for the engine before its first episode: its whole start (a "
        "little more than engine_start_s), or less when the grid started it early, in the previous build's "
        "last cells (docs/grid.md).",
    )
    probes: int = Field(0, description="Of the episodes, navigation probes (docs/scorecard.md).")


def seed_levels(run_dir: Path) -> tuple[int, list[int]]:
    """(first seed, seed counts per phase) from run.json's grid config; (0, []) when it has none."""
    try:
        manifest = json.loads((run_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
        config: dict[str, Any] = manifest.get("config") or {}
        grid: dict[str, Any] = config.get("grid") or {}
        seeds = int(config["seeds"])
        adaptive = grid.get("adaptive") or {}
        above = (
            [int(n) for n in adaptive.get("schedule", []) if int(n) > seeds]
            if adaptive.get("enabled")
            else []
        )
        return int(grid.get("first_seed", 0)), [seeds, *above]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return 0, []


def phase_of(seed: int, first_seed: int, levels: Sequence[int]) -> int:
    """The phase a seed was first played in: its position among the seed levels (the last beyond them)."""
    offset = seed - first_seed
    return next((i + 1 for i, level in enumerate(levels) if offset < level), max(len(levels), 1))


def _mark(line: np.ndarray[Any, Any], t0: float, start: float, end: float) -> None:
    line[max(int((start - t0) / BIN_S), 0) : max(int((end - t0) / BIN_S), 0)] += 1


def _timeline(episodes: Sequence[EpisodeRecord], steps_of: StepsOf) -> dict[str, float] | None:
    """Busy and idle seconds by cause over the episodes' span; None when no step recorded its call time."""
    t0 = min(e.started_at.timestamp() for e in episodes)
    t1 = max(e.finished_at.timestamp() for e in episodes)
    bins = max(int((t1 - t0) / BIN_S) + 1, 1)
    busy, resetting, running = (np.zeros(bins, dtype=int) for _ in range(3))
    timed = False
    for e in episodes:
        start, end = e.started_at.timestamp(), e.finished_at.timestamp()
        _mark(running, t0, start, end)
        calls = [
            (s.model_started_at, s.latency.model_s) for s in steps_of(e) if s.model_started_at is not None
        ]
        timed = timed or bool(calls)
        _mark(resetting, t0, start, min((c[0] for c in calls), default=start))
        for begun, took in calls:
            _mark(busy, t0, begun, begun + took)
    if not timed:
        return None
    idle = busy == 0
    last = int((max(e.started_at.timestamp() for e in episodes) - t0) / BIN_S)
    tail = np.arange(bins) >= last
    return {
        "busy": float(np.sum(~idle)) * BIN_S,
        "reset": float(np.sum(idle & ~tail & (resetting > 0))) * BIN_S,
        "observe": float(np.sum(idle & ~tail & (resetting == 0) & (running > 0))) * BIN_S,
        "last": float(np.sum(idle & tail)) * BIN_S,
        "other": float(np.sum(idle & ~tail & (running == 0))) * BIN_S,
    }


def _share(seconds: float, wall: float) -> float | None:
    return seconds / wall if wall > 0 else None


def _row(
    build: str,
    phase: int,
    episodes: Sequence[EpisodeRecord],
    steps_of: StepsOf,
    start: tuple[float | None, float | None],
) -> EngineBusy:
    wall = max(e.finished_at.timestamp() for e in episodes) - min(e.started_at.timestamp() for e in episodes)
    model = sum(e.latency.model_s for e in episodes)
    parts = _timeline(episodes, steps_of)
    return EngineBusy(
        build=build,
        phase=phase,
        episodes=len(episodes),
        wall_s=wall,
        model_s=model,
        model_time_share=_share(model, wall),
        busy_share=_share(parts["busy"], wall) if parts else None,
        idle_phone_reset_s=parts["reset"] if parts else None,
        idle_observe_s=parts["observe"] if parts else None,
        idle_last_cells_s=parts["last"] if parts else None,
        idle_other_s=parts["other"] if parts else None,
        engine_start_s=start[0],
        engine_start_waited_s=start[1],
        probes=sum(e.kind == "probe" for e in episodes),
    )


def engine_busy(
    episodes: Sequence[EpisodeRecord],
    steps_of: StepsOf,
    engines: Mapping[str, EngineRecord],
    first_seed: int,
    levels: Sequence[int],
) -> list[EngineBusy]:
    """One row per (build, phase) of the scored episodes and probes, builds in the order given, phases in
    order: a probe's model calls occupy its build's engine as an episode's do."""
    groups: dict[tuple[str, int], list[EpisodeRecord]] = {}
    for e in episodes:
        groups.setdefault((e.build, phase_of(e.seed, first_seed, levels)), []).append(e)
    order = list(dict.fromkeys(e.build for e in episodes))
    rows = []
    for build, phase in sorted(groups, key=lambda key: (order.index(key[0]), key[1])):
        first = min(p for b, p in groups if b == build)
        record = engines.get(build)
        start: tuple[float | None, float | None] = (None, None)
        if record is not None and phase == first:
            waited = record.start_waited_s if record.start_waited_s is not None else record.startup_s
            start = (record.startup_s, waited)
        rows.append(_row(build, phase, groups[(build, phase)], steps_of, start))
    return rows
