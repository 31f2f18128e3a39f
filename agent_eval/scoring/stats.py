"""The statistics behind every rate, interval and verdict (the protocol of docs/scorecard.md).

Typed wrappers over scipy/statsmodels, so the protocol's choices (method, sides, df) live in one place.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np
import statsmodels.api as sm
from scipy import stats as scipy_stats
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_confint, proportion_effectsize

ALPHA = 0.05
DEFAULT_MARGIN = 0.10
# Exact sign-flip enumeration costs 2^T; beyond this the cluster t-interval is the better tool anyway.
PERMUTATION_MAX_TASKS = 9


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval."""

    low: float
    high: float


def _check_counts(successes: int, trials: int) -> None:
    if trials < 0 or successes < 0 or successes > trials:
        raise ValueError(f"need 0 <= successes <= trials, got {successes}/{trials}")


def _proportion_interval(successes: int, trials: int, confidence: float, method: str) -> Interval | None:
    """statsmodels' two-sided interval of a proportion by `method`; None when there are no trials."""
    _check_counts(successes, trials)
    if trials == 0:
        return None
    low, high = proportion_confint(successes, trials, alpha=1 - confidence, method=method)
    return Interval(float(low), float(high))


def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> Interval | None:
    """Wilson score interval; None when there are no trials (a rate of nothing has no interval)."""
    return _proportion_interval(successes, trials, confidence, "wilson")


def clopper_pearson_interval(successes: int, trials: int, confidence: float = 0.95) -> Interval | None:
    """Exact (Clopper–Pearson) interval: coverage is guaranteed, so use it where a bound must hold."""
    return _proportion_interval(successes, trials, confidence, "beta")


def clopper_pearson_upper(successes: int, trials: int, confidence: float = 0.95) -> float:
    """One-sided exact upper bound of a proportion (the two-sided interval at 2·alpha)."""
    _check_counts(successes, trials)
    if trials == 0 or successes == trials:
        return 1.0
    return float(scipy_stats.beta.ppf(confidence, successes + 1, trials - successes))


def discordant(pairs: Sequence[tuple[bool, bool]]) -> tuple[int, int]:
    """(b, c) from paired (reference, build) outcomes: won only by the reference, won only by the build."""
    b = sum(1 for reference, build in pairs if reference and not build)
    c = sum(1 for reference, build in pairs if build and not reference)
    return b, c


