"""The regression verdict: each build against the reference on paired episodes, navigation and success.

Builds are ordered by bits per weight; p-values are Holm-adjusted over builds × metrics, drill-downs use BH.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Literal

from pydantic import Field

from agent_eval.records import EpisodeRecord, StrictModel
from agent_eval.scoring.adaptive import e_value
from agent_eval.scoring.recognition import RecognitionGap, recognition_gap
from agent_eval.scoring.sequential import look_alpha
from agent_eval.scoring.stats import (
    ALPHA,
    DEFAULT_MARGIN,
    Verdict,
    benjamini_hochberg,
    discordant,
    episodes_needed,
    holm,
    mcnemar_p,
    paired_effect,
    sign_flip_p,
    stratified_effect,
    verdict,
)

Metric = Literal["navigation", "success", "probe_navigation", "sensitivity", "false_done"]
METRICS: tuple[Metric, ...] = ("navigation", "success")
# "navigation" is reaching the goal in ordinary play, where a premature done also counts against it: the
# ability is "probe_navigation" (scoring/decomposition.py). Sentences use the user's words for each.
METRIC_WORDS: dict[str, str] = {
    "navigation": "reaching the goal in play",
    "success": "completion recognition",
    "probe_navigation": "navigation (stopping taken away)",
    "sensitivity": "stopping once there",
    "false_done": "not stopping before the goal",
}
PairKey = tuple[str, int]


def _scored(episode: EpisodeRecord, metric: Metric) -> bool:
    return episode.reached if metric == "navigation" else episode.success


class MetricComparison(StrictModel):
    """One build against the reference on one metric, pooled over the tasks' paired episodes."""

    metric: Metric = Field(
        description="navigation (reached in ordinary play) or success (completion recognised); in the "
        "decomposition probe_navigation, sensitivity or false_done (docs/scorecard.md)."
    )
    pairs: int = Field(description="Paired episodes: same task and seed run by both builds.")
    b: int = Field(description="Pairs the reference got right and the build got wrong.")
    c: int = Field(description="Pairs the build got right and the reference got wrong.")
    reference_rate: float | None = Field(description="The reference's rate on the paired episodes.")
    build_rate: float | None = Field(description="The build's rate on the paired episodes.")
    delta: float = Field(description="Δ = build − reference, the mean over tasks of each task's difference.")
    low: float | None = Field(
        description="Lower end of Δ's interval on these tasks, seeds drawn at random (stratified by task, "
        "t with pairs − tasks df), two-sided at `confidence`: the inference the verdict is about. Null when "
        "no task's pairs vary (drop_upper is then an exact Clopper–Pearson bound)."
    )
    high: float | None = Field(description="Upper end of that interval.")
    confidence: float = Field(
        0.90,
        description="Two-sided confidence of low/high: 1 − 2·alpha/looks, so each end is the one-sided "
        "bound the verdict reads (NON-INFERIOR exactly when low > −margin).",
    )
    drop_upper: float = Field(
        description="One-sided upper bound of the drop (reference − build) at 1 − alpha / looks, on these "
        "tasks: −low, or the exact bound."
    )
    df: int | None = Field(description="Degrees of freedom of the interval; null when it is an exact bound.")
    other_tasks_low: float | None = Field(
        None,
        description="Generalisation, a different question: the lower end of Δ's 95% interval for other "
        "tasks like these (clustered by task, t with tasks − 1 df). No verdict reads it.",
    )
    other_tasks_high: float | None = Field(None, description="Upper end of that interval.")
    other_tasks_df: int | None = Field(None, description="Its degrees of freedom (tasks − 1).")
    p: float = Field(description="Exact one-sided McNemar p that the build is worse.")
    p_holm: float = Field(description="p adjusted by Holm over all builds × {navigation, success}.")
    p_sign_flip: float | None = Field(
        description="Sign-flip permutation p over per-task Δ (fewer than 10 tasks): like "
        "other_tasks_low/high, about tasks like these, not a verdict's test."
    )
    e_value: float = Field(
        description="Anytime-valid e-value 2^(b+c)·B(b+1, c+1) (evidence of any difference)."
    )
    flips: float | None = Field(description="Share of pairs whose outcome differs, (b + c) / pairs.")
    verdict: Verdict = Field(
        description="REGRESSION (p_holm < alpha), NON-INFERIOR (drop_upper < margin), or not."
    )
    episodes_needed: int | None = Field(
        description="Episodes per build to detect a drop of `margin` from the reference rate with 80% power."
    )


