"""Power: how many episodes each verdict needed to flag a build, from a finished run alone (no engine).

The unit is a (task, seed) pair the reference played. In a random order of those units, a prefix of k units
gives the episode verdict its k paired episodes per build (`compare_builds`, Holm over every build as in the
scorecard) and gives fidelity the recorded steps of the reference's k episodes (the probes already on disk,
`judge` with Holm over every build). The phase-1 units (every build played them) come first in every
order and the top-up's after, as the grid played them. A verdict "needed" k units when it flags the build at
k and at every larger prefix checked, so a lucky early flag that later goes away does not count. Each
side's need is the median over the random orders; the ratio fidelity ÷ episodes is what issue 15's "≤ 1/5
as many episodes" is about. Only units with probes count for fidelity (a grid probes after phase 1, not
the top-up).

For each build the episodes flag, the study also asks what the target asks for: on random sets of
⌊target_ratio × episodes needed⌋ probed units, how often fidelity flags it, and how often any tested metric
is harmful at an unadjusted p < 0.05 — when even that is rare, no correction could meet the target.
"""

from __future__ import annotations

import random
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from agent_eval.errors import RunStoreError
from agent_eval.fidelity.probe import StepProbe
from agent_eval.fidelity.result import BuildFidelity, build_fidelity, harmful_p_values, judge
from agent_eval.fidelity.run import probed_builds, read_probes, write_json_record
from agent_eval.fidelity.time_to_flag import episode_wall_s, phones, probe_s, time_to_flag
from agent_eval.records import EpisodeRecord, StrictModel
from agent_eval.rundir import (
    FIDELITY_POWER_FILE,
    probes_dir,
    read_episodes,
    read_run_settings,
    settle_attempts,
)
from agent_eval.scoring.regression import compare_builds
from agent_eval.scoring.scorecard import resolve_reference
from agent_eval.scoring.stats import ALPHA, DEFAULT_MARGIN, Verdict

POWER_FILE = FIDELITY_POWER_FILE
TARGET_RATIO = 0.2
Unit = tuple[str, int]


class PowerRow(StrictModel):
    """One build: whether each verdict flags it on the whole run, and the units each needed."""

    build: str
    episodes_flag: bool = Field(description="The episode verdict on the whole run is REGRESSION.")
    fidelity_flag: bool = Field(description="Fidelity on every probed step flags the build (some WORSE).")
    episodes_needed: float | None = Field(
        None, description="Median paired episodes of the build from which on the episode verdict flags it."
    )
    fidelity_episodes_needed: float | None = Field(
        None, description="Median reference episodes whose steps flag it from then on."
    )
    fidelity_steps_needed: float | None = Field(None, description="Median probed steps at that point.")
    ratio: float | None = Field(None, description="fidelity_episodes_needed ÷ episodes_needed.")
    never_within: dict[str, int] = Field(
        default_factory=dict, description="Orders in which a side did not settle on flagging within the run."
    )
    budget_episodes: int | None = Field(
        None, description="The target's budget: target_ratio × episodes_needed, rounded down (≥ 1)."
    )
    flagged_at_budget: float | None = Field(
        None, description="Share of random sets of budget_episodes probed units on which fidelity flags it."
    )
    any_p05_at_budget: float | None = Field(
        None,
        description="Share of those sets where some tested metric is harmful at unadjusted p < 0.05 "
        "(no Holm): how far the budget is from any clustered test, not just from the correction.",
    )
    episodes_wall_s: float | None = Field(
        None, description="Wall seconds the episodes needed to flag it (fidelity/time_to_flag.py)."
    )
    fidelity_wall_s: float | None = Field(
        None, description="Wall seconds fidelity needed: the reference's episodes it reads, then the probes."
    )


