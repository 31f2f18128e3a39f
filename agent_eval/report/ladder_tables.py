"""The ladder's tables for scorecard.md: rungs by bits with verdicts, and the per-task drill-down."""

from __future__ import annotations

from agent_eval.report.text import MISSING, TextTable, number, rate_text, signed
from agent_eval.scoring.ladder import Ladder, LadderRung
from agent_eval.scoring.regression import MetricComparison
from agent_eval.scoring.scorecard import Scorecard


def _verdict(m: MetricComparison | None) -> str:
    if m is None:
        return "reference"
    interval = f" [{signed(m.low)}, {signed(m.high)}]" if m.low is not None else ""
    return f"{signed(m.delta)}{interval} {m.verdict.value}"


def _speed(rung: LadderRung) -> str:
    whose = " (bf16's)" if rung.served == "bf16" else ""
    if rung.decode_tok_s is None and rung.peak_rss_mb is None:
        return MISSING
    drawn = MISSING
    if rung.effective_gbs is not None:
        share = f" = {rung.ceiling_share:.1%} of the read ceiling" if rung.ceiling_share is not None else ""
        drawn = (
            f"{(rung.weight_bytes_per_token or 0) / 1e6:.0f} MB/token → {rung.effective_gbs:.2f} GB/s{share}"
        )
    return f"{number(rung.decode_tok_s, 1)} tok/s, {number(rung.peak_rss_mb, 0)} MB{whose}; {drawn}"


def ladder_table(ladder: Ladder) -> TextTable:
    rows = tuple(
        (
            r.build,
            r.label,
            number(r.bits_per_weight, 2),
            rate_text(r.navigation),
            _verdict(r.navigation_delta),
            rate_text(r.success),
            _verdict(r.success_delta),
            _speed(r),
        )
        for r in ladder.rungs
    )
    headers = (
        "rung",
        "grid",
        "bits/weight",
        "navigation",
        "Δ navigation, verdict",
        "success",
        "Δ completion recognition, verdict",
        "decode, peak memory; weight bandwidth",
    )
    return TextTable(
        "Quantization ladder (rounded rungs: behaviour only, speed/memory are bf16's)", headers, rows
    )


def ladder_per_task(card: Scorecard, ladder: Ladder) -> TextTable:
    """Tasks down, rungs across: each rung's Δ against the reference on the task, navigation · success."""
    comparisons = {c.build: c for c in card.regression.builds} if card.regression else {}
    rungs = [r.build for r in ladder.rungs if r.build in comparisons]
    deltas = {(name, t.task_id, t.metric): t.delta for name in rungs for t in comparisons[name].per_task}
    tasks = sorted({task for _, task, _ in deltas})
    rows = []
    for task in tasks:
        cells = [task]
        for name in rungs:
            nav, success = deltas.get((name, task, "navigation")), deltas.get((name, task, "success"))
            cells.append(f"{signed(nav)} · {signed(success)}")
        rows.append(tuple(cells))
    title = "Ladder per task: Δ against the reference, navigation · completion recognition (exploratory)"
    return TextTable(title, ("task", *rungs), tuple(rows))


def ladder_tables(card: Scorecard) -> list[TextTable]:
    return [] if card.ladder is None else [ladder_table(card.ladder), ladder_per_task(card, card.ladder)]