class TaskComparison(StrictModel):
    """The exploratory drill-down: one build against the reference on one task and metric."""

    task_id: str = Field(description="The task whose seeds are compared.")
    metric: Metric = Field(description="navigation or success.")
    pairs: int = Field(description="Paired seeds on this task.")
    b: int = Field(description="Seeds the reference got right and the build wrong.")
    c: int = Field(description="Seeds the build got right and the reference wrong.")
    delta: float = Field(description="Build rate − reference rate on this task.")
    p: float = Field(description="Exact one-sided McNemar p on this task alone.")
    p_bh: float = Field(
        description="p adjusted by Benjamini–Hochberg over every drill-down row of the report."
    )


class BuildComparison(StrictModel):
    """One build's regression verdicts against the reference."""

    build: str = Field(description="The build compared.")
    bits_per_weight: float | None = Field(description="From its manifest; builds are listed high to low.")
    unpaired: int = Field(
        description="Scored episodes of this build with no reference episode on the same seed."
    )
    navigation: MetricComparison = Field(description="Navigation: P(reached).")
    success: MetricComparison = Field(description="Success: P(said done while the goal held, and kept it).")
    per_task: list[TaskComparison] = Field(description="Drill-down by task and metric (exploratory).")
    sentence: str = Field(description="The verdict in one plain sentence.")
    recognition: RecognitionGap | None = Field(
        None, description="Completion-recognition drop against navigation drop, paired; null: no pairs."
    )


class Regression(StrictModel):
    """Every build against the reference."""

    reference: str = Field(description="The reference build.")
    margin: float = Field(description="Non-inferiority margin δ: the largest drop that does not matter.")
    alpha: float = Field(description="Family-wise error rate of the REGRESSION verdicts.")
    looks: int = Field(
        1,
        description="Looks the grid planned at its verdicts (phase 1 and each top-up level); each verdict "
        "is judged at alpha / looks so a grid that grows undecided builds keeps its error rates.",
    )
    builds: list[BuildComparison] = Field(
        description="One entry per non-reference build, by bits per weight."
    )


def _pair_values(
    reference: Mapping[PairKey, EpisodeRecord], build: Mapping[PairKey, EpisodeRecord], metric: Metric
) -> tuple[list[int], list[str], list[tuple[bool, bool]]]:
    ref = {k: _scored(e, metric) for k, e in reference.items()}
    return _paired(ref, {k: _scored(e, metric) for k, e in build.items()})


def _paired(
    reference: Mapping[PairKey, bool], build: Mapping[PairKey, bool]
) -> tuple[list[int], list[str], list[tuple[bool, bool]]]:
    differences: list[int] = []
    tasks: list[str] = []
    outcomes: list[tuple[bool, bool]] = []
    for key in sorted(set(reference) & set(build)):
        differences.append(int(build[key]) - int(reference[key]))
        tasks.append(key[0])
        outcomes.append((reference[key], build[key]))
    return differences, tasks, outcomes


def _compare(
    reference: Mapping[PairKey, EpisodeRecord],
    build: Mapping[PairKey, EpisodeRecord],
    metric: Metric,
    margin: float,
    level: float,
) -> MetricComparison:
    differences, tasks, outcomes = _pair_values(reference, build, metric)
    return _comparison(metric, differences, tasks, outcomes, margin, level)


