"""Regression over quantization levels: pairing, pooled counts, Holm and BH, verdicts, the plain sentence."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from agent_eval.records import BuildManifest, EpisodeRecord, Outcome
from agent_eval.scoring.regression import compare_builds
from agent_eval.scoring.scorecard import score_episodes
from agent_eval.scoring.stats import Verdict, mcnemar_p, stratified_effect

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
BITS = {"bf16": 16.0, "w8a8": 8.0, "w4a16": 4.0}


def episode(build: str, task: str, seed: int, success: bool, reached: bool = True) -> EpisodeRecord:
    outcome = Outcome.SUCCESS if success else (Outcome.NO_STOP if reached else Outcome.NAV_FAIL)
    manifest = BuildManifest(
        name=build, reference=build == "bf16", scheme=build, bits_per_weight=BITS[build], engine="scripted"
    )
    return EpisodeRecord(
        run_id="r",
        build=build,
        task_id=task,
        seed=seed,
        outcome=outcome,
        reached=reached,
        success=success,
        build_manifest=manifest,
        started_at=T0,
        finished_at=T0,
    )


def _grid() -> list[EpisodeRecord]:
    """3 tasks × 10 seeds. Everyone always reaches the goal. bf16 succeeds on seeds 0-8.
    w4a16 stops recognising completion: it fails seeds 4-8 on t0, 5-8 on t1, 6-8 on t2 (b = 12, c = 0).
    w8a8 swaps one pair each way on t0 and t1 (b = 1, c = 1)."""
    records = []
    for t, task in enumerate(("t0", "t1", "t2")):
        for seed in range(10):
            ref = seed < 9
            records.append(episode("bf16", task, seed, ref))
            records.append(episode("w4a16", task, seed, ref and seed < 4 + t))
            swapped = (task == "t0" and seed == 0) or (task == "t1" and seed == 9)
            records.append(episode("w8a8", task, seed, ref != swapped))
    return records


def test_pooled_counts_p_values_and_holm() -> None:
    reg = compare_builds(_grid(), "bf16", margin=0.10)
    assert [c.build for c in reg.builds] == ["w8a8", "w4a16"]
    w8, w4 = reg.builds
    assert (w4.success.pairs, w4.success.b, w4.success.c) == (30, 12, 0)
    assert (w8.success.b, w8.success.c) == (1, 1)
    assert (w4.navigation.b, w4.navigation.c) == (0, 0)
    assert w4.success.p == pytest.approx(stats.binomtest(12, 12, 0.5, alternative="greater").pvalue)
    assert w8.success.p == pytest.approx(0.75)
    primary = [w8.navigation.p, w8.success.p, w4.navigation.p, w4.success.p]
    expected = multipletests(primary, alpha=0.05, method="holm")[1]
    assert [
        w8.navigation.p_holm,
        w8.success.p_holm,
        w4.navigation.p_holm,
        w4.success.p_holm,
    ] == pytest.approx(expected.tolist())
    assert w4.success.flips == pytest.approx(12 / 30)
    assert w4.success.reference_rate == pytest.approx(0.9)
    assert w4.success.build_rate == pytest.approx(0.5)


def test_effect_is_the_mean_of_per_task_differences_with_a_t2_interval() -> None:
    w4 = compare_builds(_grid(), "bf16").builds[1].success
    assert w4.delta == pytest.approx((-0.5 - 0.4 - 0.3) / 3)
    # The verdict's interval is on these three tasks, seeds random: the within-task variance (5, 4 and 3 of
    # 10 pairs lost: sums of squares 2.5, 2.4, 2.1) pooled over 30 − 3 df, two-sided at 1 − 2·alpha = 90%.
    se = math.sqrt(7.0 / 27 * (3 / 10) / 9)
    half = stats.t.ppf(0.95, 27) * se
    assert w4.df == 27 and w4.confidence == pytest.approx(0.90)
    assert (w4.low, w4.high) == pytest.approx((w4.delta - half, w4.delta + half))
    assert w4.drop_upper == pytest.approx(-w4.low)
    # The generalisation to other tasks is its own interval, clustered by task with t(2): wider.
    assert w4.other_tasks_df == 2
    assert w4.other_tasks_low is not None and w4.other_tasks_high is not None
    assert w4.other_tasks_low < w4.low < w4.delta < w4.high < w4.other_tasks_high < 0
    # Three tasks: the sign-flip p is at least 1/8, and exactly that when all three got worse.
    assert w4.p_sign_flip == pytest.approx(1 / 8)


def test_verdicts_and_sentences() -> None:
    w8, w4 = compare_builds(_grid(), "bf16", margin=0.10).builds
    assert w4.success.verdict is Verdict.REGRESSION
    # 30 concordant pairs: the exact bound on the drop is 1 - 0.05^(1/30) = 0.095 < 0.10.
    assert w4.navigation.verdict is Verdict.NON_INFERIOR
    assert w4.navigation.drop_upper == pytest.approx(1 - 0.05 ** (1 / 30))
    # One pair lost and one won of 30, on these three tasks: the drop's 95% bound is 0.080 (the pooled
    # within-task spread, t(27)), below 0.10. Clustered by task with t(2) it was 0.17: that bound is about
    # other tasks, which the verdict is not.
    assert w8.success.verdict is Verdict.NON_INFERIOR
    assert w8.success.drop_upper == pytest.approx(stats.t.ppf(0.95, 27) * math.sqrt(1.8 / 27 * (3 / 10) / 9))
    assert w8.success.other_tasks_low is not None and -w8.success.other_tasks_low > 0.10
    low, high = w4.success.low, w4.success.high
    assert low is not None and high is not None
    assert w4.sentence == (
        "w4a16: reaching the goal in play non-inferior; completion recognition REGRESSION, −0.40 "
        + f"[{low:+.2f}, {high:+.2f}]".replace("-", "−")
    )
    # A stricter margin turns the same data into "cannot tell".
    strict_w8, strict = compare_builds(_grid(), "bf16", margin=0.05).builds
    assert strict.navigation.verdict is Verdict.INCONCLUSIVE
    assert strict_w8.success.verdict is Verdict.INCONCLUSIVE
    assert strict_w8.sentence.startswith(
        "w8a8: reaching the goal in play INCONCLUSIVE, 0.00 (a drop up to 0.10 not ruled out by 30 pairs"
    )
    assert "completion recognition INCONCLUSIVE, 0.00 [−0.08, +0.08]" in strict_w8.sentence
    assert "not ruled out by 30 pairs" in strict_w8.sentence


def test_drill_down_is_per_task_with_bh_over_all_rows() -> None:
    reg = compare_builds(_grid(), "bf16")
    rows = [row for c in reg.builds for row in c.per_task]
    assert len(rows) == 2 * 3 * 2  # builds × tasks × metrics
    t0 = next(r for r in reg.builds[1].per_task if r.task_id == "t0" and r.metric == "success")
    assert (t0.pairs, t0.b, t0.c, t0.delta) == (10, 5, 0, pytest.approx(-0.5))
    assert t0.p == pytest.approx(1 / 32)
    assert [r.p_bh for r in rows] == pytest.approx(
        multipletests([r.p for r in rows], alpha=0.05, method="fdr_bh")[1].tolist()
    )


def test_only_same_task_and_seed_pairs_are_compared() -> None:
    records = [*_grid(), episode("w4a16", "t0", 99, False), episode("w4a16", "t9", 0, False)]
    reg = compare_builds(records, "bf16")
    w4 = reg.builds[1]
    assert w4.unpaired == 2
    assert w4.success.pairs == 30
    card = score_episodes(records, run_id="r", reference="bf16")
    assert any("w4a16: 2 episodes have no reference episode" in n for n in card.notes)


def test_a_build_with_nothing_paired_is_inconclusive_and_says_why() -> None:
    records = [episode("bf16", "t0", s, True) for s in range(5)]
    records += [episode("w8a8", "t0", s, True) for s in range(5, 10)]
    (w8,) = compare_builds(records, "bf16").builds
    assert w8.success.pairs == 0 and w8.success.verdict is Verdict.INCONCLUSIVE
    assert (
        w8.sentence
        == "w8a8: reaching the goal in play not compared (no paired episodes); completion recognition not "
        "compared (no paired episodes)"
    )


def test_a_regression_verdict_never_sits_beside_an_interval_that_reaches_zero() -> None:
    """One inference per verdict: wherever the exact test rejects (even before Holm), the stratified interval
    shown beside it lies below zero; checked on random balanced grids of 2–14 tasks at three look levels."""
    rng = np.random.default_rng(0)
    rejected = 0
    for _ in range(1500):
        tasks, seeds = int(rng.integers(2, 15)), int(rng.choice([5, 10, 20]))
        lose, win = rng.random(tasks) * 0.5, rng.random(tasks) * 0.2
        u = rng.random((tasks, seeds))
        d = np.where(u < lose[:, None], -1, np.where(u < (lose + win)[:, None], 1, 0)).ravel()
        names = [f"t{t}" for t in range(tasks) for _ in range(seeds)]
        b, c = int((d == -1).sum()), int((d == 1).sum())
        for level in (0.05, 0.025, 0.0125):
            if mcnemar_p(b, c) < level:
                rejected += 1
                effect = stratified_effect(d.tolist(), names, level)
                assert effect.interval is None or effect.interval.high < 0, (b, c, tasks, seeds, level)
    assert rejected > 1000
