"""fidelity.json: every build's step-level fidelity to the reference, with clustered intervals, paired
differences against the reference and verdicts under Holm's correction.

Verdicts are taken on four paired differences per build (action agreement, log-probability of the source's
answer, P(done) where the goal held, P(done) where it did not). The answer KL gets an interval but no test:
against itself the reference's KL is 0 by construction, so "KL > 0" would flag any build that differs at all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from agent_eval.fidelity.metrics import mean_kl
from agent_eval.fidelity.probe import StepProbe
from agent_eval.fidelity.stats import ClusteredMean, clustered_mean, paired_difference
from agent_eval.scoring.stats import ALPHA, holm

Key = tuple[str, int]
Pick = Callable[[StepProbe], float | None]


class FidelityVerdict(StrEnum):
    WORSE = "WORSE"  # differs from the reference in the harmful direction (Holm-adjusted p < alpha)
    BETTER = "BETTER"
    NOT_SHOWN = "NO DIFFERENCE SHOWN"


class MetricFidelity(BaseModel):
    """One metric of one build: its mean with a clustered interval, and Δ to the reference."""

    value: ClusteredMean
    vs_reference: ClusteredMean | None = None
    p_adjusted: float | None = Field(None, description="Holm-adjusted over every build's tested metrics.")
    verdict: FidelityVerdict | None = None


class AgreementCounts(BaseModel):
    forced: int = Field(0, description="Agreed: the source's token was the build's top token everywhere.")
    decoded_agree: int = Field(0, description="Agreed only after a greedy decode (the mask steered it back).")
    decoded_disagree: int = 0
    undecided: int = Field(0, description="Not decoded (--no-decode): counted as disagreements.")
    no_source_action: int = Field(0, description="The source's answer was invalid: left out of agreement.")


class BuildFidelity(BaseModel):
    build: str
    reference: bool = False
    steps: int
    episodes: int
    agreement: MetricFidelity
    token_top1: MetricFidelity = Field(
        description="Share of answer positions where the forced token is top-1."
    )
    kl: MetricFidelity = Field(
        description="Mean per-step KL(reference ‖ build) over answer positions (nats)."
    )
    kl_p99: float | None = None
    kl_max: float | None = None
    answer_logprob: MetricFidelity = Field(description="Log-probability of the source's whole answer.")
    p_done_goal_held: MetricFidelity
    p_done_goal_not_held: MetricFidelity
    p_done_source_said_done: MetricFidelity
    counts: AgreementCounts
    flagged: bool = Field(False, description="Some tested metric is WORSE than the reference's.")
    steps_per_min: float | None = Field(None, description="Probing throughput on this host.")


class StepPlace(BaseModel):
    """Which recorded step: its episode (directory), task, seed and step number, as a probe names it."""

    episode: str
    task_id: str
    seed: int
    step: int


class DisagreementStep(StepPlace):
    source_answer: str
    kl: dict[str, float | None]
    agrees: dict[str, bool | None]


class EarlyWarning(BaseModel):
    """`fidelity: first` in a grid: a build probed before its episodes, and whether the probes flagged it."""

    build: str
    flagged: bool = Field(description="Some tested metric is WORSE (Holm over this build's tested metrics).")
    worse: list[str] = Field(default_factory=list, description="The tested metrics found WORSE.")
    steps: int = Field(description="Recorded steps of the reference probed on the build.")
    episodes: int = Field(description="Reference episodes those steps come from.")
    probe_s: float = Field(description="Wall seconds of the probes: fidelity's time to flag, steps on disk.")
    warned_at: datetime = Field(description="When the warning was said, before the build's episodes began.")


class FidelityResult(BaseModel):
    run_id: str
    reference: str
    steps_from: str
    steps: int
    episodes: int
    skipped: dict[str, int] = Field(default_factory=dict, description="Steps left out, by reason.")
    requests: dict[str, Any] = Field(default_factory=dict, description="What every probe asked the engine.")
    builds: list[BuildFidelity]
    most_disagreeing: list[DisagreementStep] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    early_warnings: list[EarlyWarning] = Field(
        default_factory=list, description="`fidelity: first`: each build's verdict before its episodes."
    )


# The tested metrics and the direction that is harmful (+1: higher is worse, −1: lower is worse).
_TESTED: dict[str, int] = {
    "agreement": -1,
    "answer_logprob": -1,
    "p_done_goal_held": -1,
    "p_done_goal_not_held": 1,
}


TESTED_METRICS = tuple(_TESTED)


def _key(p: StepProbe) -> Key:
    return (p.episode, p.step)


def _values(probes: Sequence[StepProbe], pick: Pick) -> dict[Key, float]:
    out = {}
    for p in probes:
        value = pick(p)
        if value is not None:
            out[_key(p)] = value
    return out


def _metric(build: Sequence[StepProbe], reference: Sequence[StepProbe] | None, pick: Pick) -> MetricFidelity:
    mine = _values(build, pick)
    value = clustered_mean([(k[0], v) for k, v in mine.items()])
    diff = paired_difference(mine, _values(reference, pick)) if reference is not None else None
    return MetricFidelity(value=value, vs_reference=diff)


def _agreement(p: StepProbe) -> float | None:
    return None if p.agrees is None else float(p.agrees)


def _p_done_when(held: bool | None) -> Pick:
    def pick(p: StepProbe) -> float | None:
        if held is None:
            return p.p_done if p.said_done else None
        return p.p_done if p.goal_before is held else None

    return pick


def step_kls(build: Sequence[StepProbe], reference: Sequence[StepProbe]) -> dict[Key, float]:
    """Per step: mean KL(reference ‖ build) over the answer positions both probed."""
    ref = {_key(p): p for p in reference}
    out = {}
    for p in build:
        r = ref.get(_key(p))
        if r is None or len(r.tops) != len(p.tops):
            continue
        kl = mean_kl(
            [{int(t): v for t, v in d.items()} for d in r.tops],
            [{int(t): v for t, v in d.items()} for d in p.tops],
        )
        if kl is not None:
            out[_key(p)] = kl
    return out


def _counts(probes: Sequence[StepProbe]) -> AgreementCounts:
    c = AgreementCounts()
    for p in probes:
        if p.via == "forced":
            c.forced += 1
        elif p.via == "decoded":
            c.decoded_agree += int(bool(p.agrees))
            c.decoded_disagree += int(not p.agrees)
        elif p.via == "undecided":
            c.undecided += 1
        else:
            c.no_source_action += 1
    return c


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)]


def build_fidelity(
    name: str,
    probes: Sequence[StepProbe],
    reference: Sequence[StepProbe],
    is_reference: bool,
    *,
    with_kl: bool = True,
) -> BuildFidelity:
    """One build's numbers (tests and verdicts are filled in by `judge`); `with_kl=False` leaves the untested
    KL out (the power study asks for verdicts thousands of times)."""
    kls = step_kls(probes, reference) if with_kl else {}
    ref = None if is_reference else reference
    return BuildFidelity(
        build=name,
        reference=is_reference,
        steps=len(probes),
        episodes=len({p.episode for p in probes}),
        agreement=_metric(probes, ref, _agreement),
        token_top1=_metric(
            probes, ref, lambda p: sum(r == 1 for r in p.ranks) / len(p.ranks) if p.ranks else None
        ),
        kl=MetricFidelity(value=clustered_mean([(k[0], v) for k, v in kls.items()])),
        kl_p99=_quantile(list(kls.values()), 0.99),
        kl_max=max(kls.values(), default=None),
        answer_logprob=_metric(probes, ref, lambda p: sum(p.logprobs)),
        p_done_goal_held=_metric(probes, ref, _p_done_when(True)),
        p_done_goal_not_held=_metric(probes, ref, _p_done_when(False)),
        p_done_source_said_done=_metric(probes, ref, _p_done_when(None)),
        counts=_counts(probes),
    )


def _harmful(mean: float | None, direction: int) -> bool:
    """A difference from the reference in the metric's harmful direction (+1: higher is worse)."""
    return mean is not None and mean != 0 and (mean > 0) == (direction > 0)