class PowerStudy(StrictModel):
    run_id: str
    reference: str
    orders: int = Field(description="Random orders of the units; needs are medians over them.")
    units: int = Field(description="(task, seed) pairs the reference played.")
    probed_units: int = Field(description="Units whose reference steps were probed.")
    target_ratio: float = TARGET_RATIO
    rows: list[PowerRow]
    meets_target: bool = Field(
        description="Fidelity flags every build the episodes flag, each within target_ratio of the episodes."
    )


def _episode_flags(scored: Sequence[EpisodeRecord], reference: str, margin: float) -> set[str]:
    regression = compare_builds(scored, reference, margin)
    return {
        b.build for b in regression.builds if Verdict.REGRESSION in (b.navigation.verdict, b.success.verdict)
    }


def _judged(probes: dict[str, list[StepProbe]], reference: str, units: set[Unit]) -> list[BuildFidelity]:
    """Every build's fidelity on the steps of `units`, judged (Holm over every build); none without steps."""
    chosen = {b: [p for p in ps if (p.task_id, p.seed) in units] for b, ps in probes.items()}
    if not chosen[reference]:
        return []
    results = [
        build_fidelity(b, ps, chosen[reference], b == reference, with_kl=False) for b, ps in chosen.items()
    ]
    judge(results)
    return results


def _fidelity_flags(probes: dict[str, list[StepProbe]], reference: str, units: set[Unit]) -> set[str]:
    return {r.build for r in _judged(probes, reference, units) if r.flagged}


def _at_budget(
    inputs: _Inputs, build: str, budget: int, sets: int, rng: random.Random
) -> tuple[float, float]:
    """Over `sets` random sets of `budget` probed units: the share on which fidelity flags `build` (Holm over
    every build, as judged), and the share on which some metric is harmful at unadjusted p < 0.05."""
    probed = sorted(inputs.steps_in)
    flagged = unadjusted = 0
    for _ in range(sets):
        chosen = set(rng.sample(probed, min(budget, len(probed))))
        result = next(r for r in _judged(inputs.probes, inputs.reference, chosen) if r.build == build)
        flagged += result.flagged
        unadjusted += any(p < ALPHA for p in harmful_p_values(result))
    return flagged / sets, unadjusted / sets


def _settled(flags_by_k: list[set[str]], build: str) -> int | None:
    """The smallest index from which on `build` is flagged at every later index; None if not at the end."""
    if not flags_by_k or build not in flags_by_k[-1]:
        return None
    k = len(flags_by_k)
    while k > 0 and build in flags_by_k[k - 1]:
        k -= 1
    return k


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass(frozen=True)
class _Inputs:
    """What one study reads from the run directory, checked."""

    run_id: str
    reference: str
    builds: list[str]
    margin: float
    scored: list[EpisodeRecord]
    probes: dict[str, list[StepProbe]]
    steps_in: Counter[Unit]  # the reference's probed steps per unit; its keys are the probed units


def _read_inputs(run_dir: Path, margin: float | None) -> _Inputs:
    settings = read_run_settings(run_dir)
    episodes = read_episodes(run_dir)
    if not episodes:
        raise RunStoreError(f"{run_dir} has no finished episode: nothing to study")
    reference = resolve_reference(None, settings.reference, episodes)
    if reference is None:
        raise RunStoreError(f"{run_dir} names no reference build (run.json or a build manifest)")
    scored = list(settle_attempts(episodes).scored.values())
    builds = sorted({e.build for e in scored} - {reference})
    if not builds:
        raise RunStoreError(f"{run_dir} has no build besides the reference {reference!r}")
    probed = probed_builds(run_dir)
    if reference not in probed:
        raise RunStoreError(
            f"{probes_dir(run_dir)} has no probes of the reference {reference!r}: "
            f"run agent-eval fidelity {run_dir} first"
        )
    probes = {b: read_probes(run_dir, b) for b in probed}
    return _Inputs(
        run_id=settings.run_id,
        reference=reference,
        builds=builds,
        margin=margin if margin is not None else (settings.margin or DEFAULT_MARGIN),
        scored=scored,
        probes=probes,
        steps_in=Counter((p.task_id, p.seed) for p in probes[reference]),
    )


