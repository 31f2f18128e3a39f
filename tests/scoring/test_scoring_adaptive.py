"""Adaptive repeats: the top-up schedule, curtailment checked against every continuation, the e-value."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import integrate

from agent_eval.scoring.adaptive import (
    CellState,
    curtailment,
    e_value,
    e_value_regression,
    next_seed_count,
    pairs_on_either_metric,
)
from agent_eval.scoring.stats import mcnemar_p

SAME = (True, True)
DIFFERENT = (True, False)


def test_phase_one_fills_the_first_step() -> None:
    assert next_seed_count([]) == 5
    assert next_seed_count([SAME] * 3) == 5


def test_only_discordant_cells_grow_5_10_20_30() -> None:
    assert next_seed_count([SAME] * 5) == 5
    assert next_seed_count([SAME] * 4 + [DIFFERENT]) == 10
    assert next_seed_count([SAME] * 9 + [DIFFERENT]) == 20
    assert next_seed_count([DIFFERENT] * 20) == 30
    assert next_seed_count([DIFFERENT] * 30) == 30
    # Direction does not matter: the build winning a pair tops up just the same.
    assert next_seed_count([(False, True)] + [SAME] * 4) == 10
    assert next_seed_count([SAME] * 3 + [DIFFERENT], schedule=(3, 6)) == 6


def test_either_metric_disagreeing_makes_a_pair_discordant() -> None:
    reference = [(True, True), (True, False), (False, False)]
    build = [(True, True), (True, True), (False, False)]
    pairs = pairs_on_either_metric(reference, build)
    assert [a != b for a, b in pairs] == [False, True, False]
    assert next_seed_count(pairs + [SAME] * 2) == 10
    with pytest.raises(ValueError):
        pairs_on_either_metric(reference, build[:2])


def _final_decisions(b: int, c: int, remaining: int, threshold: float) -> set[bool]:
    """Every way the remaining pairs can turn out (to b, to c, or concordant): rejected or not."""
    return {
        mcnemar_p(b + extra.count("b"), c + extra.count("c")) < threshold
        for extra in itertools.product("bcn", repeat=remaining)
    }


@pytest.mark.parametrize("remaining", [0, 1, 3, 5])
def test_curtailment_agrees_with_every_continuation(remaining: int) -> None:
    for b, c in itertools.product(range(8), range(4)):
        state = curtailment(b, c, remaining)
        outcomes = _final_decisions(b, c, remaining, 0.05)
        if state is CellState.REGRESSION_CERTAIN:
            assert outcomes == {True}, (b, c)
        elif state is CellState.REGRESSION_IMPOSSIBLE:
            assert outcomes == {False}, (b, c)
        else:
            assert outcomes == {True, False}, (b, c)


def test_curtailment_examples() -> None:
    # 5 planned pairs, one concordant already: even 4 of 4 lost cannot reach p < 0.05 (1/16).
    assert curtailment(0, 0, 4) is CellState.REGRESSION_IMPOSSIBLE
    assert curtailment(0, 0, 5) is CellState.OPEN
    assert curtailment(10, 0, 2) is CellState.REGRESSION_CERTAIN
    # With 4 hypotheses "certain" needs p < 0.0125 whatever comes: b=6, c=0 with 2 to go
    # is not enough (p could end at 0.145), b=12 is (0.0065).
    assert curtailment(6, 0, 2, hypotheses=4) is CellState.OPEN
    assert curtailment(12, 0, 2, hypotheses=4) is CellState.REGRESSION_CERTAIN


def test_e_value_is_the_uniform_mixture_likelihood_ratio() -> None:
    for b, c in [(0, 0), (3, 1), (18, 3), (2, 9)]:
        mixture, _ = integrate.quad(lambda t, b=b, c=c: t**b * (1 - t) ** c, 0, 1)
        assert e_value(b, c) == pytest.approx(mixture / 0.5 ** (b + c), rel=1e-9)
    assert e_value(0, 0) == 1.0
    # b=18, c=3: E ≈ 71.7, past 2/0.05 = 40 for the two metrics of one build.
    assert e_value(18, 3) == pytest.approx(71.67, abs=0.01)
    assert e_value_regression(18, 3, hypotheses=2)
    assert not e_value_regression(3, 18, hypotheses=2)
    assert not e_value_regression(18, 3, hypotheses=4)


def test_e_value_keeps_its_level_when_checked_after_every_pair() -> None:
    # Under "no difference", watching E after each of 60 discordant pairs crosses 1/alpha in at most alpha.
    rng = np.random.default_rng(7)
    crossed = 0
    runs = 2000
    for _ in range(runs):
        wins = rng.random(60) < 0.5
        b = np.cumsum(wins)
        c = np.arange(1, 61) - b
        crossed += any(e_value(int(x), int(y)) >= 20 for x, y in zip(b, c, strict=True))
    assert crossed / runs <= 0.05