def harmful_p_values(build: BuildFidelity) -> list[float]:
    """The unadjusted two-sided p of every tested metric whose difference from the reference is harmful."""
    out = []
    for name, direction in _TESTED.items():
        diff = getattr(build, name).vs_reference
        if diff is not None and diff.p_value is not None and _harmful(diff.mean, direction):
            out.append(diff.p_value)
    return out


def judge(builds: list[BuildFidelity], alpha: float = ALPHA) -> None:
    """Holm over every (build, tested metric) with a paired difference; sets verdicts and `flagged`."""
    tested: list[tuple[BuildFidelity, MetricFidelity, int]] = []
    for b in builds:
        for name, harmful in _TESTED.items():
            m: MetricFidelity = getattr(b, name)
            if m.vs_reference is not None and m.vs_reference.p_value is not None:
                tested.append((b, m, harmful))
    adjusted = holm(
        [
            m.vs_reference.p_value
            for _, m, _ in tested
            if m.vs_reference and m.vs_reference.p_value is not None
        ],
        alpha,
    )
    for (b, m, harmful), p in zip(tested, adjusted, strict=True):
        m.p_adjusted = p
        mean = m.vs_reference.mean if m.vs_reference else None
        if p >= alpha or mean is None or mean == 0:
            m.verdict = FidelityVerdict.NOT_SHOWN
        else:
            worse = _harmful(mean, harmful)
            m.verdict = FidelityVerdict.WORSE if worse else FidelityVerdict.BETTER
            b.flagged = b.flagged or worse
