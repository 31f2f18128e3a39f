"""Which ability breaks first down the ladder (navigation, completion, typing, answers), per task family.

Each rung against the reference, paired on (task, seed), with the scorecard's verdicts; docs/scorecard.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from pydantic import Field

from agent_eval.records import EpisodeRecord, StrictModel
from agent_eval.scoring.decomposition import (
    Decomposition,
    StopComparison,
    probe_reached,
    starts_away,
    stopped_early,
)
from agent_eval.scoring.families import TaskFacts
from agent_eval.scoring.regression import BuildComparison, MetricComparison, Regression
from agent_eval.scoring.sequential import look_alpha
from agent_eval.scoring.stats import Verdict, holm, mcnemar_p, stratified_effect, verdict
from agent_eval.scoring.typing_accuracy import ALL, EpisodeKey, answered_right

Ability = Literal["navigation", "completion", "sensitivity", "false_done", "typing", "answer"]
# Without navigation probes the run cannot take navigation and recognition apart: navigation is reaching the
# goal in play and completion is end-to-end success. With them, navigation is the probe's, and recognition
# is the stop decision's two sides (scoring/decomposition.py).
ABILITIES: tuple[Ability, ...] = ("navigation", "completion", "typing", "answer")
PROBED_ABILITIES: tuple[Ability, ...] = ("navigation", "sensitivity", "false_done", "typing", "answer")
ABILITY_WORDS: dict[str, str] = {
    "navigation": "navigation",
    "completion": "completion recognition",
    "sensitivity": "stopping once there",
    "false_done": "not stopping before the goal",
    "typing": "typing accuracy",
    "answer": "answer accuracy",
}
PairKey = tuple[str, int]
# One number per episode, or None when the ability was not exercised in it (no typed step, no answer task).
Measure = Callable[[EpisodeRecord], float | None]


class AbilityVerdict(StrictModel):
    """One rung against the reference on one ability, over the paired episodes of one family (or all)."""

    ability: Ability = Field(
        description="navigation, completion (recognition), typing or answer (accuracy); with navigation "
        "probes, navigation is the probe's and completion is split into sensitivity and false_done."
    )
    pairs: int = Field(description="(task, seed) pairs where both builds exercised the ability.")
    b: int = Field(description="Pairs where the rung did worse than the reference.")
    c: int = Field(description="Pairs where the rung did better.")
    reference_value: float | None = Field(description="The reference's mean on the pairs.")
    build_value: float | None = Field(description="The rung's mean on the pairs.")
    delta: float = Field(description="Rung − reference, mean over tasks of each task's mean difference.")
    low: float | None = Field(
        description="Lower end of Δ's interval on these tasks (stratified by task, seeds random), two-sided "
        "at 1 − 2·alpha/looks: its ends are the one-sided bounds the verdict reads."
    )
    high: float | None = Field(description="Upper end of that interval.")
    drop_upper: float = Field(description="One-sided upper bound of the drop at 1 − alpha / looks (−low).")
    p_holm: float = Field(description="Exact one-sided sign (McNemar) p on b, c; Holm-adjusted.")
    verdict: Verdict = Field(description="REGRESSION, NON-INFERIOR or INCONCLUSIVE, as the scorecard's.")


class AbilityRow(StrictModel):
    """One rung on one family (or all tasks): a verdict per ability the family exercises."""

    build: str = Field(description="The rung compared with the reference.")
    family: str = Field(description="app/family, or 'all'.")
    bits_per_weight: float | None = Field(description="The rung's bits per weight.")
    abilities: list[AbilityVerdict] = Field(description="One per ability with paired episodes.")
    first_regressions: list[Ability] = Field(
        description="Abilities whose first REGRESSION, going down the ladder, is at this rung."
    )


class BreakPoint(StrictModel):
    """Where one family (or all tasks) starts to break, and what breaks first."""

    family: str = Field(description="app/family, or 'all'.")
    knee: str | None = Field(
        description="Lowest-bit rung NON-INFERIOR on every ability measured; null: none."
    )
    at_rung: str | None = Field(description="The highest-bit rung with a REGRESSION; null: none regresses.")
    breaks_first: list[Ability] = Field(description="The abilities that regress at that rung.")
    sentence: str = Field(description="What breaks first, in one sentence, or that the data do not say.")


class AbilityLadder(StrictModel):
    """Per rung and family, the four abilities' verdicts, the knee and the first ability to break."""

    rows: list[AbilityRow] = Field(description="Rungs from most to fewest bits; 'all' first, then families.")
    families: list[BreakPoint] = Field(description="'all' first, then each family (when there are several).")
    sentence: str = Field(description="Which ability breaks first over all tasks, in one sentence.")