def compare_pairs(
    reference: Mapping[PairKey, bool],
    build: Mapping[PairKey, bool],
    metric: Metric,
    margin: float,
    level: float,
) -> MetricComparison:
    """One build against the reference on per-(task, seed) values where True is the good side; p_holm and
    the verdict are left for the caller's Holm family (`judge`)."""
    return _comparison(metric, *_paired(reference, build), margin, level)


def judge(comparisons: Sequence[MetricComparison], alpha: float, margin: float, level: float) -> None:
    """Holm over one family of comparisons, then each one's verdict at the look's level."""
    for m, adjusted in zip(comparisons, holm([m.p for m in comparisons], alpha), strict=True):
        m.p_holm = adjusted
        m.verdict = verdict(adjusted, m.drop_upper, margin, level) if m.pairs else Verdict.INCONCLUSIVE


def _comparison(
    metric: Metric,
    differences: list[int],
    tasks: list[str],
    outcomes: list[tuple[bool, bool]],
    margin: float,
    level: float,
) -> MetricComparison:
    b, c = discordant(outcomes)
    n = len(outcomes)
    effect = stratified_effect(differences, tasks, level)
    other_tasks = paired_effect(differences, tasks)
    reference_rate = sum(r for r, _ in outcomes) / n if n else None
    return MetricComparison(
        metric=metric,
        pairs=n,
        b=b,
        c=c,
        reference_rate=reference_rate,
        build_rate=sum(x for _, x in outcomes) / n if n else None,
        delta=effect.delta,
        low=effect.interval.low if effect.interval else None,
        high=effect.interval.high if effect.interval else None,
        confidence=1 - 2 * level,
        drop_upper=effect.drop_upper,
        df=effect.df,
        other_tasks_low=other_tasks.interval.low if other_tasks.interval else None,
        other_tasks_high=other_tasks.interval.high if other_tasks.interval else None,
        other_tasks_df=other_tasks.df,
        p=mcnemar_p(b, c),
        p_holm=1.0,
        p_sign_flip=sign_flip_p(list(effect.per_task.values())) if n else None,
        e_value=e_value(b, c),
        flips=(b + c) / n if n else None,
        verdict=Verdict.INCONCLUSIVE,
        episodes_needed=episodes_needed(reference_rate, margin) if reference_rate is not None else None,
    )


def _drill_down(
    reference: Mapping[PairKey, EpisodeRecord], build: Mapping[PairKey, EpisodeRecord]
) -> list[TaskComparison]:
    rows: list[TaskComparison] = []
    for metric in METRICS:
        _, tasks, outcomes = _pair_values(reference, build, metric)
        for task in sorted(set(tasks)):
            mine = [o for t, o in zip(tasks, outcomes, strict=True) if t == task]
            b, c = discordant(mine)
            p = mcnemar_p(b, c)
            rows.append(
                TaskComparison(
                    task_id=task,
                    metric=metric,
                    pairs=len(mine),
                    b=b,
                    c=c,
                    delta=(c - b) / len(mine),
                    p=p,
                    p_bh=p,
                )
            )
    return rows


def signed_words(x: float) -> str:
    """A difference for a sentence: "+0.12", "−0.25", "0.00"."""
    # Rounding can leave "-0.00", which reads as a drop that is not there.
    return "0.00" if abs(x) < 0.005 else f"{x:+.2f}".replace("-", "−")


def interval_words(m: MetricComparison) -> str:
    """The interval beside a verdict in a sentence, " [−0.37, −0.13]", or nothing when there is none."""
    if m.low is None or m.high is None:
        return ""
    return f" [{signed_words(m.low)}, {signed_words(m.high)}]"


