"""Navigation and recognition apart, from records: what a probe outcome is taken to be, the stop decision's
rates, a build whose early stops were not probed, and the claim of the original report on known cases."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_eval.records import EpisodeKind, EpisodeRecord, Outcome, Said, classify, classify_probe
from agent_eval.scoring.decomposition import decompose, done_auroc, probe_reached

T0 = datetime(2026, 12, 1, tzinfo=UTC)
TASKS = ("t0", "t1")
SEEDS = range(20)


def _record(
    build: str, task: str, seed: int, timeline: list[bool], said: Said | None, kind: EpisodeKind = "episode"
) -> EpisodeRecord:
    steps = len(timeline) - 1 + (said is not None)
    outcome = classify_probe(timeline) if kind == "probe" else classify(timeline, said)
    return EpisodeRecord(
        run_id="r",
        kind=kind,
        build=build,
        task_id=task,
        seed=seed,
        outcome=outcome,
        reached=any(timeline),
        success=outcome is Outcome.SUCCESS,
        said=said,
        said_at_step=steps if said is not None else None,
        goal_timeline=timeline,
        steps=steps,
        started_at=T0,
        finished_at=T0,
    )


GOOD = [False, False, True]  # two steps to the goal, then done


def _run(
    early: set[int], lost: set[int], *, probe_early: bool = True
) -> tuple[list[EpisodeRecord], list[EpisodeRecord]]:
    """The reference gets there and stops on every seed; "quant" says done after one step on the `early` seeds
    (its probe gets there unless the seed is also `lost`), and on the `lost` seeds without an early stop it
    wanders to the end of its steps."""
    episodes, probes = [], []
    for task in TASKS:
        for seed in SEEDS:
            episodes.append(_record("ref", task, seed, GOOD, "done"))
            if seed in early:
                episodes.append(_record("quant", task, seed, [False, False], "done"))
                if probe_early:
                    reached = seed not in lost
                    timeline = GOOD if reached else [False] * 11
                    probes.append(_record("quant", task, seed, timeline, None, kind="probe"))
            elif seed in lost:
                episodes.append(_record("quant", task, seed, [False] * 11, None))
            else:
                episodes.append(_record("quant", task, seed, GOOD, "done"))
    return episodes, probes


def test_a_probe_not_played_is_its_episode_where_a_probe_would_replay_it() -> None:
    reached = _record("b", "t0", 0, GOOD, "done")
    wandered = _record("b", "t0", 1, [False] * 5, None)
    stopped = _record("b", "t0", 2, [False, False], "done")
    assert probe_reached(reached, None) is True and probe_reached(wandered, None) is False
    assert probe_reached(stopped, None) is None  # only its probe can say
    assert probe_reached(stopped, _record("b", "t0", 2, GOOD, None, kind="probe")) is True


def test_recognition_breaks_while_navigation_holds() -> None:
    early = set(range(0, 20, 2))
    episodes, probes = _run(early, lost=set())
    d = decompose(episodes, probes, ["ref", "quant"], "ref")
    quant = {s.build: s for s in d.builds}["quant"]
    assert quant.probe_navigation is not None and quant.probe_navigation.rate == 1.0
    assert (quant.probes, quant.imputed, quant.unknown) == (20, 20, 0)
    assert quant.false_done.count == 20 and quant.false_done.of == 40
    # Per step: 20 stops in the 2 × 40 steps decided away from the goal (every episode decides two there).
    assert quant.false_done_per_step == pytest.approx(20 / 80) and quant.away_steps == 80
    assert quant.stopped_early_reached is not None and quant.stopped_early_reached.rate == 1.0
    assert quant.sensitivity.rate == 1.0
    (c,) = d.comparisons
    assert c.probe_navigation.verdict.value == "NON-INFERIOR"
    assert c.false_done.verdict.value == "REGRESSION" and c.false_done.b == 20
    assert c.claim == "holds" and "holds" in c.sentence
    # Each verdict in the sentence carries Δ and the interval of its own inference (these tasks).
    fd = c.false_done
    assert fd.low is not None and fd.high is not None and fd.high < 0
    shown = f"Δ {fd.delta:+.2f} [{fd.low:+.2f}, {fd.high:+.2f}], {fd.pairs} pairs)".replace("-", "−")
    assert f"not stopping before the goal REGRESSION (0.50 vs 1.00, {shown}" in c.sentence


def test_navigation_breaks_and_the_claim_fails() -> None:
    lost = set(range(0, 20, 2))
    episodes, probes = _run(early=set(range(0, 20, 4)), lost=lost)
    d = decompose(episodes, probes, ["ref", "quant"], "ref")
    quant = {s.build: s for s in d.builds}["quant"]
    assert quant.probe_navigation is not None and quant.probe_navigation.count == 20
    assert quant.stopped_early_reached is not None and quant.stopped_early_reached.rate == 0.0
    (c,) = d.comparisons
    assert c.probe_navigation.verdict.value == "REGRESSION" and c.claim == "fails"


def test_a_build_whose_early_stops_were_not_probed_has_no_probe_navigation() -> None:
    episodes, probes = _run(set(range(0, 20, 2)), lost=set(), probe_early=False)
    # Another build's probes exist, so the run did play probes: this one's (a baseline's) were skipped.
    probes = [_record("ref", "t0", 0, GOOD, None, kind="probe")]
    d = decompose(episodes, probes, ["ref", "quant"], "ref")
    quant = {s.build: s for s in d.builds}["quant"]
    assert quant.probe_navigation is None and quant.unknown == 20
    (c,) = d.comparisons
    assert c.probe_navigation.pairs == 0 and c.probe_navigation.verdict.value == "INCONCLUSIVE"


def test_without_probes_the_decomposition_says_only_what_play_shows() -> None:
    episodes, _ = _run(set(range(0, 20, 2)), lost=set())
    d = decompose(episodes, [], ["ref", "quant"], "ref")
    assert not d.probes and all(s.probe_navigation is None for s in d.builds)
    (c,) = d.comparisons
    assert c.claim == "undecided" and c.false_done.verdict.value == "REGRESSION"


def test_the_auroc_of_p_done_as_a_goal_detector() -> None:
    assert done_auroc([(0.9, True), (0.8, True), (0.1, False), (0.85, False)]) == pytest.approx(0.75)
    assert done_auroc([(0.9, True)]) is None  # one kind of step: nothing to rank
