"""The scorecard as plain-text tables, written as scorecard.md beside scorecard.json in the run directory.

The table builders here are shared with the terminal view, so both show the same numbers the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from agent_eval.report.busy_table import busy_table
from agent_eval.report.decomposition_section import (
    decomposition_sentences,
    stop_decision_table,
    stop_verdict_table,
)
from agent_eval.report.early_warning_section import early_warning_markdown
from agent_eval.report.family_section import ability_sentences, family_tables
from agent_eval.report.ladder_tables import ladder_tables
from agent_eval.report.recognition_section import recognition_table
from agent_eval.report.text import (
    MISSING,
    OTHER_TASKS_HEADER,
    VERDICT_NOTE,
    TextTable,
    number,
    p_value,
    rate_text,
    signed,
    span,
    verdict_interval_header,
)
from agent_eval.rundir import SCORECARD_JSON, SCORECARD_MD
from agent_eval.scoring.build_score import BuildScore, OutcomeCounts
from agent_eval.scoring.fidelity_fields import FidelityRow
from agent_eval.scoring.regression import METRIC_WORDS, MetricComparison
from agent_eval.scoring.scorecard import Scorecard
from agent_eval.scoring.splits import split_table


def _name(b: BuildScore) -> str:
    return f"{b.build} (reference)" if b.reference else b.build


# A per-build table is its columns: a header and how a build's cell reads.
Column = tuple[str, Callable[[BuildScore], str]]


def _outcome_column(name: str) -> Column:
    return name, lambda b: str(getattr(b.outcomes, name))


_RATE_COLUMNS: tuple[Column, ...] = (
    ("build", _name),
    ("scheme", lambda b: b.scheme or MISSING),
    ("bits", lambda b: number(b.bits_per_weight, 1)),
    ("episodes", lambda b: str(b.episodes)),
    ("reached in play", lambda b: rate_text(b.navigation)),
    ("recognised | reached", lambda b: rate_text(b.recognition)),
    ("success", lambda b: rate_text(b.success)),
    ("pass^1", lambda b: number(b.pass_hat_1)),
    ("pass^k", lambda b: f"{number(b.pass_hat_k)} (k={b.pass_k})" if b.pass_k else MISSING),
)
_OUTCOME_COLUMNS: tuple[Column, ...] = (
    ("build", _name),
    *(_outcome_column(name) for name in OutcomeCounts.model_fields),
    ("infra attempts", lambda b: str(b.infra_error_attempts)),
    ("unscored (infra)", lambda b: str(b.unresolved_infra_errors)),
    ("mean steps", lambda b: number(b.mean_steps, 1)),
    ("invalid actions", lambda b: f"{b.invalid_actions} ({number(b.invalid_action_rate, 3)}/step)"),
)


def per_build_table(title: str, card: Scorecard, columns: Sequence[Column]) -> TextTable:
    """One row per build of the scorecard, one cell per column."""
    rows = tuple(tuple(cell(b) for _, cell in columns) for b in card.builds)
    return TextTable(title, tuple(header for header, _ in columns), rows)


def rates_table(card: Scorecard) -> TextTable:
    return per_build_table("Rates (Wilson 95% intervals)", card, _RATE_COLUMNS)


def outcomes_table(card: Scorecard) -> TextTable:
    return per_build_table("Outcomes", card, _OUTCOME_COLUMNS)


def cost_table(card: Scorecard) -> TextTable:
    rows = []
    for b in card.builds:
        lat = b.latency_per_step
        split = (
            (MISSING,) * 6
            if lat is None
            else tuple(
                number(v)
                for v in (lat.observe_s, lat.model_s, lat.act_s, lat.check_s, lat.harness_s, lat.total_s)
            )
        )
        engine = (
            number(b.decode_tok_s, 1),
            number(b.prefill_tok_s, 1),
            number(b.peak_rss_mb, 0),
            number(b.settled_rss_mb, 0),
        )
        rows.append((_name(b), *split, *engine))
    headers = (
        "build",
        "observe s",
        "model s",
        "act s",
        "check s",
        "harness s",
        "total s/step",
        "decode tok/s",
        "prefill tok/s",
        "peak MB",
        "settled MB",
    )
    return TextTable("Cost per step, engine speed and memory", headers, tuple(rows))


def _comparison_row(build: str, bits: float | None, m: MetricComparison) -> tuple[str, ...]:
    return (
        build,
        number(bits, 1),
        METRIC_WORDS[m.metric],
        str(m.pairs),
        str(m.b),
        str(m.c),
        f"{signed(m.delta)} {span(m.low, m.high)}",
        number(m.drop_upper),
        span(m.other_tasks_low, m.other_tasks_high),
        p_value(m.p),
        p_value(m.p_holm),
        p_value(m.p_sign_flip),
        number(m.flips),
        m.verdict.value,
        MISSING if m.episodes_needed is None else str(m.episodes_needed),
    )


def regression_table(card: Scorecard) -> TextTable | None:
    reg = card.regression
    if reg is None:
        return None
    rows = tuple(
        _comparison_row(c.build, c.bits_per_weight, m) for c in reg.builds for m in (c.navigation, c.success)
    )
    headers = (
        "build",
        "bits",
        "metric",
        "pairs",
        "b",
        "c",
        verdict_interval_header([m.confidence for c in reg.builds for m in (c.navigation, c.success)]),
        "drop ≤",
        OTHER_TASKS_HEADER,
        "p",
        "p Holm",
        "p sign-flip",
        "flips",
        "verdict",
        "N needed",
    )
    title = f"Regression against {reg.reference} (margin δ = {reg.margin:.2f}, α = {reg.alpha:.2f})"
    return TextTable(title, headers, rows)


def per_task_table(card: Scorecard) -> TextTable:
    """Tasks down, builds across: navigation and success counts of each."""
    tasks = sorted({t.task_id for b in card.builds for t in b.per_task})
    rows = []
    for task in tasks:
        cells = [task]
        for b in card.builds:
            score = next((t for t in b.per_task if t.task_id == task), None)
            cells.append(
                MISSING
                if score is None
                else f"{score.navigation.count}/{score.episodes} · {score.success.count}/{score.episodes}"
            )
        rows.append(tuple(cells))
    headers = ("task", *(b.build for b in card.builds))
    return TextTable("Per task: reached · success, of scored episodes", headers, tuple(rows))


def drill_down_table(card: Scorecard) -> TextTable | None:
    reg = card.regression
    if reg is None:
        return None
    rows = tuple(
        (
            c.build,
            t.task_id,
            METRIC_WORDS[t.metric],
            str(t.pairs),
            str(t.b),
            str(t.c),
            signed(t.delta),
            p_value(t.p),
            p_value(t.p_bh),
        )
        for c in reg.builds
        for t in c.per_task
    )
    headers = ("build", "task", "metric", "pairs", "b", "c", "Δ", "p", "p BH")
    return TextTable("Drill-down by task (exploratory; Benjamini–Hochberg)", headers, rows)


def scorecard_tables(card: Scorecard, *, drill_down: bool) -> list[TextTable | None]:
    """The tables scorecard.md and the terminal both show, in order (None: the run has no such table)."""
    tables = [
        rates_table(card),
        outcomes_table(card),
        cost_table(card),
        regression_table(card),
        stop_decision_table(card),
        stop_verdict_table(card),
        per_task_table(card),
    ]
    return [*tables, drill_down_table(card)] if drill_down else tables


def sentences(card: Scorecard) -> list[str]:
    said = [c.sentence for c in card.regression.builds] if card.regression else []
    return said + decomposition_sentences(card)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_table(table: TextTable) -> str:
    lines = [f"## {table.title}", "", "| " + " | ".join(_cell(h) for h in table.headers) + " |"]
    lines.append("|" + "|".join("---" for _ in table.headers) + "|")
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]
    return "\n".join(lines)


def fidelity_table(rows: list[FidelityRow] | None) -> TextTable | None:
    """scorecard.md's table; None when the run has no fidelity.json."""
    if not rows:
        return None
    body = []
    for r in rows:
        flagged = ", ".join(f"{m} {v}" for m, v in r.verdicts.items() if v != "NO DIFFERENCE SHOWN")
        interval = (
            f"[{number(r.agreement_low)}, {number(r.agreement_high)}]" if r.agreement_low is not None else ""
        )
        body.append(
            (
                r.build,
                str(r.steps),
                f"{number(r.agreement)} {interval}".strip(),
                number(r.agreement_delta),
                number(r.kl, 4),
                number(r.answer_logprob_delta),
                number(r.p_done_goal_held, 3),
                number(r.p_done_goal_not_held, 3),
                ("WORSE: " if r.flagged else "") + (flagged or "none"),
            )
        )
    headers = (
        "build",
        "steps",
        "agreement [95% CI]",
        "Δ agreement",
        "KL ≥ (nats)",
        "Δ log P(answer)",
        "P(done) goal held",
        "P(done) goal not held",
        "verdicts (Holm)",
    )
    return TextTable("Teacher-forced fidelity (reference's recorded steps)", headers, tuple(body))