def _phrase(m: MetricComparison, margin: float) -> str:
    words = METRIC_WORDS[m.metric]
    if m.pairs == 0:
        return f"{words} not compared (no paired episodes)"
    interval = interval_words(m)
    if m.verdict is Verdict.NON_INFERIOR:
        return f"{words} non-inferior"
    if m.verdict is Verdict.REGRESSION:
        return f"{words} REGRESSION, {signed_words(m.delta)}{interval}"
    needed = f", ~{m.episodes_needed} episodes would detect {margin:.2f}" if m.episodes_needed else ""
    return (
        f"{words} INCONCLUSIVE, {signed_words(m.delta)}{interval} "
        f"(a drop up to {m.drop_upper:.2f} not ruled out by {m.pairs} pairs{needed})"
    )


def sentence(comparison: BuildComparison, margin: float) -> str:
    """The verdict in the user's words, e.g. "w4a16: navigation non-inferior; completion recognition
    REGRESSION, −0.20 [−0.33, −0.07]"."""
    phrases = [_phrase(comparison.navigation, margin), _phrase(comparison.success, margin)]
    return f"{comparison.build}: " + "; ".join(phrases)


def bits_order(build: str, bits: float | None) -> tuple[float, str]:
    """Sort key: most bits per weight first, builds without a known width last, then by name."""
    return (-bits if bits is not None else float("inf"), build)


def undecided(regression: Regression, baselines: Collection[str] = ()) -> list[str]:
    """The builds a grid's top-up grows: a navigation or success verdict still INCONCLUSIVE (baselines,
    which are not quantization levels, never grow)."""
    return [
        c.build
        for c in regression.builds
        if c.build not in baselines and Verdict.INCONCLUSIVE in (c.navigation.verdict, c.success.verdict)
    ]


def compare_builds(
    scored: Sequence[EpisodeRecord],
    reference: str,
    margin: float = DEFAULT_MARGIN,
    alpha: float = ALPHA,
    looks: int = 1,
) -> Regression:
    """Every other build against `reference`, from scored episodes (the last attempt of each seed, no infra
    errors): the paired tests, Holm over builds × metrics, BH over the drill-down, verdicts and sentences.

    `looks` is how many times the grid planned to look at the verdicts (sequential.look_alpha): each
    verdict is judged at alpha / looks."""
    level = look_alpha(alpha, looks)
    by_build: dict[str, dict[PairKey, EpisodeRecord]] = {}
    bits: dict[str, float | None] = {}
    for episode in scored:
        by_build.setdefault(episode.build, {})[episode.task_id, episode.seed] = episode
        if episode.build_manifest is not None:
            bits.setdefault(episode.build, episode.build_manifest.bits_per_weight)
    reference_pairs = by_build.get(reference, {})
    others = sorted((b for b in by_build if b != reference), key=lambda b: bits_order(b, bits.get(b)))

    comparisons: list[BuildComparison] = []
    for name in others:
        mine = by_build[name]
        comparisons.append(
            BuildComparison(
                build=name,
                bits_per_weight=bits.get(name),
                unpaired=len(set(mine) - set(reference_pairs)),
                navigation=_compare(reference_pairs, mine, "navigation", margin, level),
                success=_compare(reference_pairs, mine, "success", margin, level),
                per_task=_drill_down(reference_pairs, mine),
                sentence="",
            )
        )

    judge([m for comp in comparisons for m in (comp.navigation, comp.success)], alpha, margin, level)
    rows = [row for comp in comparisons for row in comp.per_task]
    for row, adjusted in zip(rows, benjamini_hochberg([r.p for r in rows], alpha), strict=True):
        row.p_bh = adjusted
    for comp in comparisons:
        comp.sentence = sentence(comp, margin)
        comp.recognition = recognition_gap(
            reference_pairs,
            by_build[comp.build],
            name=comp.build,
            navigation=comp.navigation.verdict,
            margin=margin,
            level=level,
        )
    return Regression(reference=reference, margin=margin, alpha=alpha, looks=looks, builds=comparisons)