def mcnemar_p(b: int, c: int) -> float:
    """Exact one-sided McNemar p that the build is worse than the reference.

    b = pairs where the reference succeeded and the build failed, c = the reverse. Concordant pairs carry no
    information about the difference, so with b + c = 0 there is no evidence at all (p = 1).
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    if b + c == 0:
        return 1.0
    return float(scipy_stats.binomtest(b, b + c, 0.5, alternative="greater").pvalue)


def mcnemar_p_two_sided(b: int, c: int) -> float:
    """Exact two-sided McNemar p (any difference between build and reference)."""
    if b + c == 0:
        return 1.0
    return float(scipy_stats.binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)


@dataclass(frozen=True)
class PairedEffect:
    """Δ = build − reference, averaged over tasks, with its task-clustered intervals."""

    delta: float
    interval: Interval | None
    """Two-sided interval at the requested confidence; None with no pairs or no variation to estimate."""
    drop_upper: float
    """One-sided upper confidence bound of the drop (reference − build): what non-inferiority is judged on."""
    tasks: int
    pairs: int
    df: int | None
    """Degrees of freedom of the t reference distribution (tasks − 1 when clustered)."""
    per_task: dict[str, float]
    """Δ of each task (build rate − reference rate on that task's pairs)."""


Array = np.ndarray[Any, Any]


def _by_task(
    differences: Sequence[int | float], task_ids: Sequence[str]
) -> tuple[Array, Array, Array, Array, dict[str, float], float] | None:
    """(differences, task names, each pair's task index, pairs per task, each task's mean Δ, Δ) of paired
    differences, Δ the mean over tasks of the task means; None when there are no pairs."""
    if len(differences) != len(task_ids):
        raise ValueError("one task id per paired difference")
    d = np.asarray(differences, dtype=float)
    if d.size == 0:
        return None
    names, codes = np.unique(np.asarray(task_ids), return_inverse=True)
    counts = np.bincount(codes)
    task_means = np.bincount(codes, weights=d) / counts
    per_task = {str(name): float(mean) for name, mean in zip(names, task_means, strict=True)}
    return d, names, codes, counts, per_task, float(task_means.mean())


def paired_effect(
    differences: Sequence[int | float], task_ids: Sequence[str], confidence: float = 0.95
) -> PairedEffect:
    """The effect of a build against the reference from paired episodes, clustered by task.

    `differences` holds build − reference per pair (−1, 0 or +1). Δ is the mean over tasks of each task's mean
    difference; when tasks have unequal numbers of pairs (adaptive top-up) the pairs are weighted 1/n_task,
    which makes the regression's estimate that mean and reduces to the protocol's plain OLS when cells are
    balanced. The interval is cluster-robust by task with t(tasks − 1) (use_t), since episodes of one task
    share its difficulty. With one task the pairs are independent draws, so an ordinary t-interval is used.
    When the estimated variance is zero (every pair alike, or every task's mean exactly equal) the interval
    would claim certainty; then the drop is bounded exactly instead, by the Clopper–Pearson upper bound of the
    share of pairs the build lost (the drop can never exceed that share).
    """
    by_task = _by_task(differences, task_ids)
    if by_task is None:
        return PairedEffect(0.0, None, 1.0, 0, 0, None, {})
    d, names, codes, counts, per_task, delta = by_task
    one_sided_alpha = 1 - confidence

    if np.all(d == d[0]):
        return _exact_drop_bound(delta, d, len(names), per_task, confidence)
    ones = np.ones_like(d)
    if len(names) == 1:
        fit = sm.OLS(d, ones).fit(use_t=True)
        df = int(d.size - 1)
    else:
        fit = sm.WLS(d, ones, weights=1.0 / counts[codes]).fit(
            cov_type="cluster", cov_kwds={"groups": codes}, use_t=True
        )
        df = len(names) - 1
    se = float(fit.bse[0])
    if not math.isfinite(se) or se <= 1e-12:
        return _exact_drop_bound(delta, d, len(names), per_task, confidence)
    # A difference of two rates lies in [-1, 1]; a t-interval with few tasks can overshoot that.
    low, high = (min(max(float(x), -1.0), 1.0) for x in fit.conf_int(alpha=1 - confidence)[0])
    one_sided_low = max(float(fit.conf_int(alpha=2 * one_sided_alpha)[0][0]), -1.0)
    return PairedEffect(delta, Interval(low, high), -one_sided_low, len(names), int(d.size), df, per_task)


def stratified_effect(
    differences: Sequence[int | float], task_ids: Sequence[str], level: float = ALPHA
) -> PairedEffect:
    """The effect on these tasks, with seeds drawn at random: what a verdict is about (docs/scorecard.md).

    Δ is the mean over tasks of each task's mean difference (as `paired_effect`'s). The tasks are fixed, so
    only the seeds vary: Var(Δ) = Σ_t s²/(T² n_t), with s² the within-task variance of the paired
    differences pooled over tasks (t with pairs − tasks df). The interval is two-sided at 1 − 2·level, so
    each of its ends is a one-sided bound at 1 − level: its lower end is the bound NON-INFERIOR reads
    (`drop_upper` = −low). When no task's differences vary (every pair of a task alike) the drop is bounded
    exactly, as `paired_effect` does.
    """
    if not 0 < level < 0.5:
        raise ValueError(f"a one-sided level is in (0, 0.5), got {level}")
    by_task = _by_task(differences, task_ids)
    if by_task is None:
        return PairedEffect(0.0, None, 1.0, 0, 0, None, {})
    d, names, codes, counts, per_task, delta = by_task
    task_means = np.asarray(list(per_task.values()))
    df = int(d.size - len(names))
    within = float(np.sum((d - task_means[codes]) ** 2))
    if df < 1 or within <= 1e-12:
        return _exact_drop_bound(delta, d, len(names), per_task, 1 - level)
    se = math.sqrt(within / df * float(np.sum(1.0 / counts)) / len(names) ** 2)
    half = float(scipy_stats.t.ppf(1 - level, df)) * se
    low, high = max(delta - half, -1.0), min(delta + half, 1.0)
    return PairedEffect(delta, Interval(low, high), -low, len(names), int(d.size), df, per_task)


def _exact_drop_bound(
    delta: float, d: np.ndarray[Any, Any], tasks: int, per_task: dict[str, float], confidence: float
) -> PairedEffect:
    lost = int(np.sum(d < 0))
    drop = max(-delta, clopper_pearson_upper(lost, int(d.size), confidence))
    # No interval: a zero-width one would claim a precision the data do not have.
    return PairedEffect(delta, None, drop, tasks, int(d.size), None, per_task)


def sign_flip_p(per_task_deltas: Sequence[float]) -> float | None:
    """Exact one-sided sign-flip permutation p that the build is worse, over per-task Δ.

    Under "no difference" each task's Δ is as likely negative as positive; the p is the share of the 2^T sign
    assignments whose mean is at most the observed one. Only computed for fewer than 10 tasks, where the
    cluster t-interval has too few clusters to trust.
    """
    t = len(per_task_deltas)
    if t == 0 or t > PERMUTATION_MAX_TASKS:
        return None
    values = np.asarray(per_task_deltas, dtype=float)
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=t)))
    means = (signs * values).mean(axis=1)
    observed = values.mean()
    return float(np.mean(means <= observed + 1e-12))


def holm(p_values: Sequence[float], alpha: float = ALPHA) -> list[float]:
    """Holm-adjusted p-values (family-wise error control over the primary hypotheses). `alpha` does not change
    adjusted p-values; callers compare them with it."""
    # Computed here rather than by statsmodels' multipletests, which gives the same values but runs a full
    # garbage collection on every call (0.17 s): fidelity-power calls this thousands of times.
    p, order = _sorted(p_values)
    m = len(p)
    return _in_input_order(order, np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p)))