def _measures(
    facts: TaskFacts,
    typing: Mapping[EpisodeKey, Sequence[float]],
    probes: Mapping[EpisodeKey, EpisodeRecord] | None = None,
) -> dict[Ability, Measure]:
    def typed(e: EpisodeRecord) -> float | None:
        steps = typing.get((e.build, e.task_id, e.seed))
        return sum(steps) / len(steps) if steps else None

    def answered(e: EpisodeRecord) -> float | None:
        return float(answered_right(e)) if e.task_id in facts.answer_tasks else None

    if probes is None:
        return {
            "navigation": lambda e: float(e.reached),
            "completion": lambda e: float(e.success),
            "typing": typed,
            "answer": answered,
        }

    def navigated(e: EpisodeRecord) -> float | None:
        got = probe_reached(e, probes.get((e.build, e.task_id, e.seed)))
        return None if got is None else float(got)

    return {
        "navigation": navigated,
        "sensitivity": lambda e: float(e.success) if e.reached else None,
        "false_done": lambda e: float(not stopped_early(e)) if starts_away(e) else None,
        "typing": typed,
        "answer": answered,
    }


def _compare(
    ability: Ability, ref: Mapping[PairKey, float], mine: Mapping[PairKey, float], level: float
) -> AbilityVerdict:
    keys = sorted(set(ref) & set(mine))
    differences = [mine[k] - ref[k] for k in keys]
    tasks = [k[0] for k in keys]
    shown = stratified_effect(differences, tasks, level)
    # McNemar's exact test is the sign test on the paired differences; for typing it counts worse/better.
    b, c = sum(d < -1e-12 for d in differences), sum(d > 1e-12 for d in differences)
    n = len(keys)
    return AbilityVerdict(
        ability=ability,
        pairs=n,
        b=b,
        c=c,
        reference_value=sum(ref[k] for k in keys) / n if n else None,
        build_value=sum(mine[k] for k in keys) / n if n else None,
        delta=shown.delta,
        low=shown.interval.low if shown.interval else None,
        high=shown.interval.high if shown.interval else None,
        drop_upper=shown.drop_upper,
        p_holm=mcnemar_p(b, c),
        verdict=Verdict.INCONCLUSIVE,
    )


def _from_regression(ability: Ability, m: MetricComparison) -> AbilityVerdict:
    return AbilityVerdict(
        ability=ability,
        pairs=m.pairs,
        b=m.b,
        c=m.c,
        reference_value=m.reference_rate,
        build_value=m.build_rate,
        delta=m.delta,
        low=m.low,
        high=m.high,
        drop_upper=m.drop_upper,
        p_holm=m.p_holm,
        verdict=m.verdict,
    )


def _judge(verdicts: Sequence[AbilityVerdict], alpha: float, margin: float, level: float) -> None:
    """Holm over one family of tests, then each verdict as the scorecard's (docs/scorecard.md)."""
    for v, adjusted in zip(verdicts, holm([v.p_holm for v in verdicts], alpha), strict=True):
        v.p_holm = adjusted
        v.verdict = verdict(adjusted, v.drop_upper, margin, level) if v.pairs else Verdict.INCONCLUSIVE


def _values(
    episodes: Sequence[EpisodeRecord], measure: Measure, tasks: set[str] | None
) -> dict[PairKey, float]:
    out: dict[PairKey, float] = {}
    for e in episodes:
        if (tasks is None or e.task_id in tasks) and (value := measure(e)) is not None:
            out[e.task_id, e.seed] = value
    return out


def _rows_for(
    group: str,
    rungs: Sequence[tuple[str, float | None]],
    by_build: Mapping[str, Sequence[EpisodeRecord]],
    reference: str,
    measures: Mapping[Ability, Measure],
    tasks: set[str] | None,
    level: float,
) -> list[AbilityRow]:
    rows = []
    refs = {ability: _values(by_build[reference], measure, tasks) for ability, measure in measures.items()}
    for build, bits in rungs:
        found = []
        for ability, measure in measures.items():
            mine = _values(by_build.get(build, ()), measure, tasks)
            if set(refs[ability]) & set(mine):
                found.append(_compare(ability, refs[ability], mine, level))
        rows.append(
            AbilityRow(build=build, family=group, bits_per_weight=bits, abilities=found, first_regressions=[])
        )
    return rows


def _words(abilities: Sequence[str]) -> str:
    names = [ABILITY_WORDS[a] for a in abilities]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _mark_first(rows: Sequence[AbilityRow]) -> AbilityRow | None:
    """Set each row's first regressions (rows high to low bits); the first row with a REGRESSION."""
    seen: set[str] = set()
    first = None
    for row in rows:
        regressed = [v.ability for v in row.abilities if v.verdict is Verdict.REGRESSION]
        row.first_regressions = [a for a in regressed if a not in seen]
        seen.update(regressed)
        if first is None and regressed:
            first = row
    return first


def bpw_words(bits_per_weight: float | None, unknown: str = "bits unknown") -> str:
    """Bits per weight as a sentence says them: two decimals at most (a GGUF file's measured 5.4482 reads
    5.45 bpw, a grid's 4.5 stays 4.5)."""
    return unknown if bits_per_weight is None else f"{round(bits_per_weight, 2):g} bpw"


