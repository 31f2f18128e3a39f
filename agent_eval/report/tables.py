"""The report's HTML tables (scorecard, outcomes, engine, regression, per task), from the Scorecard itself.

Every number carries `data-path` (its place in scorecard.json) and `data-value` (its exact value there), so
the page can be checked against scorecard.json number by number.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from html import escape

from pydantic import BaseModel

from agent_eval.report.text import VERDICT_NOTE
from agent_eval.scoring.build_score import Rate
from agent_eval.scoring.regression import METRIC_WORDS, MetricComparison
from agent_eval.scoring.scorecard import Scorecard

Format = Callable[[float], str]


def _json(value: object) -> str:
    return escape(json.dumps(value))


def fixed(places: int) -> Format:
    return lambda v: f"{v:.{places}f}"


def signed(v: float) -> str:
    return "0.00" if abs(v) < 0.005 else f"{v:+.2f}".replace("-", "−")


def p_value(v: float) -> str:
    return f"{v:.3g}" if v >= 0.001 else f"{v:.1e}"


def whole(v: float) -> str:
    return f"{v:.0f}"


def num(value: float | int | None, path: str, fmt: Format | None = None, tag: str = "span") -> str:
    """One number from scorecard.json, shown rounded and carrying its exact value."""
    shown = "–" if value is None else (fmt or fixed(2))(value)
    return f'<{tag} class="num" data-path="{escape(path)}" data-value="{_json(value)}">{shown}</{tag}>'


def td(value: float | int | None, path: str, fmt: Format | None = None) -> str:
    return num(value, path, fmt, tag="td")


TWO = fixed(2)


def _cells(source: BaseModel | None, prefix: str, fields: Sequence[tuple[str, Format]]) -> str:
    """One <td> per field of `source` (a model at `prefix` in scorecard.json); all "–" when it is absent."""
    return "".join(
        td(getattr(source, name) if source is not None else None, f"{prefix}.{name}", fmt)
        for name, fmt in fields
    )


def _rate_cells(r: Rate, path: str) -> str:
    interval = f"[{num(r.low, path + '.low')}, {num(r.high, path + '.high')}]" if r.rate is not None else ""
    counts = f"{num(r.count, path + '.count', whole)}/{num(r.of, path + '.of', whole)}"
    return f'{td(r.rate, path + ".rate")}<td class="ci">{interval} {counts}</td>'


def _table(headers: Sequence[str], rows: Sequence[str], table_id: str) -> str:
    head = "".join(f'<th class="{"name" if i == 0 else ""}">{h}</th>' for i, h in enumerate(headers))
    # Wide tables scroll inside their own box rather than pushing the page sideways.
    table = f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    return f'<div class="wide">{table}</div>'


def _build_name(name: str, reference: bool) -> str:
    return f'<td class="name">{escape(name)}{" (reference)" if reference else ""}</td>'


SCORECARD_HEADERS = ["build", "scheme", "bits", "episodes", "reached in play", "95% CI", "recognition",
                     "95% CI", "success", "95% CI", "pass^1", "pass^k", "k", "mean steps", "invalid",
                     "per step", "infra errors"]  # fmt: skip
BUILD_HEAD = [("bits_per_weight", fixed(1)), ("episodes", whole)]
BUILD_TAIL = [("pass_hat_1", TWO), ("pass_hat_k", TWO), ("pass_k", whole), ("mean_steps", fixed(1)),
              ("invalid_actions", whole), ("invalid_action_rate", fixed(3)),
              ("infra_error_attempts", whole)]  # fmt: skip
OUTCOME_NAMES = ("success", "undone", "no_stop", "premature_done", "nav_fail", "wrong_answer")
PHASES = ("observe_s", "model_s", "act_s", "check_s", "harness_s", "total_s")
ENGINE = [("decode_tok_s", fixed(1)), ("prefill_tok_s", fixed(1)), ("peak_rss_mb", whole),
          ("settled_rss_mb", whole)]  # fmt: skip
COMPARISON_HEADERS = ["build", "bits", "metric", "pairs", "b", "c", "reference", "build", "Δ",
                      "CI (these tasks)", "drop ≤", "other tasks [95% CI]", "p", "p Holm", "p sign-flip",
                      "flips", "verdict", "N needed"]  # fmt: skip
COMPARISON_HEAD = [("pairs", whole), ("b", whole), ("c", whole), ("reference_rate", TWO), ("build_rate", TWO),
                   ("delta", signed)]  # fmt: skip
COMPARISON_TAIL = [("p", p_value), ("p_holm", p_value), ("p_sign_flip", p_value), ("flips", TWO)]  # fmt: skip
DRILL_DOWN = [
    ("pairs", whole),
    ("b", whole),
    ("c", whole),
    ("delta", signed),
    ("p", p_value),
    ("p_bh", p_value),
]


def scorecard_table(card: Scorecard) -> str:
    rows = []
    for i, b in enumerate(card.builds):
        p = f"builds.{i}"
        rates = "".join(
            _rate_cells(getattr(b, m), f"{p}.{m}") for m in ("navigation", "recognition", "success")
        )
        rows.append(
            f'<tr data-build="{escape(b.build)}">{_build_name(b.build, b.reference)}'
            f'<td class="name">{escape(b.scheme or "")}</td>'
            + _cells(b, p, BUILD_HEAD)
            + rates
            + _cells(b, p, BUILD_TAIL)
            + "</tr>"
        )
    return _table(SCORECARD_HEADERS, rows, "scorecard")


def outcomes_table(card: Scorecard) -> str:
    headers = ["build", *OUTCOME_NAMES, "infra-error attempts", "unresolved"]
    rows = []
    for i, b in enumerate(card.builds):
        p = f"builds.{i}"
        rows.append(
            f"<tr>{_build_name(b.build, b.reference)}"
            + _cells(b.outcomes, f"{p}.outcomes", [(o, whole) for o in OUTCOME_NAMES])
            + _cells(b, p, [("infra_error_attempts", whole), ("unresolved_infra_errors", whole)])
            + "</tr>"
        )
    return _table(headers, rows, "outcomes")


def engine_table(card: Scorecard) -> str:
    headers = ["build", *(f"{ph[:-2]} s/step" for ph in PHASES), "decode tok/s", "prefill tok/s", "peak MB",
               "settled MB"]  # fmt: skip
    rows = []
    for i, b in enumerate(card.builds):
        p = f"builds.{i}"
        rows.append(
            f"<tr>{_build_name(b.build, b.reference)}"
            + _cells(b.latency_per_step, f"{p}.latency_per_step", [(ph, fixed(3)) for ph in PHASES])
            + _cells(b, p, ENGINE)
            + "</tr>"
        )
    return _table(headers, rows, "engine")


def _comparison_row(build: str, bits: float | None, m: MetricComparison, p: str) -> str:
    low, high = num(m.low, p + ".low", signed), num(m.high, p + ".high", signed)
    interval = f"[{low}, {high}]" if m.low is not None else ""
    o_low = num(m.other_tasks_low, p + ".other_tasks_low", signed)
    o_high = num(m.other_tasks_high, p + ".other_tasks_high", signed)
    other = f"[{o_low}, {o_high}]" if m.other_tasks_low is not None else ""
    verdict = m.verdict.value
    return (
        f'<tr data-build="{escape(build)}" data-metric="{m.metric}"><td class="name">{escape(build)}</td>'
        f"{td(bits, p.rsplit('.', 1)[0] + '.bits_per_weight', fixed(1))}"
        f'<td class="name">{METRIC_WORDS[m.metric]}</td>'
        + _cells(m, p, COMPARISON_HEAD)
        + f'<td class="ci" title="{m.confidence:.0%}, stratified by task">{interval}</td>'
        + _cells(m, p, [("drop_upper", TWO)])
        + f'<td class="ci">{other}</td>'
        + _cells(m, p, COMPARISON_TAIL)
        + f'<td class="name verdict-{verdict}" data-path="{p}.verdict" data-value="{_json(verdict)}">'
        + f"{verdict}</td>"
        + _cells(m, p, [("episodes_needed", whole)])
        + "</tr>"
    )


def regression_table(card: Scorecard) -> str:
    reg = card.regression
    if reg is None:
        return '<p class="note">No regression verdicts: this run has no reference build to compare with.</p>'
    rows = []
    for i, c in enumerate(reg.builds):
        for metric in (c.navigation, c.success):
            rows.append(
                _comparison_row(c.build, c.bits_per_weight, metric, f"regression.builds.{i}.{metric.metric}")
            )
    sentences = "".join(
        f'<li data-path="regression.builds.{i}.sentence" data-value="{_json(c.sentence)}">'
        f"{escape(c.sentence)}</li>"
        for i, c in enumerate(reg.builds)
    )
    settings = (
        f"reference {escape(reg.reference)}, margin δ = {num(reg.margin, 'regression.margin')}, "
        f"α = {num(reg.alpha, 'regression.alpha')}"
    )
    note = f'<p class="note">{escape(VERDICT_NOTE)}</p>'
    return (
        f'<p>{settings}</p><ul class="sentences">{sentences}</ul>'
        + _table(COMPARISON_HEADERS, rows, "regression")
        + note
    )


def per_task_table(card: Scorecard) -> str:
    """Navigation and success per task (rows) and build (columns)."""
    tasks = sorted({t.task_id for b in card.builds for t in b.per_task})
    headers = ["task"] + [f"{escape(b.build)} nav / success" for b in card.builds]
    rows = []
    for task in tasks:
        cells = []
        for i, b in enumerate(card.builds):
            j = next((j for j, t in enumerate(b.per_task) if t.task_id == task), None)
            if j is None:
                cells.append("<td>–</td>")
                continue
            t, p = b.per_task[j], f"builds.{i}.per_task.{j}"
            navigation = num(t.navigation.rate, p + ".navigation.rate")
            success = num(t.success.rate, p + ".success.rate")
            of = num(t.episodes, p + ".episodes", whole)
            cells.append(f'<td>{navigation} / {success} <span class="ci">of {of}</span></td>')
        rows.append(f'<tr><td class="name">{escape(task)}</td>{"".join(cells)}</tr>')
    return _table(headers, rows, "per-task")


def drill_down_table(card: Scorecard) -> str:
    reg = card.regression
    if reg is None:
        return ""
    headers = ["build", "task", "metric", "pairs", "b", "c", "Δ", "p", "p BH"]
    rows = []
    for i, comparison in enumerate(reg.builds):
        for j, t in enumerate(comparison.per_task):
            rows.append(
                f'<tr><td class="name">{escape(comparison.build)}</td>'
                f'<td class="name">{escape(t.task_id)}</td><td class="name">{METRIC_WORDS[t.metric]}</td>'
                + _cells(t, f"regression.builds.{i}.per_task.{j}", DRILL_DOWN)
                + "</tr>"
            )
    return _table(headers, rows, "drill-down")
