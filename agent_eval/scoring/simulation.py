"""The whole verdict procedure simulated: probes, the top-up's looks and both Holm families together.

Grids of scripted builds with known abilities are scored by the scorecard's own code (`compare_builds`,
`decompose`) at each look, and the top-up grows the builds the grid would grow (`undecided`). What comes out
is how often each verdict and the claim are given, against what is true: the error rates of the procedure as a
whole, not of one test. `tests/scoring/test_scoring_procedure.py` runs it small; `bench/bench_procedure.py`
at full scale (docs/scorecard.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from agent_eval.records import EpisodeRecord, Outcome, Said, classify, classify_probe
from agent_eval.scoring.decomposition import Decomposition, decompose
from agent_eval.scoring.regression import Regression, compare_builds, undecided
from agent_eval.scoring.stats import ALPHA, DEFAULT_MARGIN

REFERENCE = "reference"
T0 = datetime(2026, 12, 7, tzinfo=UTC)


@dataclass(frozen=True)
class Abilities:
    """One build's true abilities, per task (arrays of the same length, one value per task)."""

    navigation: tuple[float, ...]
    """P(it reaches the goal when it cannot stop)."""
    false_done: tuple[float, ...]
    """P(it stops before the goal held) in an episode."""
    sensitivity: tuple[float, ...]
    """P(it stops right and keeps it | it reached the goal)."""

    def shifted(
        self, navigation: float = 0.0, false_done: float = 0.0, sensitivity: float = 0.0
    ) -> Abilities:
        """The same build with each ability moved by the given amount on every task (clipped to [0, 1])."""

        def move(values: tuple[float, ...], by: float) -> tuple[float, ...]:
            return tuple(float(min(max(v + by, 0.0), 1.0)) for v in values)

        return Abilities(
            move(self.navigation, navigation),
            move(self.false_done, false_done),
            move(self.sensitivity, sensitivity),
        )


@dataclass(frozen=True)
class Scenario:
    """A reference and builds of known abilities; `shared` is the share of (task, seed) where a build draws
    the reference's chances (their episodes go alike, as a quantized build's mostly do)."""

    name: str
    reference: Abilities
    builds: dict[str, Abilities]
    shared: float = 0.5


@dataclass
class Tally:
    """How often each verdict came out, over simulated grids: keys (build, metric) → Counter of verdicts;
    the claim per build; grids with any REGRESSION in each Holm family (the family-wise error when every
    build is the reference's equal); the seeds per task each build ended with, summed over grids."""

    grids: int = 0
    verdicts: dict[tuple[str, str], Counter[str]] = field(default_factory=dict)
    claims: dict[str, Counter[str]] = field(default_factory=dict)
    any_regression: Counter[str] = field(default_factory=Counter)
    grown: Counter[str] = field(default_factory=Counter)

    def share(self, build: str, metric: str, verdict: str) -> float:
        counts = self.verdicts.get((build, metric), Counter())
        return counts[verdict] / self.grids if self.grids else 0.0

    def claim_share(self, build: str, claim: str) -> float:
        return self.claims.get(build, Counter())[claim] / self.grids if self.grids else 0.0


def _episode(
    build: str, task: str, seed: int, navigates: bool, early: bool, stops_right: bool
) -> EpisodeRecord:
    said: Said | None = None
    at: int | None = None
    if early:
        timeline, said, at = [False, False], "done", 2
    elif navigates:
        timeline = [False, False, True]
        if stops_right:
            said, at = "done", 3
    else:
        timeline = [False, False, False, False]
    outcome = classify(timeline, said)
    return EpisodeRecord(
        run_id="simulated",
        build=build,
        task_id=task,
        seed=seed,
        outcome=outcome,
        reached=any(timeline),
        success=outcome is Outcome.SUCCESS,
        said=said,
        said_at_step=at,
        goal_timeline=timeline,
        steps=len(timeline) - 1 + (said is not None),
        started_at=T0,
        finished_at=T0,
    )


def _probe(build: str, task: str, seed: int, navigates: bool) -> EpisodeRecord:
    timeline = [False, False, True] if navigates else [False, False, False, False]
    return EpisodeRecord(
        run_id="simulated",
        kind="probe",
        build=build,
        task_id=task,
        seed=seed,
        outcome=classify_probe(timeline),
        reached=navigates,
        success=False,
        goal_timeline=timeline,
        steps=len(timeline) - 1,
        started_at=T0,
        finished_at=T0,
    )


