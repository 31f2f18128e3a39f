"""Navigation and completion recognition apart: the probe's navigation, and the stop decision on its own.

A premature done ends an episode before the goal held, so in ordinary play it counts against navigation and
recognition at once. The navigation probe (the same task and seed with stopping taken away) says whether the
agent would have got there; the stop decision is then a detector of "the goal holds" (docs/scorecard.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from pydantic import Field
from scipy.stats import mannwhitneyu

from agent_eval.records import EpisodeRecord, Outcome, StepRecord, StrictModel
from agent_eval.scoring.build_score import Rate, rate
from agent_eval.scoring.regression import (
    MetricComparison,
    PairKey,
    compare_pairs,
    interval_words,
    judge,
    signed_words,
)
from agent_eval.scoring.sequential import look_alpha
from agent_eval.scoring.stats import ALPHA, Verdict, clustered_mean

EpisodeKey = tuple[str, str, int]
StepsOf = Callable[[EpisodeRecord], list[StepRecord]]


def stopped_early(e: EpisodeRecord) -> bool:
    """The agent ended the episode (done, infeasible, an answer) before the goal ever held: a false done."""
    return e.said is not None and not e.reached


def starts_away(e: EpisodeRecord) -> bool:
    """The goal did not hold when the episode began (every task but a verify task)."""
    return bool(e.goal_timeline) and not e.goal_timeline[0]


def probe_reached(episode: EpisodeRecord, probe: EpisodeRecord | None) -> bool | None:
    """Whether the agent gets there when it cannot stop: the probe's own word when it was played; else the
    episode's, where a probe would replay it (it reached the goal, or it never stopped); None: unknown."""
    if probe is not None:
        return probe.reached
    if episode.reached or episode.said is None:
        return episode.reached
    return None


class StopDecision(StrictModel):
    """One build's navigation with stopping taken away, and its stop decision as a goal detector."""

    build: str = Field(description="The build's name.")
    probe_navigation: Rate | None = Field(
        description="P(reached | cannot stop) over its scored (task, seed): the probe's outcome where one "
        "was played, else the ordinary episode's where a probe replays it (it reached, or never stopped); "
        "Wilson 95% interval. Null: no probes in this run."
    )
    probes: int = Field(description="Navigation probes played (scored) for this build.")
    imputed: int = Field(
        description="(task, seed) whose probe outcome is the ordinary episode's, valid where the engine "
        "replays (see replayed)."
    )
    unknown: int = Field(description="Episodes that stopped early and have no probe yet (not in the rate).")
    replayed: int = Field(
        description="Probes of early-stopped episodes that repeated the episode's answers, step for step, up "
        "to the step where it stopped."
    )
    replay_checked: int = Field(description="Probes of early-stopped episodes checked for replay.")
    sensitivity: Rate = Field(
        description="P(said done while the goal held, and kept it | the goal was reached) in ordinary play."
    )
    false_done: Rate = Field(
        description="Per episode: P(stopped before the goal ever held) over episodes that began away from it."
    )
    false_done_per_step: float | None = Field(
        description="Per step: stops over the steps where the goal did not hold when the agent decided."
    )
    false_done_per_step_low: float | None = Field(description="Its 95% interval, clustered by episode.")
    false_done_per_step_high: float | None = Field(description="Upper end of that interval.")
    away_steps: int = Field(description="Steps decided while the goal did not hold.")
    stopped_early: int = Field(description="Ordinary episodes that stopped before the goal held.")
    stopped_early_reached: Rate | None = Field(
        description="Of those with a probe, the share whose probe reached the goal: they navigated and did "
        "not recognise where they were (null: none probed)."
    )
    undone: int = Field(description="Ordinary episodes that reached the goal and then undid it.")
    wrong_answers: int = Field(description="Answer tasks: stopped on the answer's screen, answer wrong.")
    auroc: float | None = Field(
        None,
        description="Teacher-forced, from fidelity: the area under the ROC curve of P(done) as a detector "
        "of 'the goal holds' on the reference's recorded steps (identical states for every build); null: "
        "fidelity did not run, or the steps are all of one kind.",
    )
    auroc_steps: int = Field(0, description="Recorded steps the AUROC is over.")


class StopComparison(StrictModel):
    """One build against the reference on the three abilities, paired on (task, seed)."""

    build: str = Field(description="The build compared.")
    bits_per_weight: float | None = Field(description="From its manifest.")
    probe_navigation: MetricComparison = Field(description="P(reached | cannot stop), paired.")
    sensitivity: MetricComparison = Field(
        description="Stopped right once there, on the pairs where both builds reached the goal."
    )
    false_done: MetricComparison = Field(
        description="Not stopping before the goal held (the good side), on the pairs that began away from "
        "it: a drop is more false dones."
    )
    claim: str = Field(
        description="'navigation survives while completion recognition does not': holds (probe navigation "
        "NON-INFERIOR, sensitivity or false done REGRESSION), fails (probe navigation REGRESSION, or both "
        "recognition verdicts NON-INFERIOR) or undecided."
    )
    sentence: str = Field(description="The verdicts and the claim in one plain sentence.")


