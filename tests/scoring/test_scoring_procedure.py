"""The whole verdict procedure, simulated small: probes, two looks and both Holm families keep their errors.

Each scenario plays 120 grids of six tasks (10 seeds, undecided builds grown to 20) through the scorecard's
own code (agent_eval/scoring/simulation.py); bench/bench_procedure.py runs the same at full scale and its
table is in docs/scorecard.md. The bounds allow the Monte Carlo error of 120 grids (about 0.02 at a rate
of 0.05).
"""

from __future__ import annotations

import pytest

from agent_eval.records import EpisodeRecord
from agent_eval.scoring.decomposition import decompose
from agent_eval.scoring.simulation import (
    REFERENCE,
    REFERENCE_ABILITIES,
    Scenario,
    Tally,
    _play,
    scenarios,
    simulate,
)

GRIDS = 120
SLACK = 0.04  # two standard errors of a 0.05 rate over 120 grids


@pytest.fixture(scope="module")
def tallies() -> dict[str, Tally]:
    return {s.name: simulate(s, GRIDS, seed=11 + i) for i, s in enumerate(scenarios())}


def test_equal_builds_are_rarely_called_a_regression_in_either_family(tallies: dict[str, Tally]) -> None:
    null = tallies["none: a equals the reference"]
    for family in ("end to end", "decomposition"):
        assert null.any_regression[family] / GRIDS <= 0.05 + SLACK, family
    assert null.claim_share("a", "holds") <= 0.05 + SLACK
    # Not silent: most equal builds are found NON-INFERIOR on probe navigation within two looks.
    assert null.share("a", "probe_navigation", "NON-INFERIOR") > 0.5


def test_a_navigation_drop_of_the_margin_is_rarely_non_inferior_and_never_reads_as_recognition(
    tallies: dict[str, Tally],
) -> None:
    drop = tallies["navigation drops by δ"]
    assert drop.share("a", "probe_navigation", "NON-INFERIOR") <= 0.05 + SLACK
    assert drop.share("a", "probe_navigation", "REGRESSION") > 0.15
    # Recognition did not change: the claim "navigation survives while recognition does not" seldom holds.
    assert drop.claim_share("a", "holds") <= 0.05 + SLACK
    for metric in ("sensitivity", "false_done"):
        assert drop.share("a", metric, "REGRESSION") <= 0.05 + SLACK, metric


def test_more_false_dones_are_recognition_not_navigation(tallies: dict[str, Tally]) -> None:
    """The confound the probe removes: ordinary play reports the early stops as lost navigation."""
    stops = tallies["false done rises by δ"]
    assert stops.share("a", "probe_navigation", "REGRESSION") <= 0.05 + SLACK
    assert stops.share("a", "false_done", "REGRESSION") > 0.3
    assert stops.claim_share("a", "holds") > 0.2
    assert stops.share("a", "navigation", "REGRESSION") > stops.share("a", "probe_navigation", "REGRESSION")
    assert stops.share("a", "false_done", "NON-INFERIOR") <= 0.05 + SLACK


def test_a_sensitivity_drop_is_found_as_sensitivity(tallies: dict[str, Tally]) -> None:
    drop = tallies["sensitivity drops by δ"]
    assert drop.share("a", "sensitivity", "NON-INFERIOR") <= 0.05 + SLACK
    assert drop.share("a", "probe_navigation", "REGRESSION") <= 0.05 + SLACK
    # The build equal to the reference keeps its rate beside it (Holm over both builds).
    assert max(drop.share("b", m, "REGRESSION") for m in ("probe_navigation", "sensitivity")) <= 0.05 + SLACK


def test_a_probe_continues_its_early_stop_so_probe_navigation_is_the_agents_navigation() -> None:
    """The simulated grid plays what the grid plays: probes only where an episode stopped early, and the
    decomposition's probe navigation is then the true navigation draw of every (task, seed)."""
    import numpy as np

    scenario = Scenario("check", REFERENCE_ABILITIES, {"a": REFERENCE_ABILITIES.shifted(false_done=0.3)})
    played = _play(scenario, np.random.default_rng(3), 10)
    episodes, probes = played["a"]
    early = {(e.task_id, e.seed) for e in episodes if e.said is not None and not e.reached}
    assert {(p.task_id, p.seed) for p in probes} == early and early
    scored: list[EpisodeRecord] = [e for eps, _ in played.values() for e in eps]
    card = decompose(scored, [p for _, ps in played.values() for p in ps], [REFERENCE, "a"], REFERENCE)
    row = next(b for b in card.builds if b.build == "a")
    assert row.probes == len(early) and row.unknown == 0 and row.imputed == len(episodes) - len(early)
    assert row.probe_navigation is not None and row.probe_navigation.of == len(episodes)
