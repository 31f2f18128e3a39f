"""The statistics against scipy/statsmodels and the statistics protocol's check values."""

from __future__ import annotations

import gc
import math

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from agent_eval.scoring.stats import (
    Verdict,
    benjamini_hochberg,
    clopper_pearson_interval,
    clopper_pearson_upper,
    discordant,
    episodes_needed,
    holm,
    mcnemar_p,
    mcnemar_p_two_sided,
    mean_pass_at_k,
    mean_pass_hat_k,
    paired_effect,
    pass_at_k,
    pass_hat_k,
    sign_flip_p,
    verdict,
    wilson_interval,
)


def test_five_of_five_matches_the_protocols_check_values() -> None:
    wilson = wilson_interval(5, 5)
    exact = clopper_pearson_interval(5, 5)
    assert wilson is not None and exact is not None
    assert (round(wilson.low, 2), round(wilson.high, 2)) == (0.57, 1.00)
    assert (round(exact.low, 2), round(exact.high, 2)) == (0.48, 1.00)


@pytest.mark.parametrize(("k", "n"), [(0, 5), (3, 7), (9, 10), (17, 30), (1, 1)])
def test_intervals_are_statsmodels_wilson_and_beta(k: int, n: int) -> None:
    wilson, exact = wilson_interval(k, n), clopper_pearson_interval(k, n)
    assert wilson is not None and exact is not None
    assert (wilson.low, wilson.high) == pytest.approx(proportion_confint(k, n, alpha=0.05, method="wilson"))
    assert (exact.low, exact.high) == pytest.approx(proportion_confint(k, n, alpha=0.05, method="beta"))
    # The exact interval is never the narrower one at the edges that matter for few repeats.
    if k in (0, n):
        assert exact.high - exact.low >= wilson.high - wilson.low


def test_no_trials_has_no_interval_and_bad_counts_are_refused() -> None:
    assert wilson_interval(0, 0) is None
    assert clopper_pearson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(6, 5)


def test_one_sided_exact_upper_bound_is_the_two_sided_beta_at_twice_alpha() -> None:
    for k, n in [(0, 30), (2, 20), (5, 9)]:
        assert clopper_pearson_upper(k, n) == pytest.approx(
            proportion_confint(k, n, alpha=0.10, method="beta")[1]
        )
    # 0 of n: the closed form 1 - alpha^(1/n).
    assert clopper_pearson_upper(0, 30) == pytest.approx(1 - 0.05 ** (1 / 30))


def test_mcnemar_check_value_b18_c3() -> None:
    assert mcnemar_p_two_sided(18, 3) == pytest.approx(0.00149, abs=5e-6)
    assert mcnemar_p_two_sided(18, 3) == pytest.approx(mcnemar([[40, 18], [3, 9]], exact=True).pvalue)
    # One-sided "the build is worse": half the two-sided value for this asymmetric table, scipy's binomtest.
    assert mcnemar_p(18, 3) == pytest.approx(stats.binomtest(18, 21, 0.5, alternative="greater").pvalue)
    assert mcnemar_p(18, 3) == pytest.approx(0.00149 / 2, abs=5e-6)
    # The other direction is no evidence of a regression at all.
    assert mcnemar_p(3, 18) > 0.99
    assert mcnemar_p(0, 0) == 1.0


def test_discordant_counts_from_paired_outcomes() -> None:
    pairs = [(True, False)] * 18 + [(False, True)] * 3 + [(True, True)] * 40 + [(False, False)] * 9
    assert discordant(pairs) == (18, 3)
    assert mcnemar_p(*discordant(pairs)) == pytest.approx(0.00149 / 2, abs=5e-6)


def _balanced_pairs(seed: int, tasks: int = 6, per_task: int = 5) -> tuple[list[int], list[str]]:
    rng = np.random.default_rng(seed)
    d = rng.choice([-1, 0, 0, 0, 1], size=tasks * per_task).tolist()
    return d, [f"task{i // per_task}" for i in range(tasks * per_task)]


def test_balanced_effect_is_the_protocols_cluster_robust_ols() -> None:
    d, task_ids = _balanced_pairs(1)
    effect = paired_effect(d, task_ids)
    groups = np.unique(task_ids, return_inverse=True)[1]
    fit = sm.OLS(np.asarray(d, float), np.ones(len(d))).fit(
        cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
    )
    assert effect.delta == pytest.approx(float(fit.params[0]))
    assert effect.interval is not None
    assert (effect.interval.low, effect.interval.high) == pytest.approx(tuple(fit.conf_int(alpha=0.05)[0]))
    assert effect.df == 5
    # One-sided 95% bound of the drop = minus the lower end of the two-sided 90% interval.
    assert effect.drop_upper == pytest.approx(-fit.conf_int(alpha=0.10)[0][0])
    half_width = (effect.interval.high - effect.interval.low) / 2
    assert half_width == pytest.approx(stats.t.ppf(0.975, 5) * fit.bse[0])


def test_unbalanced_effect_is_the_mean_over_tasks() -> None:
    # Task a was topped up to 10 pairs, task b kept 5: each task counts once.
    d = [-1] * 4 + [0] * 6 + [0] * 4 + [1]
    task_ids = ["a"] * 10 + ["b"] * 5
    effect = paired_effect(d, task_ids)
    assert effect.per_task == pytest.approx({"a": -0.4, "b": 0.2})
    assert effect.delta == pytest.approx((-0.4 + 0.2) / 2)
    assert effect.delta != pytest.approx(sum(d) / len(d))


