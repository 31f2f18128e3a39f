"""Means with intervals clustered by episode, and paired step-by-step differences against the reference.

Steps of one episode share a phone state and a history, so they are not independent: the variance is taken
over episode sums (the cluster-robust "sandwich" estimator) with a t distribution on (episodes − 1) degrees
of freedom, as statistics.md prescribes for per-step numbers.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

from pydantic import BaseModel, Field
from scipy import stats as scipy_stats

CONFIDENCE = 0.95


class ClusteredMean(BaseModel):
    mean: float | None = None
    low: float | None = None
    high: float | None = None
    steps: int = 0
    episodes: int = 0
    p_value: float | None = Field(None, description="Two-sided, H0: the mean is 0 (for differences).")


def clustered_mean(values: Sequence[tuple[str, float]], confidence: float = CONFIDENCE) -> ClusteredMean:
    """The mean of (episode, value) pairs with a cluster-robust t interval; no interval below 2 episodes."""
    n = len(values)
    if n == 0:
        return ClusteredMean()
    mean = sum(v for _, v in values) / n
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for episode, value in values:
        sums[episode] += value
        counts[episode] += 1
    g = len(sums)
    if g < 2:
        return ClusteredMean(mean=mean, steps=n, episodes=g)
    residual = sum((sums[e] - counts[e] * mean) ** 2 for e in sums)
    se = math.sqrt(g / (g - 1) * residual) / n
    t = float(scipy_stats.t.ppf(0.5 + confidence / 2, g - 1))
    p = (1.0 if mean == 0 else 0.0) if se == 0 else float(2 * scipy_stats.t.sf(abs(mean) / se, g - 1))
    return ClusteredMean(mean=mean, low=mean - t * se, high=mean + t * se, steps=n, episodes=g, p_value=p)


def paired_difference(
    build: dict[tuple[str, int], float], reference: dict[tuple[str, int], float]
) -> ClusteredMean:
    """build − reference over the steps both have, keyed (episode, step), clustered by episode."""
    shared = sorted(build.keys() & reference.keys())
    return clustered_mean([(key[0], build[key] - reference[key]) for key in shared])