class Decomposition(StrictModel):
    """Navigation and recognition apart, for every build, and each build against the reference."""

    probes: bool = Field(description="The run played navigation probes.")
    builds: list[StopDecision] = Field(description="One per build, in the scorecard's order.")
    comparisons: list[StopComparison] = Field(
        description="One per non-reference build; verdicts under one Holm family (builds × 3 abilities), "
        "judged at alpha / looks as the scorecard's."
    )


def _steps_agree(episode: list[StepRecord], probe: list[StepRecord], before: int) -> bool:
    """The probe answered as the episode did at every step before `before`."""
    if len(probe) < before - 1 or len(episode) < before - 1:
        return False
    return all(episode[i].raw_answer == probe[i].raw_answer for i in range(before - 1))


def _away_steps(e: EpisodeRecord) -> tuple[int, int]:
    """(steps decided while the goal did not hold, stops among them) of one episode."""
    timeline = e.goal_timeline
    away = sum(1 for k in range(1, e.steps + 1) if k - 1 < len(timeline) and not timeline[k - 1])
    said_away = e.said is not None and e.said_at_step is not None and not timeline[e.said_at_step - 1]
    return away, int(said_away)


def _stop_decision(
    build: str,
    episodes: Sequence[EpisodeRecord],
    probes: Mapping[EpisodeKey, EpisodeRecord],
    steps_of: StepsOf | None,
    played_probes: bool,
) -> StopDecision:
    known = [probe_reached(e, probes.get((e.build, e.task_id, e.seed))) for e in episodes]
    early = [e for e in episodes if stopped_early(e)]
    early_probes = [(e, p) for e in early if (p := probes.get((e.build, e.task_id, e.seed))) is not None]
    replayed = 0
    if steps_of is not None:
        replayed = sum(_steps_agree(steps_of(e), steps_of(p), e.said_at_step or 1) for e, p in early_probes)
    away = [e for e in episodes if starts_away(e)]
    per_episode = [_away_steps(e) for e in away]
    # Each step decided away from the goal is a 0 (went on) or a 1 (stopped), clustered by its episode.
    values: list[float] = []
    clusters: list[str] = []
    for e, (n, k) in zip(away, per_episode, strict=True):
        values += [0.0] * (n - k) + [1.0] * k
        clusters += [f"{e.task_id}/{e.seed}"] * n
    step_rate, step_interval = clustered_mean(values, clusters)
    reached = [e for e in episodes if e.reached]
    return StopDecision(
        build=build,
        probe_navigation=rate(sum(k is True for k in known), sum(k is not None for k in known))
        if played_probes and not unprobed(episodes, probes)
        else None,
        probes=sum(1 for k in probes if k[0] == build),
        imputed=sum(
            1
            for e, k in zip(episodes, known, strict=True)
            if k is not None and (e.build, e.task_id, e.seed) not in probes
        ),
        unknown=sum(k is None for k in known),
        replayed=replayed,
        replay_checked=len(early_probes) if steps_of is not None else 0,
        sensitivity=rate(sum(e.success for e in reached), len(reached)),
        false_done=rate(sum(stopped_early(e) for e in away), len(away)),
        false_done_per_step=step_rate,
        false_done_per_step_low=step_interval.low if step_interval else None,
        false_done_per_step_high=step_interval.high if step_interval else None,
        away_steps=sum(n for n, _ in per_episode),
        stopped_early=len(early),
        stopped_early_reached=rate(sum(p.reached for _, p in early_probes), len(early_probes))
        if early_probes
        else None,
        undone=sum(e.outcome is Outcome.UNDONE for e in episodes),
        wrong_answers=sum(e.outcome is Outcome.WRONG_ANSWER for e in episodes),
    )


def done_auroc(steps: Sequence[tuple[float, bool]]) -> float | None:
    """P(a step where the goal held gets a higher P(done) than one where it did not), ties counting half."""
    held = [p for p, h in steps if h]
    away = [p for p, h in steps if not h]
    if not held or not away:
        return None
    u = mannwhitneyu(held, away, alternative="two-sided").statistic
    return float(u) / (len(held) * len(away))


def unprobed(episodes: Sequence[EpisodeRecord], probes: Mapping[EpisodeKey, EpisodeRecord]) -> bool:
    """The build stopped early and none of those stops was probed (a baseline the grid does not probe): its
    probe navigation over the other episodes alone would leave out exactly the ones in question."""
    early = [e for e in episodes if stopped_early(e)]
    return bool(early) and not any((e.build, e.task_id, e.seed) in probes for e in early)


