"""The recognition gap: paired, per build, and whether "navigation survives, recognition does not" holds."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_eval.records import EpisodeRecord, Outcome
from agent_eval.scoring.regression import compare_builds

T0 = datetime(2026, 12, 1, tzinfo=UTC)
TASKS = ("t0", "t1", "t2")


def _episode(build: str, task: str, seed: int, outcome: Outcome) -> EpisodeRecord:
    reached = outcome in (Outcome.SUCCESS, Outcome.UNDONE, Outcome.NO_STOP)
    return EpisodeRecord(
        run_id="r",
        build=build,
        task_id=task,
        seed=seed,
        outcome=outcome,
        reached=reached,
        success=outcome is Outcome.SUCCESS,
        started_at=T0,
        finished_at=T0,
    )


def _grid(build_outcome: dict[str, Outcome], seeds: int = 20) -> list[EpisodeRecord]:
    """The reference succeeds everywhere; `build_outcome` says what each build does on every 2nd seed of t0,
    every 3rd of t1 and every 4th of t2 (tasks differ, as real ones do)."""
    out = [_episode("ref", t, s, Outcome.SUCCESS) for t in TASKS for s in range(seeds)]
    for build, outcome in build_outcome.items():
        for every, t in enumerate(TASKS, start=2):
            for s in range(seeds):
                out.append(_episode(build, t, s, outcome if s % every == 0 else Outcome.SUCCESS))
    return out


def test_a_build_that_gets_there_and_undoes_it_supports_the_claim() -> None:
    regression = compare_builds(_grid({"undoes": Outcome.UNDONE}), "ref")
    (comparison,) = regression.builds
    gap = comparison.recognition
    assert gap is not None and gap.pairs == 60
    # Navigation is untouched (60 of 60 reached), recognition loses 10 + 7 + 5 of 60 episodes.
    assert comparison.navigation.verdict.value == "NON-INFERIOR"
    assert abs(gap.gap - (10 + 7 + 5) / 60) < 1e-9 and gap.low > 0 and gap.claim == "holds"
    assert (gap.undone, gap.reference_undone, gap.undone_where_reference_succeeded) == (22, 0, 22)
    assert "holds" in gap.sentence and "undone 22" in gap.sentence


def test_the_claim_fails_when_navigation_goes_too_or_recognition_keeps_up() -> None:
    regression = compare_builds(_grid({"lost": Outcome.NAV_FAIL, "same": Outcome.SUCCESS}), "ref")
    by_name = {c.build: c for c in regression.builds}
    lost, same = by_name["lost"].recognition, by_name["same"].recognition
    assert lost is not None and same is not None
    # Losing the way loses both scores alike: no gap, and navigation regresses, so the claim fails.
    assert lost.gap == 0.0 and by_name["lost"].navigation.verdict.value == "REGRESSION"
    assert lost.claim == "fails" and "navigation regresses too" in lost.sentence
    # 60 pairs alike: the gap's upper bound is under the margin.
    assert same.high < 0.10 and same.claim == "fails"


def test_few_pairs_leave_the_claim_undecided() -> None:
    (comparison,) = compare_builds(_grid({"few": Outcome.UNDONE}, seeds=2), "ref").builds
    gap = comparison.recognition
    assert gap is not None and gap.pairs == 6 and gap.gap == 0.5  # seed 0 of every task, of 2
    assert gap.claim == "undecided"