class _Needs:
    """Per build, what each side needed in each order where it settled, and the orders where it did not."""

    def __init__(self, builds: list[str]) -> None:
        self.values: dict[str, dict[str, list[float]]] = {
            b: {"episodes": [], "fidelity": [], "steps": []} for b in builds
        }
        self.never: dict[str, dict[str, int]] = {b: {} for b in builds}

    def add(self, build: str, side: str, value: float | None) -> None:
        if value is None:
            self.never[build][side] = self.never[build].get(side, 0) + 1
        else:
            self.values[build][side].append(value)


def _one_order(
    inputs: _Inputs, order: list[Unit], by_unit: dict[Unit, list[EpisodeRecord]], needs: _Needs
) -> None:
    """Walks the units in `order`, recording per build where each verdict settled on flagging it."""
    reference, builds, probes = inputs.reference, inputs.builds, inputs.probes
    episode_flags: list[set[str]] = []
    paired: dict[str, list[int]] = {b: [] for b in builds}  # the build's paired episodes per prefix
    fidelity_flags: list[set[str]] = []
    prefix: list[EpisodeRecord] = []
    seen: list[Unit] = []
    for unit in order:
        played = {e.build for e in by_unit.get(unit, [])}
        prefix.extend(by_unit.get(unit, []))
        episode_flags.append(_episode_flags(prefix, reference, inputs.margin))
        for b in builds:
            paired[b].append((paired[b][-1] if paired[b] else 0) + int(b in played))
        if unit in inputs.steps_in:
            seen.append(unit)
            fidelity_flags.append(_fidelity_flags(probes, reference, set(seen)))
    for b in builds:
        e_at, f_at = _settled(episode_flags, b), _settled(fidelity_flags, b)
        needs.add(b, "episodes", None if e_at is None else float(paired[b][e_at]))
        needs.add(b, "fidelity", None if f_at is None else float(f_at + 1))
        if f_at is not None:
            needs.add(b, "steps", float(sum(inputs.steps_in[u] for u in seen[: f_at + 1])))


def _row(build: str, needs: _Needs, whole_episodes: set[str], whole_fidelity: set[str]) -> PowerRow:
    values = needs.values[build]
    e_need, f_need = _median(values["episodes"]), _median(values["fidelity"])
    both = build in whole_episodes & whole_fidelity
    return PowerRow(
        build=build,
        episodes_flag=build in whole_episodes,
        fidelity_flag=build in whole_fidelity,
        episodes_needed=e_need if build in whole_episodes else None,
        fidelity_episodes_needed=f_need if build in whole_fidelity else None,
        fidelity_steps_needed=_median(values["steps"]) if build in whole_fidelity else None,
        ratio=f_need / e_need if e_need and f_need and both else None,
        never_within=needs.never[build],
    )


