"""Navigation and recognition apart, in scorecard.md, the terminal and report.html: the probe's navigation,
the stop decision per build, and the three paired verdicts against the reference."""

from __future__ import annotations

import json
from html import escape

from agent_eval.report.text import (
    MISSING,
    OTHER_TASKS_HEADER,
    TextTable,
    number,
    p_value,
    rate_text,
    signed,
    span,
    verdict_interval_header,
)
from agent_eval.scoring.build_score import Rate
from agent_eval.scoring.regression import METRIC_WORDS, MetricComparison
from agent_eval.scoring.scorecard import Scorecard


def _maybe(r: Rate | None) -> str:
    return MISSING if r is None else rate_text(r)


def stop_decision_table(card: Scorecard) -> TextTable | None:
    """One row per build: probe navigation and where it came from, and the stop decision's numbers."""
    d = card.decomposition
    if d is None:
        return None
    rows = []
    for s in d.builds:
        per_step = number(s.false_done_per_step, 3)
        if s.false_done_per_step_low is not None and s.false_done_per_step_high is not None:
            per_step += f" [{s.false_done_per_step_low:.3f}, {s.false_done_per_step_high:.3f}]"
        rows.append(
            (
                s.build,
                _maybe(s.probe_navigation),
                f"{s.probes} / {s.imputed} / {s.unknown}",
                f"{s.replayed}/{s.replay_checked}" if s.replay_checked else MISSING,
                rate_text(s.sensitivity),
                rate_text(s.false_done),
                f"{per_step} of {s.away_steps}",
                f"{s.stopped_early} → {_maybe(s.stopped_early_reached)}",
                str(s.undone),
                str(s.wrong_answers),
                number(s.auroc, 3) + (f" ({s.auroc_steps} steps)" if s.auroc is not None else ""),
            )
        )
    headers = (
        "build",
        "probe navigation",
        "probed / imputed / unknown",
        "replay checked",
        "sensitivity",
        "false done / episode",
        "false done / step",
        "stopped early → probe reached",
        "undone",
        "wrong answers",
        "AUROC P(done)",
    )
    title = "Navigation and recognition apart (probe navigation: stopping taken away; Wilson 95%)"
    if not d.probes:
        title += " — no navigation probes in this run: run the grid with navigation_probes: stopped"
    return TextTable(title, headers, tuple(rows))


def _row(build: str, m: MetricComparison) -> tuple[str, ...]:
    return (
        build,
        METRIC_WORDS[m.metric],
        str(m.pairs),
        str(m.b),
        str(m.c),
        number(m.reference_rate),
        number(m.build_rate),
        f"{signed(m.delta)} {span(m.low, m.high)}",
        number(m.drop_upper),
        span(m.other_tasks_low, m.other_tasks_high),
        p_value(m.p_holm),
        m.verdict.value,
    )


def stop_verdict_table(card: Scorecard) -> TextTable | None:
    """The paired verdicts on the three abilities (one Holm family over builds × abilities) and the claim."""
    d = card.decomposition
    if d is None or not d.comparisons:
        return None
    rows = []
    confidences: list[float] = []
    for c in d.comparisons:
        tested = (
            (c.probe_navigation, c.sensitivity, c.false_done) if d.probes else (c.sensitivity, c.false_done)
        )
        rows += [_row(c.build, m) for m in tested]
        confidences += [m.confidence for m in tested]
    shown = verdict_interval_header(confidences)
    headers = ("build", "ability", "pairs", "b", "c", "reference", "build", shown, "drop ≤",
               OTHER_TASKS_HEADER, "p Holm", "verdict")  # fmt: skip
    title = "Navigation and recognition against the reference (paired; Holm over builds × abilities)"
    return TextTable(title, headers, tuple(rows))


def decomposition_sentences(card: Scorecard) -> list[str]:
    d = card.decomposition
    return [c.sentence for c in d.comparisons] if d is not None and d.probes else []


def decomposition_html(card: Scorecard) -> str:
    """The two tables as HTML, each sentence with its scorecard.json path; empty without a decomposition."""
    parts = []
    for table in (stop_decision_table(card), stop_verdict_table(card)):
        if table is None:
            continue
        head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in table.rows)
        parts.append(
            f'<h3>{escape(table.title)}</h3><div class="wide"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>"
        )
    d = card.decomposition
    if d is not None and d.probes:
        items = "".join(
            f'<li data-path="decomposition.comparisons.{i}.sentence" '
            f'data-value="{escape(json.dumps(c.sentence))}">{escape(c.sentence)}</li>'
            for i, c in enumerate(d.comparisons)
        )
        parts.append(f'<ul class="sentences">{items}</ul>')
    return "<h2>Navigation and recognition apart</h2>" + "".join(parts) if parts else ""
