"""Time to flag: the wall time each verdict needs to flag a build, from the run's own timings.

The episodes need their pairs played; fidelity needs the reference's episodes and the build's probes.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from pathlib import Path

from agent_eval.fidelity.probe import StepProbe
from agent_eval.records import EpisodeRecord
from agent_eval.rundir import MANIFEST_FILE


def phones(run_dir: Path) -> int:
    """Episodes played at once (run.json's config.devices: a count or serials); 1 when it does not say."""
    try:
        config = json.loads((run_dir / MANIFEST_FILE).read_text(encoding="utf-8")).get("config") or {}
    except (OSError, ValueError, AttributeError):
        return 1
    devices = config.get("devices")
    count = len(devices) if isinstance(devices, list) else devices
    return count if isinstance(count, int) and count >= 1 else 1


def episode_wall_s(scored: Sequence[EpisodeRecord], build: str) -> float | None:
    """Mean seconds from start to end of the build's scored episodes; None without any."""
    walls = [(e.finished_at - e.started_at).total_seconds() for e in scored if e.build == build]
    return statistics.fmean(walls) if walls else None


def probe_s(probes: Sequence[StepProbe]) -> float | None:
    """Mean seconds one probed step took the build's engine (its prefill, and a decode when it had one)."""
    return statistics.fmean(p.prefill_s for p in probes) if probes else None


def time_to_flag(
    episodes_needed: float | None,
    fidelity_episodes_needed: float | None,
    fidelity_steps_needed: float | None,
    *,
    build_episode_s: float | None,
    reference_episode_s: float | None,
    step_probe_s: float | None,
    at_once: int,
) -> tuple[float | None, float | None]:
    """(episodes' wall seconds, fidelity's wall seconds) to flag the build; None where a side never flags.

    Episodes: the needed pairs, each a build episode and a reference episode, `at_once` in parallel.
    Fidelity: the reference episodes whose steps it probes (played anyway as the pairs' reference half),
    then the build's probes of those steps, one engine at a time. Engine starts are left out of both.
    """
    episodes = (
        episodes_needed * (build_episode_s + reference_episode_s) / at_once
        if episodes_needed is not None and build_episode_s is not None and reference_episode_s is not None
        else None
    )
    fidelity = (
        fidelity_episodes_needed * reference_episode_s / at_once + fidelity_steps_needed * step_probe_s
        if fidelity_episodes_needed is not None
        and fidelity_steps_needed is not None
        and reference_episode_s is not None
        and step_probe_s is not None
        else None
    )
    return episodes, fidelity
