"""The recognition gap: does a build lose completion recognition more than navigation, paired, per episode?

Tests the project's starting claim, "navigation survives quantization; recognising completion does not".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from agent_eval.records import EpisodeRecord, Outcome, StrictModel
from agent_eval.scoring.stats import Verdict, stratified_effect

Claim = Literal["holds", "fails", "undecided"]
PairKey = tuple[str, int]


def _stuck(episode: EpisodeRecord) -> int:
    # Success needs the goal to have held, so reached − success is 1 exactly when it got there unrecognised.
    return int(episode.reached) - int(episode.success)


class RecognitionGap(StrictModel):
    """How much more a build loses completion recognition than navigation against the reference."""

    pairs: int = Field(description="Paired episodes (task, seed) of the build and the reference.")
    gap: float = Field(
        description="Completion-recognition drop − navigation drop, mean over tasks: the build's share of "
        "episodes that got there unrecognised minus the reference's."
    )
    low: float = Field(
        description="One-sided lower bound of the gap at 1 − alpha / looks, on these tasks (stratified)."
    )
    high: float = Field(description="One-sided upper bound of the gap at 1 − alpha / looks.")
    claim: Claim = Field(
        description="'navigation survives while completion recognition does not': fails (navigation "
        "REGRESSION, or high < margin), holds (low > 0), else undecided."
    )
    undone: int = Field(description="The build's episodes that reached the goal, then undid it.")
    reference_undone: int = Field(description="The reference's undone episodes on the same pairs.")
    undone_where_reference_succeeded: int = Field(
        description="Pairs the reference completed and the build reached, then undid (the W4A8 shape)."
    )
    sentence: str = Field(description="The claim for this build in one plain sentence.")


def _claim(low: float, high: float, navigation: Verdict, margin: float) -> Claim:
    # A gap bounded below the margin does not matter, however surely it is above 0.
    if navigation is Verdict.REGRESSION or high < margin:
        return "fails"
    if low > 0:
        return "holds"
    return "undecided"


def _sentence(build: str, gap: RecognitionGap, navigation: Verdict) -> str:
    span = f"gap {gap.gap:+.2f} [{gap.low:+.2f}, {gap.high:+.2f}]".replace("-", "−")
    why = {
        "holds": "completion recognition drops more than navigation",
        "fails": "navigation regresses too"
        if navigation is Verdict.REGRESSION
        else "completion recognition drops no more than navigation",
        "undecided": "the pairs cannot tell",
    }[gap.claim]
    return (
        f"{build}: 'navigation survives while completion recognition does not' {gap.claim} ({why}; {span}, "
        f"{gap.pairs} pairs; reached then undone {gap.undone} vs the reference's {gap.reference_undone})"
    )


def recognition_gap(
    reference: Mapping[PairKey, EpisodeRecord],
    build: Mapping[PairKey, EpisodeRecord],
    *,
    name: str,
    navigation: Verdict,
    margin: float,
    level: float,
) -> RecognitionGap | None:
    """The gap on the paired episodes, its one-sided bounds at 1 − `level`, and the claim; None: no pairs."""
    keys = sorted(set(reference) & set(build))
    if not keys:
        return None
    differences = [_stuck(build[k]) - _stuck(reference[k]) for k in keys]
    tasks = [k[0] for k in keys]
    # Upper bound of the gap = the "drop" bound of its negation; lower bound = minus the drop bound of it.
    high = stratified_effect([-d for d in differences], tasks, level).drop_upper
    effect = stratified_effect(differences, tasks, level)
    low = -effect.drop_upper
    undone = [build[k].outcome is Outcome.UNDONE for k in keys]
    gap = RecognitionGap(
        pairs=len(keys),
        gap=effect.delta,
        low=low,
        high=high,
        claim=_claim(low, high, navigation, margin),
        undone=sum(undone),
        reference_undone=sum(reference[k].outcome is Outcome.UNDONE for k in keys),
        undone_where_reference_succeeded=sum(
            u and reference[k].success for u, k in zip(undone, keys, strict=True)
        ),
        sentence="",
    )
    gap.sentence = _sentence(name, gap, navigation)
    return gap