def _first_parts(at: AbilityRow, where: str) -> list[str]:
    """What regresses at the first rung that regresses, and what the others say there."""
    breaks = at.first_regressions
    bits = bpw_words(at.bits_per_weight)
    verb = "breaks" if len(breaks) == 1 else "break"
    parts = [f"{_words(breaks)} {verb} first {where}, at {at.build} ({bits})"]
    holds = [v.ability for v in at.abilities if v.verdict is Verdict.NON_INFERIOR]
    unsure = [v.ability for v in at.abilities if v.verdict is Verdict.INCONCLUSIVE]
    if holds:
        parts.append(f"{_words(holds)} still non-inferior there")
    if unsure:
        parts.append(f"{_words(unsure)} inconclusive there (whether it broke as early the data do not say)")
    return parts


def _break_point(group: str, rows: Sequence[AbilityRow]) -> BreakPoint:
    at = _mark_first(rows)
    fine = [r for r in rows if r.abilities and all(v.verdict is Verdict.NON_INFERIOR for v in r.abilities)]
    knee = fine[-1].build if fine else None
    where = "over all tasks" if group == ALL else f"on {group}"
    if at is None:
        verdicts = [v.verdict for r in rows for v in r.abilities]
        open_ = sum(v is Verdict.INCONCLUSIVE for v in verdicts)
        parts = [
            f"which ability breaks first {where}: the data do not say, no ability regresses on any of the "
            f"{len(rows)} rungs ({open_} of {len(verdicts)} verdicts inconclusive)"
        ]
    else:
        parts = _first_parts(at, where)
    measured = {v.ability for r in rows for v in r.abilities}
    kinds = PROBED_ABILITIES if measured & {"sensitivity", "false_done"} else ABILITIES
    unmeasured = [a for a in kinds if a not in measured]
    if unmeasured:
        parts.append(f"{_words(unmeasured)} not measured")
    parts.append(f"knee (every measured ability non-inferior): {knee or 'none'}")
    sentence = "; ".join(parts) + "."
    return BreakPoint(
        family=group,
        knee=knee,
        at_rung=at.build if at else None,
        breaks_first=list(at.first_regressions) if at else [],
        sentence=sentence[0].upper() + sentence[1:],
    )


def _primary(comp: BuildComparison, stop: StopComparison | None) -> list[AbilityVerdict]:
    """Over all tasks: the decomposition's verdicts with navigation probes, else the scorecard's own."""
    if stop is not None:
        return [
            _from_regression("navigation", stop.probe_navigation),
            _from_regression("sensitivity", stop.sensitivity),
            _from_regression("false_done", stop.false_done),
        ]
    return [_from_regression("navigation", comp.navigation), _from_regression("completion", comp.success)]


def ability_ladder(
    scored: Sequence[EpisodeRecord],
    rungs: Sequence[tuple[str, float | None]],
    regression: Regression,
    facts: TaskFacts,
    typing: Mapping[EpisodeKey, Sequence[float]],
    decomposition: Decomposition | None = None,
    probes: Sequence[EpisodeRecord] = (),
) -> AbilityLadder | None:
    """The abilities of each rung (high to low bits, the reference left out) against the reference.

    Over all tasks, navigation and completion recognition are the scorecard's own verdicts (with navigation
    probes: probe navigation, sensitivity and false done, the decomposition's); typing and answer accuracy
    are one Holm family over rungs × those two. Each family's rows are a Holm family of their own (rungs ×
    abilities): read them as one study per family. None without rungs."""
    if not rungs:
        return None
    level = look_alpha(regression.alpha, regression.looks)
    by_build: dict[str, list[EpisodeRecord]] = {}
    for e in scored:
        by_build.setdefault(e.build, []).append(e)
    probed = decomposition is not None and decomposition.probes
    by_key = {(p.build, p.task_id, p.seed): p for p in probes}
    measures = _measures(facts, typing, by_key if probed else None)
    families = sorted({facts.family(e.task_id) for e in scored})
    comparisons = {c.build: c for c in regression.builds}
    stops = {c.build: c for c in decomposition.comparisons} if decomposition is not None else {}
    secondary: dict[Ability, Measure] = {a: measures[a] for a in ("typing", "answer")}
    every = _rows_for(ALL, rungs, by_build, regression.reference, secondary, None, level)
    _judge([v for r in every for v in r.abilities], regression.alpha, regression.margin, level)
    for row in every:
        stop = stops.get(row.build) if probed else None
        row.abilities = [v for v in _primary(comparisons[row.build], stop) if v.pairs] + row.abilities
    groups: list[tuple[str, list[AbilityRow]]] = [(ALL, every)]
    for family in families if len(families) > 1 else []:
        rows = _rows_for(
            family,
            rungs,
            by_build,
            regression.reference,
            measures,
            {e.task_id for e in scored if facts.family(e.task_id) == family},
            level,
        )
        _judge([v for r in rows for v in r.abilities], regression.alpha, regression.margin, level)
        groups.append((family, rows))
    points = [_break_point(group, rows) for group, rows in groups]
    return AbilityLadder(
        rows=[row for _, rows in groups for row in rows], families=points, sentence=points[0].sentence
    )