def power_study(
    run_dir: Path,
    *,
    orders: int = 20,
    margin: float | None = None,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> PowerStudy:
    """The study over `orders` random orders of the run's units (see the module's text)."""
    inputs = _read_inputs(run_dir, margin)
    reference, scored = inputs.reference, inputs.scored
    units = sorted({(e.task_id, e.seed) for e in scored if e.build == reference})
    by_unit: dict[Unit, list[EpisodeRecord]] = {}
    for e in scored:
        by_unit.setdefault((e.task_id, e.seed), []).append(e)
    # Phase 1 (units every build played) comes first in every order, then the top-up: the grid's sequence.
    everyone = {reference, *inputs.builds}
    first = [u for u in units if {e.build for e in by_unit[u]} >= everyone]
    later = [u for u in units if u not in set(first)]
    probed_units = set(inputs.steps_in)
    needs = _Needs(inputs.builds)
    rng = random.Random(seed)
    for i in range(orders):
        head, tail = first[:], later[:]
        rng.shuffle(head)
        rng.shuffle(tail)
        _one_order(inputs, head + tail, by_unit, needs)
        if progress is not None:
            progress(i + 1)
    whole_episodes = _episode_flags(scored, reference, inputs.margin)
    whole_fidelity = _fidelity_flags(inputs.probes, reference, probed_units)
    rows = [_row(b, needs, whole_episodes, whole_fidelity) for b in inputs.builds]
    flagged = [r for r in rows if r.episodes_flag]
    for r in flagged:
        if r.episodes_needed is not None and r.build in inputs.probes:
            r.budget_episodes = max(1, int(TARGET_RATIO * r.episodes_needed))
            r.flagged_at_budget, r.any_p05_at_budget = _at_budget(
                inputs, r.build, r.budget_episodes, orders, rng
            )
    _timed(run_dir, inputs, flagged)
    meets = bool(flagged) and all(
        r.fidelity_flag and r.ratio is not None and r.ratio <= TARGET_RATIO for r in flagged
    )
    return PowerStudy(
        run_id=inputs.run_id,
        reference=reference,
        orders=orders,
        units=len(units),
        probed_units=len(probed_units),
        rows=rows,
        meets_target=meets,
    )


def _timed(run_dir: Path, inputs: _Inputs, rows: list[PowerRow]) -> None:
    """Each flagged row's time to flag, from the run's episode walls and the build's probe times."""
    at_once, reference_s = phones(run_dir), episode_wall_s(inputs.scored, inputs.reference)
    for r in rows:
        r.episodes_wall_s, r.fidelity_wall_s = time_to_flag(
            r.episodes_needed,
            r.fidelity_episodes_needed,
            r.fidelity_steps_needed,
            build_episode_s=episode_wall_s(inputs.scored, r.build),
            reference_episode_s=reference_s,
            step_probe_s=probe_s(inputs.probes.get(r.build, [])),
            at_once=at_once,
        )


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:g}"


def _seconds(x: float | None) -> str:
    return "–" if x is None else f"{x:.0f}"


def _share(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def power_markdown(study: PowerStudy) -> str:
    head = (
        "| build | episodes flag | fidelity flags | episodes needed | fidelity: episodes | fidelity: steps "
        "| ratio | budget (1/5) | flags at budget | any p < 0.05 at budget | episodes' time s "
        "| fidelity's time s |"
    )
    rows = [head, "|" + "---|" * 12]
    for r in study.rows:
        ratio = "–" if r.ratio is None else f"{r.ratio:.2f}"
        rows.append(
            f"| {r.build} | {'REGRESSION' if r.episodes_flag else 'no'} "
            f"| {'WORSE' if r.fidelity_flag else 'no'} "
            f"| {_num(r.episodes_needed)} | {_num(r.fidelity_episodes_needed)} | "
            f"{_num(r.fidelity_steps_needed)} | {ratio} | {_num(r.budget_episodes)} "
            f"| {_share(r.flagged_at_budget)} | {_share(r.any_p05_at_budget)} "
            f"| {_seconds(r.episodes_wall_s)} | {_seconds(r.fidelity_wall_s)} |"
        )
    intro = (
        f"Power on {study.run_id}: medians over {study.orders} random orders of the reference's "
        f"{study.units} (task, seed) units ({study.probed_units} with probed steps); a need is the prefix "
        "from which on the verdict flags the build. Target: fidelity needs ≤ "
        f"{study.target_ratio:g} × the episodes, for every build the episodes flag: "
        f"{'met' if study.meets_target else 'not met'}. At the budget (the target's number of episodes), "
        "the share of random sets of probed units on which fidelity flags the build, and on which any "
        "tested metric is harmful at unadjusted p < 0.05."
    )
    return "\n".join([intro, "", *rows]) + "\n"


def write_power(run_dir: Path, study: PowerStudy) -> Path:
    return write_json_record(run_dir, POWER_FILE, study)