def benjamini_hochberg(p_values: Sequence[float], alpha: float = ALPHA) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (false discovery rate, for exploratory drill-downs)."""
    p, order = _sorted(p_values)
    scaled = p * len(p) / np.arange(1, len(p) + 1)
    return _in_input_order(order, np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1]))


def _sorted(p_values: Sequence[float]) -> tuple[Any, Any]:
    """The p-values in ascending order, and the order that sorts them (ties keep their input order)."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    return p[order], order


def _in_input_order(order: Any, stepped: Any) -> list[float]:
    adjusted = np.empty(len(order))
    adjusted[order] = stepped
    return [float(x) for x in adjusted]


class Verdict(StrEnum):
    """What the data say about a build against the reference on one metric."""

    REGRESSION = "REGRESSION"
    NON_INFERIOR = "NON-INFERIOR"
    INCONCLUSIVE = "INCONCLUSIVE"


def verdict(
    p_adjusted: float, drop_upper: float, margin: float = DEFAULT_MARGIN, alpha: float = ALPHA
) -> Verdict:
    """REGRESSION if the (Holm-adjusted) p is below alpha; NON-INFERIOR if the drop's upper bound is below the
    margin; otherwise INCONCLUSIVE: with few episodes, "not significant" is not "no regression"."""
    if p_adjusted < alpha:
        return Verdict.REGRESSION
    if drop_upper < margin:
        return Verdict.NON_INFERIOR
    return Verdict.INCONCLUSIVE


def pass_hat_k(trials: int, successes: int, k: int) -> float:
    """pass^k of one task: the chance that k tries drawn without replacement all succeed."""
    _check_counts(successes, trials)
    if not 1 <= k <= trials:
        raise ValueError(f"k must be in 1..{trials}, got {k}")
    return math.comb(successes, k) / math.comb(trials, k)


def pass_at_k(trials: int, successes: int, k: int) -> float:
    """pass@k of one task: the chance that at least one of k tries succeeds."""
    _check_counts(successes, trials)
    if not 1 <= k <= trials:
        raise ValueError(f"k must be in 1..{trials}, got {k}")
    return 1.0 - math.comb(trials - successes, k) / math.comb(trials, k)


def mean_pass_hat_k(per_task: Sequence[tuple[int, int]], k: int) -> float:
    """pass^k averaged over tasks, each given as (trials, successes)."""
    if not per_task:
        raise ValueError("pass^k needs at least one task")
    return float(np.mean([pass_hat_k(n, c, k) for n, c in per_task]))


def mean_pass_at_k(per_task: Sequence[tuple[int, int]], k: int) -> float:
    """pass@k averaged over tasks, each given as (trials, successes)."""
    if not per_task:
        raise ValueError("pass@k needs at least one task")
    return float(np.mean([pass_at_k(n, c, k) for n, c in per_task]))


def episodes_needed(
    reference_rate: float, drop: float, alpha: float = ALPHA, power: float = 0.8
) -> int | None:
    """Episodes per build (pooled over tasks) to detect `drop` from `reference_rate` with `power`.

    The unpaired normal approximation (two-sided, Cohen's h): a planning figure a user can act on; pairing
    usually needs fewer. None when the drop cannot happen (rate minus drop below 0) or is not a drop.
    """
    target = reference_rate - drop
    if drop <= 0 or target < 0 or not 0 <= reference_rate <= 1:
        return None
    return _episodes_needed(reference_rate, target, alpha, power)


# The power solver is a root search (~10 ms); reports and simulations ask for the same rates again and again.
@functools.lru_cache(maxsize=4096)
def _episodes_needed(reference_rate: float, target: float, alpha: float, power: float) -> int:
    effect = proportion_effectsize(reference_rate, target)
    n = NormalIndPower().solve_power(effect_size=effect, alpha=alpha, power=power, alternative="two-sided")
    return math.ceil(float(n))


def clustered_mean(
    values: Sequence[float], clusters: Sequence[str], confidence: float = 0.95
) -> tuple[float | None, Interval | None]:
    """The mean of `values` with a cluster-robust t interval (t with clusters − 1 df), clipped to [0, 1].

    For per-step numbers of episodes: steps of one episode share its phone state and history. No interval
    with fewer than 2 clusters, or when the values do not vary (a zero-width interval would claim certainty).
    """
    if len(values) != len(clusters):
        raise ValueError("one cluster per value")
    if not values:
        return None, None
    v = np.asarray(values, dtype=float)
    mean = float(v.mean())
    _, codes = np.unique(np.asarray(clusters), return_inverse=True)
    groups = int(codes.max()) + 1
    if groups < 2 or np.all(v == v[0]):
        return mean, None
    fit = sm.OLS(v, np.ones_like(v)).fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
    if not math.isfinite(float(fit.bse[0])) or float(fit.bse[0]) <= 1e-12:
        return mean, None
    low, high = (min(max(float(x), 0.0), 1.0) for x in fit.conf_int(alpha=1 - confidence)[0])
    return mean, Interval(low, high)
