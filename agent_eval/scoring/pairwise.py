"""Two builds of one run compared on the (task, seed) pairs both played: GPTQ against an importance-matrix
k-quant, a rung with and without its importance matrix, one engine's rung against another's.

Neither is the reference: the effect is second − first, its 95% interval on these tasks as the verdicts' are,
and the p-value exact two-sided McNemar on the pairs where the two differ (no margin, no verdict: a
description).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent_eval.errors import ConfigError, RunStoreError
from agent_eval.records import EpisodeRecord, StrictModel
from agent_eval.rundir import read_episodes, settle_attempts
from agent_eval.scoring.regression import METRICS, compare_builds
from agent_eval.scoring.stats import mcnemar_p_two_sided


class PairedMetric(StrictModel):
    """One metric of `second` against `first` on their common pairs."""

    metric: str
    pairs: int
    first_rate: float | None
    second_rate: float | None
    delta: float  # second − first, the mean over tasks of each task's mean difference
    low: (
        float | None
    )  # 95% interval of delta on these tasks, stratified (None when the pairs cannot give one)
    high: float | None
    wins: int  # pairs the second build got right and the first did not
    losses: int  # the reverse
    p_two_sided: float


def compare_pair(episodes: Sequence[EpisodeRecord], first: str, second: str) -> list[PairedMetric]:
    """`second` against `first` on navigation and completion recognition (scored episodes only)."""
    scored = [e for e in settle_attempts(episodes).scored.values() if e.build in (first, second)]
    played = {e.build for e in scored}
    for name in (first, second):
        if name not in played:
            known = ", ".join(sorted({e.build for e in episodes})) or "none"
            raise ConfigError(f"build {name!r} has no scored episode in this run; builds: {known}")
    if first == second:
        raise ConfigError("compare two different builds")
    # At alpha 0.025 the regression's interval is two-sided 95%: on these tasks, stratified by task.
    comparison = compare_builds(scored, reference=first, alpha=0.025).builds[0]
    rows = []
    for metric in METRICS:
        m = comparison.navigation if metric == "navigation" else comparison.success
        rows.append(
            PairedMetric(
                metric=metric,
                pairs=m.pairs,
                first_rate=m.reference_rate,
                second_rate=m.build_rate,
                delta=m.delta,
                low=m.low,
                high=m.high,
                wins=m.c,
                losses=m.b,
                p_two_sided=mcnemar_p_two_sided(m.b, m.c),
            )
        )
    return rows


def compare_in_run(run_dir: Path, first: str, second: str) -> list[PairedMetric]:
    episodes = read_episodes(run_dir)
    if not episodes:
        raise RunStoreError(f"{run_dir} has no finished episode yet: nothing to compare")
    return compare_pair(episodes, first, second)