def render_markdown(card: Scorecard) -> str:
    """scorecard.md: the verdicts first, then every table of the scorecard."""
    parts = [f"# Scorecard: run {card.run_id}", ""]
    said = sentences(card)
    if card.ladder is not None:
        said = [f"Ladder: {card.ladder.sentence}", *ability_sentences(card)[:1], *said]
    if said:
        parts += ["## Verdicts", "", *(f"- {s}" for s in said), ""]
    parts += early_warning_markdown(card)
    if card.notes:
        parts += ["## Notes", "", *(f"- {n}" for n in card.notes), ""]
    tables = [
        *scorecard_tables(card, drill_down=True),
        recognition_table(card),
        busy_table(card),
        *ladder_tables(card),
        fidelity_table(card.fidelity),
    ]
    parts += [markdown_table(t) + "\n" for t in tables if t is not None]
    parts += split_table(card.splits)
    parts += [markdown_table(t) + "\n" for t in family_tables(card) if t is not None]
    parts += [f"- {s}" for s in ability_sentences(card)[1:]] + ([""] if ability_sentences(card)[1:] else [])
    parts.append(VERDICT_NOTE)
    return "\n".join(parts) + "\n"


def _write_atomically(path: Path, text: str) -> None:
    # A reader (the report server, a second `report`) never sees half a file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_scorecard(run_dir: Path, card: Scorecard) -> tuple[Path, Path]:
    """Write scorecard.json and scorecard.md into the run directory; return their paths."""
    json_path, md_path = run_dir / SCORECARD_JSON, run_dir / SCORECARD_MD
    _write_atomically(json_path, card.model_dump_json(indent=2) + "\n")
    _write_atomically(md_path, render_markdown(card))
    return json_path, md_path