def ability_values(
    episodes: Sequence[EpisodeRecord], probes: Mapping[EpisodeKey, EpisodeRecord]
) -> dict[str, dict[PairKey, bool]]:
    """Per ability, each (task, seed)'s value for one build, where the ability was exercised (True: good)."""
    nav: dict[PairKey, bool] = {}
    sens: dict[PairKey, bool] = {}
    false_done: dict[PairKey, bool] = {}
    for e in episodes:
        key = (e.task_id, e.seed)
        if (got := probe_reached(e, probes.get((e.build, e.task_id, e.seed)))) is not None:
            nav[key] = got
        if e.reached:
            sens[key] = e.success
        if starts_away(e):
            false_done[key] = not stopped_early(e)
    return {"probe_navigation": nav, "sensitivity": sens, "false_done": false_done}


def _claim(c: StopComparison) -> str:
    recognition = (c.sensitivity.verdict, c.false_done.verdict)
    if c.probe_navigation.verdict is Verdict.REGRESSION:
        return "fails"
    if all(v is Verdict.NON_INFERIOR for v in recognition):
        return "fails"
    if c.probe_navigation.verdict is Verdict.NON_INFERIOR and Verdict.REGRESSION in recognition:
        return "holds"
    return "undecided"


def _phrase(name: str, m: MetricComparison) -> str:
    if m.pairs == 0:
        return f"{name} not compared"
    if m.build_rate is None or m.reference_rate is None:
        return f"{name} {m.verdict.value}"
    return (
        f"{name} {m.verdict.value} ({m.build_rate:.2f} vs {m.reference_rate:.2f}, "
        f"Δ {signed_words(m.delta)}{interval_words(m)}, {m.pairs} pairs)"
    )


def _sentence(c: StopComparison) -> str:
    parts = [
        _phrase("navigation (cannot stop)", c.probe_navigation),
        _phrase("stopping once there", c.sensitivity),
        _phrase("not stopping before the goal", c.false_done),
    ]
    return (
        f"{c.build}: "
        + "; ".join(parts)
        + f"; 'navigation survives while completion recognition does not' {c.claim}"
    )


def decompose(
    scored: Sequence[EpisodeRecord],
    probes: Sequence[EpisodeRecord],
    order: Sequence[str],
    reference: str | None,
    *,
    bits: Mapping[str, float | None] | None = None,
    settings: tuple[float, float, int] = (0.10, ALPHA, 1),
    steps_of: StepsOf | None = None,
    done_on_recorded_steps: Mapping[str, Sequence[tuple[float, bool]]] | None = None,
) -> Decomposition:
    """Every build's stop decision and probe navigation from its scored episodes and scored probes (the last
    attempt of each, infra errors out), and the paired verdicts against `reference`; `settings` are the
    scorecard's (margin, alpha, looks)."""
    margin, alpha, looks = settings
    by_key = {(p.build, p.task_id, p.seed): p for p in probes}
    by_build: dict[str, list[EpisodeRecord]] = {b: [] for b in order}
    for e in scored:
        by_build.setdefault(e.build, []).append(e)
    played = bool(probes)
    builds = [_stop_decision(b, eps, by_key, steps_of, played) for b, eps in by_build.items()]
    for row in builds:
        recorded = (done_on_recorded_steps or {}).get(row.build, ())
        row.auroc, row.auroc_steps = done_auroc(recorded), len(recorded)
    comparisons: list[StopComparison] = []
    if reference is not None and reference in by_build:
        level = look_alpha(alpha, looks)
        ref = ability_values(by_build[reference], by_key)
        for name in [b for b in by_build if b != reference]:
            mine = ability_values(by_build[name], by_key)
            if unprobed(by_build[name], by_key):
                mine["probe_navigation"] = {}
            m = {a: compare_pairs(ref[a], mine[a], a, margin, level) for a in ref}  # type: ignore[arg-type]
            comparisons.append(
                StopComparison(
                    build=name,
                    bits_per_weight=(bits or {}).get(name),
                    probe_navigation=m["probe_navigation"],
                    sensitivity=m["sensitivity"],
                    false_done=m["false_done"],
                    claim="undecided",
                    sentence="",
                )
            )
        tested = [m for c in comparisons for m in (c.probe_navigation, c.sensitivity, c.false_done)]
        if not played:
            tested = [m for m in tested if m.metric != "probe_navigation"]
        judge(tested, alpha, margin, level)
        for c in comparisons:
            c.claim = _claim(c) if played else "undecided"
            c.sentence = _sentence(c)
    return Decomposition(probes=played, builds=builds, comparisons=comparisons)
