"""The sequential design of the top-up: every planned look of a grid spends an equal share of alpha.

`look_alpha` is the level a verdict is judged at; `verdicts_at_look` is its vectorised twin for simulations.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats as scipy_stats

from agent_eval.scoring.stats import ALPHA, DEFAULT_MARGIN

Array = np.ndarray[Any, Any]
# Verdict codes of the vectorised twin (the Verdict enum's three values).
INCONCLUSIVE, REGRESSION, NON_INFERIOR = 0, 1, 2


def look_alpha(alpha: float = ALPHA, looks: int = 1) -> float:
    """The error a verdict may spend at one look when a grid plans `looks` of them (Bonferroni over looks).

    A build is looked at after phase 1 and after each top-up level; it grows while undecided. Whatever that
    data-dependent stopping does, a false verdict at the end is a false verdict at one of the looks, and
    each look's fixed-n test errs with at most alpha/looks: the union stays within alpha, for REGRESSION
    and for NON-INFERIOR alike.
    """
    if looks < 1:
        raise ValueError(f"a grid looks at its verdicts at least once, got looks={looks}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha is a probability in (0, 1), got {alpha}")
    return alpha / looks


def _holm(p: Array) -> Array:
    """Holm-adjusted p along the last axis (each row one family)."""
    m = p.shape[-1]
    order = np.argsort(p, axis=-1)
    ranked = np.take_along_axis(p, order, axis=-1) * (m - np.arange(m))
    adjusted = np.minimum(np.maximum.accumulate(ranked, axis=-1), 1.0)
    out = np.empty_like(adjusted)
    np.put_along_axis(out, order, adjusted, axis=-1)
    return np.asarray(out)


def drop_upper(b: Array, c: Array, pairs_per_task: int, confidence: float) -> Array:
    """One-sided upper bound of the drop from per-task discordant counts (..., tasks), balanced cells.

    The same bound `stats.stratified_effect` gives: on these tasks with seeds random, the t bound with the
    within-task variance pooled over tasks (df = pairs − tasks), and the exact Clopper–Pearson bound on the
    share of pairs lost when no task's pairs vary.
    """
    tasks = b.shape[-1]
    if tasks < 1 or pairs_per_task < 1:
        raise ValueError("the vectorised bound needs at least one task and one pair per task")
    n = tasks * pairs_per_task
    means = (c - b) / pairs_per_task
    delta = means.mean(axis=-1)
    within = ((b + c) - pairs_per_task * means**2).sum(axis=-1)
    df = max(n - tasks, 1)
    se = np.sqrt(np.maximum(within, 0.0) / df / n)
    t_bound = np.minimum(-delta + scipy_stats.t.ppf(confidence, df) * se, 1.0)
    lost = b.sum(axis=-1)
    exact = np.where(lost == n, 1.0, scipy_stats.beta.ppf(confidence, lost + 1, np.maximum(n - lost, 1)))
    exact = np.maximum(-delta, exact)
    return np.where((within <= 1e-12) | (n - tasks < 1), exact, t_bound)


def verdicts_at_look(
    b: Array,
    c: Array,
    pairs_per_task: int,
    *,
    looks: int,
    margin: float = DEFAULT_MARGIN,
    alpha: float = ALPHA,
) -> Array:
    """Verdict codes at one look for counts shaped (grids, hypotheses, tasks): Holm over the hypotheses.

    b/c are per task the pairs the reference/the build alone got right. The rule is `stats.verdict` at
    `look_alpha(alpha, looks)`: REGRESSION when the Holm-adjusted exact McNemar p is below it, else
    NON-INFERIOR when the drop's upper bound at 1 − that level is below the margin.
    """
    level = look_alpha(alpha, looks)
    lost, won = b.sum(axis=-1), c.sum(axis=-1)
    p = np.where(lost + won == 0, 1.0, scipy_stats.binom.sf(lost - 1, lost + won, 0.5))
    regression = _holm(p) < level
    non_inferior = drop_upper(b, c, pairs_per_task, 1 - level) < margin
    return np.where(regression, REGRESSION, np.where(non_inferior, NON_INFERIOR, INCONCLUSIVE))
