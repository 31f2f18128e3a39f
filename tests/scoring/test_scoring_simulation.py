"""Simulated grids through the real regression code: how often the verdicts are wrong, and how often right.

Reference against itself (independent sampling on the same seeds) must be called a REGRESSION in at most 5% of
400 grids; a true drop 0.9 → 0.6 must be flagged in most; a drop twice the margin must almost never pass as
NON-INFERIOR.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

import numpy as np
import pytest

from agent_eval.records import EpisodeRecord, Outcome
from agent_eval.scoring.regression import compare_builds
from agent_eval.scoring.stats import Verdict

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TASKS = 6
SEEDS = 10
GRIDS = 400
# Per-task chances: tasks differ in difficulty, as real ones do.
SUCCESS = np.array([0.95, 0.9, 0.85, 0.8, 0.7, 0.6])
REACHED = np.minimum(SUCCESS + 0.05, 1.0)


@pytest.fixture(autouse=True)
def _frozen_heap() -> Iterator[None]:
    # statsmodels' Holm calls gc.collect() every time; freezing the already-imported heap keeps each
    # collection to the few objects a grid makes (~80 ms -> ~1 ms), without changing any result.
    gc.freeze()
    yield
    gc.unfreeze()


def _episodes(build: str, reached: np.ndarray, success: np.ndarray) -> list[EpisodeRecord]:
    records = []
    for t in range(TASKS):
        for seed in range(SEEDS):
            r, s = bool(reached[t, seed]), bool(success[t, seed])
            outcome = Outcome.SUCCESS if s else (Outcome.NO_STOP if r else Outcome.NAV_FAIL)
            records.append(
                EpisodeRecord(
                    run_id="sim",
                    build=build,
                    task_id=f"t{t}",
                    seed=seed,
                    outcome=outcome,
                    reached=r,
                    success=s,
                    started_at=T0,
                    finished_at=T0,
                )
            )
    return records


def _sample(
    rng: np.random.Generator, build: str, reached_p: np.ndarray, success_p: np.ndarray
) -> list[EpisodeRecord]:
    """One build's grid: reached with reached_p, and success (which needs reached) with success_p overall."""
    u = rng.random((TASKS, SEEDS, 2))
    reached = u[..., 0] < reached_p[:, None]
    success = reached & (u[..., 1] < (success_p / reached_p)[:, None])
    return _episodes(build, reached, success)


def _verdicts(
    seed: int, grids: int, build_reached: np.ndarray, build_success: np.ndarray, reference_success: np.ndarray
) -> list[tuple[Verdict, Verdict]]:
    rng = np.random.default_rng(seed)
    reference_reached = np.minimum(reference_success + 0.05, 1.0)
    out = []
    for _ in range(grids):
        records = _sample(rng, "ref", reference_reached, reference_success)
        records += _sample(rng, "build", build_reached, build_success)
        (comparison,) = compare_builds(records, "ref", margin=0.10).builds
        out.append((comparison.navigation.verdict, comparison.success.verdict))
    return out


def _share(verdicts: Sequence[tuple[Verdict, Verdict]], hit: Verdict, metric: int | None = None) -> float:
    if metric is None:
        return sum(hit in pair for pair in verdicts) / len(verdicts)
    return sum(pair[metric] is hit for pair in verdicts) / len(verdicts)


@pytest.mark.slow
def test_reference_against_itself_is_rarely_called_a_regression() -> None:
    verdicts = _verdicts(11, GRIDS, REACHED, SUCCESS, SUCCESS)
    # Family-wise over both metrics: Holm keeps it under alpha.
    assert _share(verdicts, Verdict.REGRESSION) <= 0.05
    # ...and the rule is not trivially silent: with 60 pairs it often shows non-inferiority.
    assert _share(verdicts, Verdict.NON_INFERIOR, metric=1) > 0.2


@pytest.mark.slow
def test_a_true_drop_from_0_9_to_0_6_is_flagged_in_most_grids() -> None:
    reference = np.full(TASKS, 0.9)
    build_success = np.full(TASKS, 0.6)
    verdicts = _verdicts(12, GRIDS, np.minimum(reference + 0.05, 1.0), build_success, reference)
    assert _share(verdicts, Verdict.REGRESSION, metric=1) >= 0.9
    # Navigation did not change, so it is rarely flagged.
    assert _share(verdicts, Verdict.REGRESSION, metric=0) <= 0.05


def test_a_drop_twice_the_margin_almost_never_passes_as_non_inferior() -> None:
    build_success = SUCCESS - 0.2
    verdicts = _verdicts(13, GRIDS // 2, build_success + 0.05, build_success, SUCCESS)
    assert _share(verdicts, Verdict.NON_INFERIOR, metric=1) <= 0.05
    assert _share(verdicts, Verdict.NON_INFERIOR, metric=0) <= 0.05