def _play(
    scenario: Scenario, rng: np.random.Generator, seeds: int
) -> dict[str, tuple[list[EpisodeRecord], list[EpisodeRecord]]]:
    """Every build's episodes and probes on seeds 0..seeds−1 of every task. A probe is played for each
    episode that stopped early (the `stopped` rule on an engine that keeps its draw): it continues that
    episode, so it reaches the goal exactly when the agent navigates."""
    tasks = len(scenario.reference.navigation)
    shape = (tasks, seeds, 3)
    chances = rng.random(shape)
    out: dict[str, tuple[list[EpisodeRecord], list[EpisodeRecord]]] = {}
    for name, abilities in [(REFERENCE, scenario.reference), *scenario.builds.items()]:
        own = chances if name == REFERENCE else rng.random(shape)
        if name != REFERENCE:
            alike = rng.random((tasks, seeds, 1)) < scenario.shared
            own = np.where(alike, chances, own)
        episodes, probes = [], []
        for t in range(tasks):
            for s in range(seeds):
                navigates = bool(own[t, s, 0] < abilities.navigation[t])
                early = bool(own[t, s, 1] < abilities.false_done[t])
                right = bool(own[t, s, 2] < abilities.sensitivity[t])
                episodes.append(_episode(name, f"t{t}", s, navigates, early, right))
                if early:
                    probes.append(_probe(name, f"t{t}", s, navigates))
        out[name] = (episodes, probes)
    return out


def _look(
    played: dict[str, tuple[list[EpisodeRecord], list[EpisodeRecord]]],
    seeds: dict[str, int],
    looks: int,
    margin: float,
) -> tuple[Regression, Decomposition]:
    """The scorecard's two verdict families on each build's first `seeds[build]` seeds (the reference's
    pairs with each build are its own seeds, as a grid's)."""
    scored: list[EpisodeRecord] = []
    probes: list[EpisodeRecord] = []
    deepest = max(seeds.values())
    for name, (episodes, probed) in played.items():
        limit = deepest if name == REFERENCE else seeds[name]
        scored += [e for e in episodes if e.seed < limit]
        probes += [p for p in probed if p.seed < limit]
    regression = compare_builds(scored, REFERENCE, margin, ALPHA, looks=looks)
    # Pairs are the (task, seed) both played: a build that stopped growing is compared on its own seeds.
    decomposition = decompose(
        scored, probes, [REFERENCE, *sorted(seeds)], REFERENCE, settings=(margin, ALPHA, looks)
    )
    return regression, decomposition


def simulate(
    scenario: Scenario,
    grids: int,
    levels: Sequence[int] = (10, 20),
    margin: float = DEFAULT_MARGIN,
    seed: int = 0,
) -> Tally:
    """Run `grids` simulated grids of `scenario` through the verdict procedure: phase 1 at levels[0] seeds,
    then each look grows the builds still undecided (the grid's rule) to the next level; every build's
    verdicts are those of its last look. Alpha is spent over len(levels) looks, as a grid does."""
    rng = np.random.default_rng(seed)
    tally = Tally()
    looks = len(levels)
    for _ in range(grids):
        played = _play(scenario, rng, max(levels))
        seeds = dict.fromkeys(scenario.builds, levels[0])
        final: dict[str, tuple[Regression, Decomposition]] = {}
        for i in range(len(levels)):
            regression, decomposition = _look(played, seeds, looks, margin)
            still = set(undecided(regression)) if i + 1 < len(levels) else set()
            for name in list(seeds):
                if name not in final and name not in still:
                    final[name] = (regression, decomposition)
            for name in still:
                seeds[name] = levels[i + 1]
            if not still:
                break
        _count(tally, final, seeds)
    return tally


def _count(tally: Tally, final: dict[str, tuple[Regression, Decomposition]], seeds: dict[str, int]) -> None:
    tally.grids += 1
    family: dict[str, bool] = {"end to end": False, "decomposition": False}
    for name, (regression, decomposition) in final.items():
        tally.grown[name] += seeds[name]
        comparison = next(c for c in regression.builds if c.build == name)
        stop = next(c for c in decomposition.comparisons if c.build == name)
        tested = (comparison.navigation, comparison.success, stop.probe_navigation, stop.sensitivity)
        for m in (*tested, stop.false_done):
            key = (name, m.metric)
            tally.verdicts.setdefault(key, Counter())[m.verdict.value] += 1
        tally.claims.setdefault(name, Counter())[stop.claim] += 1
        family["end to end"] |= "REGRESSION" in (comparison.navigation.verdict, comparison.success.verdict)
        family["decomposition"] |= "REGRESSION" in (
            stop.probe_navigation.verdict,
            stop.sensitivity.verdict,
            stop.false_done.verdict,
        )
    for name, hit in family.items():
        tally.any_regression[name] += hit


# Six tasks of different difficulty, as real ones are: the reference navigates 0.95 … 0.70, stops early in
# one episode of ten and stops right once there in 0.95.
REFERENCE_ABILITIES = Abilities(
    navigation=(0.95, 0.9, 0.85, 0.8, 0.75, 0.7), false_done=(0.1,) * 6, sensitivity=(0.95,) * 6
)


def scenarios(margin: float = DEFAULT_MARGIN) -> list[Scenario]:
    """What the procedure must get right: a build "a" beside a build "b" equal to the reference (so every
    Holm family has two builds), with a true difference of exactly the margin in one ability or none."""
    ref = REFERENCE_ABILITIES
    moved = {
        "none: a equals the reference": ref,
        "navigation drops by δ": ref.shifted(navigation=-margin),
        "false done rises by δ": ref.shifted(false_done=margin),
        "sensitivity drops by δ": ref.shifted(sensitivity=-margin),
    }
    return [Scenario(name, ref, {"a": build, "b": ref}) for name, build in moved.items()]
