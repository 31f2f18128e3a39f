"""Adaptive repeats as pure rules: how many seeds a cell needs next, when it may stop, the anytime e-value.

The grid calls these between phases; they read only paired outcomes, never the run store or a device.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import StrEnum

from scipy import special

from agent_eval.scoring.stats import ALPHA, mcnemar_p

DEFAULT_SCHEDULE: tuple[int, ...] = (5, 10, 20, 30)


def _discordant(pairs: Sequence[tuple[bool, bool]]) -> int:
    return sum(1 for reference, build in pairs if reference != build)


def next_seed_count(
    pairs_so_far: Sequence[tuple[bool, bool]], schedule: Sequence[int] = DEFAULT_SCHEDULE
) -> int:
    """The number of paired seeds a (build, task) cell should have once the next phase is done.

    `pairs_so_far` holds (reference, build) outcomes of the cell's finished pairs, on one metric or on
    "either metric differs" (see `pairs_on_either_metric`). Phase 1 fills the first schedule step; after
    that a cell grows to the next step only if it has at least one discordant pair. The rule looks at
    whether pairs disagree, never at which way, so the exact McNemar test keeps its size. Returns the
    current count when the cell is done (no discordance, or at the cap).
    """
    steps = sorted(set(schedule))
    if not steps or steps[0] < 1:
        raise ValueError(f"a seed schedule needs positive steps, got {list(schedule)}")
    done = len(pairs_so_far)
    if done < steps[0]:
        return steps[0]
    if _discordant(pairs_so_far) == 0:
        return done
    return next((step for step in steps if step > done), done)


def pairs_on_either_metric(
    reference: Sequence[tuple[bool, bool]], build: Sequence[tuple[bool, bool]]
) -> list[tuple[bool, bool]]:
    """Pairs for `next_seed_count` that count as discordant when navigation or success differ.

    Each input holds (reached, success) per seed, in the same seed order for both builds.
    """
    if len(reference) != len(build):
        raise ValueError("reference and build need the same seeds, in the same order")
    return [(True, r == b) for r, b in zip(reference, build, strict=True)]


class CellState(StrEnum):
    """Whether the remaining pairs of a cell (or a build's pool) can still change its REGRESSION decision."""

    OPEN = "open"
    REGRESSION_CERTAIN = "regression-certain"
    REGRESSION_IMPOSSIBLE = "regression-impossible"


def curtailment(b: int, c: int, remaining: int, alpha: float = ALPHA, hypotheses: int = 1) -> CellState:
    """Whether running the `remaining` planned pairs could still change the exact McNemar decision.

    b, c are the discordant counts so far (reference won, build won). Each remaining pair adds to b, to c,
    or to neither, and the one-sided p only falls as b grows and rises as c grows, so the extremes decide:
    if even every remaining pair going the build's way keeps p below alpha/hypotheses (Bonferroni, which
    implies a Holm rejection) the regression is certain; if even every one going the reference's way
    cannot bring p below alpha (Holm's most lenient threshold) it is impossible. Either way the cell may
    stop. This decides only the REGRESSION test: a NON-INFERIOR bound still gains from every pair.
    """
    if remaining < 0:
        raise ValueError(f"remaining pairs must be >= 0, got {remaining}")
    if hypotheses < 1:
        raise ValueError(f"hypotheses must be >= 1, got {hypotheses}")
    if mcnemar_p(b, c + remaining) < alpha / hypotheses:
        return CellState.REGRESSION_CERTAIN
    if mcnemar_p(b + remaining, c) >= alpha:
        return CellState.REGRESSION_IMPOSSIBLE
    return CellState.OPEN


def e_value(b: int, c: int) -> float:
    """Anytime-valid evidence against "build and reference are equally good" from the discordant pairs.

    E = 2^(b+c) · B(b+1, c+1): the likelihood ratio of a uniform mixture over the chance that a
    discordant pair goes the reference's way, against a fair coin. Pair by pair it is a martingale with
    mean 1 under the null, so E >= hypotheses/alpha is valid however often it is checked (Ville).
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    return math.exp((b + c) * math.log(2.0) + float(special.betaln(b + 1, c + 1)))


def e_value_regression(b: int, c: int, alpha: float = ALPHA, hypotheses: int = 1) -> bool:
    """Anytime-valid REGRESSION call: enough evidence, and the build lost more pairs than it won."""
    return b > c and e_value(b, c) >= hypotheses / alpha