def test_one_task_uses_an_ordinary_t_interval_over_its_pairs() -> None:
    d = [-1, 0, 0, 1, -1, -1, 0, 0]
    effect = paired_effect(d, ["only"] * len(d))
    mean, sem = np.mean(d), stats.sem(d)
    low, high = stats.t.interval(0.95, len(d) - 1, loc=mean, scale=sem)
    assert effect.interval is not None
    assert (effect.interval.low, effect.interval.high) == pytest.approx((low, high))
    assert effect.df == len(d) - 1
    assert effect.drop_upper == pytest.approx(-(mean - stats.t.ppf(0.95, len(d) - 1) * sem))


def test_no_variance_falls_back_to_an_exact_bound_instead_of_certainty() -> None:
    # 30 concordant pairs: the sandwich variance is 0, yet a drop of up to ~0.095 is still possible.
    effect = paired_effect([0] * 30, [f"t{i % 6}" for i in range(30)])
    assert effect.delta == 0.0
    assert effect.drop_upper == pytest.approx(1 - 0.05 ** (1 / 30))
    # Five pairs cannot show non-inferiority at δ = 0.10.
    assert paired_effect([0] * 5, ["t"] * 5).drop_upper > 0.4


def test_sign_flip_p_enumerates_all_sign_assignments() -> None:
    # Three tasks all worse: only the observed signs reach the observed mean, 1 of 8.
    assert sign_flip_p([-0.2, -0.4, -0.2]) == pytest.approx(1 / 8)
    # Equal and opposite, observed mean 0: three of the four assignments are at or below it.
    assert sign_flip_p([0.2, -0.2]) == pytest.approx(3 / 4)
    assert sign_flip_p([0.1] * 10) is None


def test_holm_and_bh_give_statsmodels_values(monkeypatch: pytest.MonkeyPatch) -> None:
    # statsmodels' multipletests runs gc.collect() on every call (0.15 s each: 76 s for this test on a slow
    # host); collecting changes none of its values, so the reference runs without it here.
    monkeypatch.setattr(gc, "collect", lambda *args: 0)
    p = [0.01, 0.04, 0.03, 0.20]
    assert holm(p) == pytest.approx(multipletests(p, alpha=0.05, method="holm")[1].tolist())
    assert holm(p) == pytest.approx([0.04, 0.09, 0.09, 0.20])
    assert benjamini_hochberg(p) == pytest.approx(multipletests(p, alpha=0.05, method="fdr_bh")[1].tolist())
    assert benjamini_hochberg(p) == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.20])
    assert holm([]) == []
    # Random sets with ties, ones and tiny values: the same adjusted values as statsmodels, in input order.
    rng = np.random.default_rng(0)
    for size in (1, 2, 3, 7, 30):
        for _ in range(50):
            q = rng.choice([1e-6, 0.001, 0.01, 0.02, 0.05, 0.3, 1.0], size=size).tolist()
            q = [x * rng.uniform(0.5, 1.0) if rng.random() < 0.5 else x for x in q]
            assert holm(q) == pytest.approx(multipletests(q, method="holm")[1].tolist())
            assert benjamini_hochberg(q) == pytest.approx(multipletests(q, method="fdr_bh")[1].tolist())


def test_verdicts() -> None:
    assert verdict(0.01, drop_upper=0.3) is Verdict.REGRESSION
    assert verdict(0.40, drop_upper=0.05) is Verdict.NON_INFERIOR
    assert verdict(0.40, drop_upper=0.15) is Verdict.INCONCLUSIVE
    assert verdict(0.40, drop_upper=0.15, margin=0.2) is Verdict.NON_INFERIOR
    assert str(Verdict.NON_INFERIOR) == "NON-INFERIOR"


def test_pass_k_check_values() -> None:
    assert pass_hat_k(10, 8, 5) == pytest.approx(0.2222, abs=1e-4)
    assert pass_at_k(10, 8, 5) == 1.0
    assert pass_hat_k(10, 8, 1) == pytest.approx(0.8)
    assert pass_at_k(10, 2, 3) == pytest.approx(1 - math.comb(8, 3) / math.comb(10, 3))
    assert mean_pass_hat_k([(10, 8), (10, 10)], 5) == pytest.approx((56 / 252 + 1) / 2)
    assert mean_pass_at_k([(5, 0), (5, 1)], 5) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        pass_hat_k(3, 3, 5)


def test_episodes_needed_for_0_9_to_0_7_is_about_59() -> None:
    n = episodes_needed(0.9, 0.2)
    assert n is not None and 59 <= n <= 60
    # A smaller drop needs more, a larger one fewer; an impossible drop has no answer.
    assert episodes_needed(0.9, 0.1) > n > episodes_needed(0.9, 0.4)  # type: ignore[operator]
    assert episodes_needed(0.05, 0.1) is None
    assert episodes_needed(0.9, 0.0) is None


def test_coverage_at_p_0_9_n_5_is_what_the_protocol_says() -> None:
    # Exact coverage: the chance, over the 6 possible outcomes, that the interval holds the true 0.9.
    def coverage(method: str) -> float:
        total = 0.0
        for k in range(6):
            interval = wilson_interval(k, 5) if method == "wilson" else clopper_pearson_interval(k, 5)
            assert interval is not None
            total += stats.binom.pmf(k, 5, 0.9) * (interval.low <= 0.9 <= interval.high)
        return total

    assert coverage("wilson") == pytest.approx(0.92, abs=0.005)
    assert coverage("beta") == pytest.approx(0.99, abs=0.005)
