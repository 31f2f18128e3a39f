"""runs/<id>/report.html: the scorecard, regression verdicts, plots and trajectory viewer as one static page.

The page opens from file:// with no network; screenshots are linked by relative path, as cached thumbnails.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from agent_eval.records import EpisodeRecord
from agent_eval.report.builds_table import builds_table
from agent_eval.report.decomposition_section import decomposition_html
from agent_eval.report.early_warning_section import early_warning_html
from agent_eval.report.family_section import families_html
from agent_eval.report.fidelity_section import fidelity_html
from agent_eval.report.ladder_plot import ladder_figures
from agent_eval.report.page_assets import SCRIPT, STYLE
from agent_eval.report.plots import Interval, Part, grouped_bars, rates_chart, stacked_bars
from agent_eval.report.recognition_section import recognition_html
from agent_eval.report.tables import (
    OUTCOME_NAMES,
    drill_down_table,
    engine_table,
    outcomes_table,
    per_task_table,
    regression_table,
    scorecard_table,
)
from agent_eval.report.thumbnails import thumbnails
from agent_eval.report.trajectory import episode_view, screenshots
from agent_eval.rundir import (
    REPORT_FILE,
    SettledEpisodes,
    read_engines,
    read_episodes,
    read_probes,
    read_steps,
    settle_attempts,
)
from agent_eval.scoring.scorecard import Scorecard

# A first report of a big run at full resolution would spend most of its time making thumbnails; past this,
# the remaining steps show their full screenshots (lazily), and the next report makes more.
THUMBNAIL_BUDGET_S = 6.0
OUTCOME_COLORS = {
    "success": "#2e8b57",
    "undone": "#e08a2c",
    "no_stop": "#c9a227",
    "premature_done": "#8062a8",
    "nav_fail": "#c0392b",
    "wrong_answer": "#3a7ca5",
    "infra_error": "#7a7a7a",
}
PHASE_COLORS = ("#7a9cc6", "#3b6fb6", "#4c9a5b", "#c9a227", "#999")


def _plots(card: Scorecard) -> str:
    names = [b.build for b in card.builds]
    metrics = {"navigation": "reached in play", "recognition": "recognition", "success": "success"}
    rates: dict[tuple[str, str], Interval] = {}
    for b in card.builds:
        for field, label in metrics.items():
            r = getattr(b, field)
            if r.rate is not None and r.low is not None and r.high is not None:
                rates[b.build, label] = Interval(r.rate, r.low, r.high)
    outcome_parts = [Part(o, OUTCOME_COLORS[o]) for o in OUTCOME_NAMES]
    outcomes = {b.build: [float(getattr(b.outcomes, o)) for o in OUTCOME_NAMES] for b in card.builds}
    phases = ("observe_s", "model_s", "act_s", "check_s", "harness_s")
    latency = {
        b.build: [getattr(b.latency_per_step, ph) for ph in phases] for b in card.builds if b.latency_per_step
    }
    memory = {b.build: [b.peak_rss_mb, b.settled_rss_mb] for b in card.builds}
    speed = {b.build: [b.decode_tok_s, b.prefill_tok_s] for b in card.builds}
    figures = [
        ("rates", rates_chart(names, list(metrics.values()), rates), "Rates with Wilson 95% intervals"),
        (
            "outcomes",
            stacked_bars(names, outcome_parts, outcomes, "episodes", "Outcomes per build"),
            "Outcomes",
        ),
        (
            "latency",
            stacked_bars(
                names,
                [Part(ph[:-2], c) for ph, c in zip(phases, PHASE_COLORS, strict=True)],
                latency,
                "s/step",
                "Mean seconds per step by phase",
            ),
            "Where a step's time goes",
        ),
        (
            "memory",
            grouped_bars(
                names, [Part("peak", "#b54a4a"), Part("settled", "#e0a0a0")], memory, "MB", "Engine memory"
            ),
            "Engine memory (RssAnon)",
        ),
        (
            "speed",
            grouped_bars(
                names,
                [Part("decode", "#3b6fb6"), Part("prefill", "#9db7dc")],
                speed,
                "tok/s",
                "Engine throughput",
            ),
            "Engine throughput",
        ),
    ]
    figures += ladder_figures(card)
    return "".join(
        f'<figure id="plot-{key}">{svg}<figcaption>{escape(caption)}</figcaption></figure>'
        for key, svg, caption in figures
    )


def _matrix(episodes: SettledEpisodes, builds: Sequence[str]) -> str:
    """Task × seed grid: a cell has one coloured dot per build and opens that (task, seed) in the viewer."""
    by_cell: dict[tuple[str, int], dict[str, EpisodeRecord]] = {}
    for e in episodes.final:
        by_cell.setdefault((e.task_id, e.seed), {})[e.build] = e
    seeds = sorted({seed for _, seed in by_cell})
    head = "<th class='name'>task</th>" + "".join(f"<th>{s}</th>" for s in seeds)
    rows = []
    for task in episodes.tasks:
        cells = []
        for seed in seeds:
            cell = by_cell.get((task, seed))
            if not cell:
                cells.append("<td></td>")
                continue
            dots = "".join(
                f'<span class="dot" style="background:{OUTCOME_COLORS[cell[b].outcome.value]}" '
                f'title="{escape(b)}: {cell[b].outcome.value}"></span>'
                for b in builds
                if b in cell
            )
            outcomes = " ".join(sorted({e.outcome.value for e in cell.values()}))
            cells.append(
                f'<td class="cell" data-task="{escape(task)}" data-seed="{seed}" data-outcomes="{outcomes}">'
                f"{dots}</td>"
            )
        rows.append(f'<tr><td class="name">{escape(task)}</td>{"".join(cells)}</tr>')
    legend = " ".join(
        f'<button class="outcome o-{o} filter" data-outcome="{o}" title="show only cells with a {o} episode">'
        f"{o}</button>"
        for o in OUTCOME_COLORS
    )
    order = ", ".join(escape(b) for b in builds)
    return (
        f"<p>Each cell is one (task, seed); dots are builds in the order {order}. Click an outcome to keep "
        f"only the cells that have it (previous / next follow): {legend}</p>"
        f'<table id="matrix"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _json_script(element_id: str, value: Any) -> str:
    # A model's answer may hold "</script>" or "<!--", which would end or derail the element: no "<" at all.
    text = json.dumps(value, separators=(",", ":")).replace("<", "\\u003c")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def _header(card: Scorecard, episodes: SettledEpisodes) -> str:
    notes = "".join(f"<li>{escape(n)}</li>" for n in card.notes)
    return (
        f"<h1>agent-eval report · run {escape(card.run_id)}</h1>"
        f"<p>{len(card.builds)} builds, {len(episodes.tasks)} tasks, "
        f'<span data-path="episode_records" data-value="{card.episode_records}">{card.episode_records}</span>'
        " "
        f"episode records ({len(episodes.retried)} infra-error attempts retried). "
        f"Reached in play = P(the goal held at some point of the ordinary episode), where a premature done "
        f"counts against it too; navigation as an ability is the probe's, P(reached | cannot stop). "
        f"Recognition = P(success | reached); success = P(said done while the goal held, and kept it). "
        f"Intervals are Wilson 95%.</p>" + (f'<ul class="notes">{notes}</ul>' if notes else "")
    )


def render_report(
    run_dir: Path, card: Scorecard, thumbnail_budget_s: float | None = THUMBNAIL_BUDGET_S
) -> str:
    """The whole page as text; thumbnails are made on the way (under run_dir/thumbs) for up to the budget."""
    episodes = settle_attempts(read_episodes(run_dir))
    builds = [b.build for b in card.builds] + [
        b for b in episodes.builds if b not in {x.build for x in card.builds}
    ]
    shown = [*episodes.final, *settle_attempts(read_probes(run_dir)).final]  # probes beside their episodes
    steps = {id(e): read_steps(run_dir, e) for e in shown}
    shots = [s for e in shown for s in screenshots(run_dir, e, steps[id(e)])]
    made = thumbnails(run_dir, shots, thumbnail_budget_s)
    views = [episode_view(run_dir, e, steps[id(e)], made) for e in shown]
    sections = [
        _header(card, episodes),
        "<h2>Scorecard</h2>",
        scorecard_table(card),
        "<h2>Regression against the reference</h2>",
        regression_table(card),
        decomposition_html(card),
        recognition_html(card),
        "<h2>Plots</h2>",
        f'<div class="plots">{_plots(card)}</div>',
        "<h2>Outcomes</h2>",
        outcomes_table(card),
        "<h2>Engine: latency, speed, memory</h2>",
        engine_table(card),
        "<h2>What served each build</h2>",
        builds_table(builds, episodes.final, read_engines(run_dir)),
        families_html(card),
        "<h2>Per task</h2>",
        per_task_table(card),
        "<details><summary>Per-task drill-down of the regression (exploratory, BH-adjusted)</summary>",
        drill_down_table(card),
        "</details>",
        fidelity_html(run_dir, card.fidelity),
        early_warning_html(card),
        "<h2>Trajectories</h2>",
        _matrix(episodes, builds),
        '<div class="nav"><button id="prev">← previous</button><button id="next">next →</button> '
        "(or the arrow keys)</div>",
        '<div id="viewer"></div>',
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>agent-eval · {escape(card.run_id)}</title><style>{STYLE}</style></head><body>"
        + "".join(sections)
        + _json_script("scorecard-data", card.model_dump(mode="json"))
        + _json_script("builds-order", builds)
        + _json_script("episodes-data", views)
        + f"<script>{SCRIPT}</script></body></html>"
    )


def write_html_report(
    run_dir: Path, scorecard: Scorecard, thumbnail_budget_s: float | None = THUMBNAIL_BUDGET_S
) -> Path:
    """Write runs/<id>/report.html for `scorecard` (the one written to scorecard.json); return its path.

    thumbnail_budget_s=None makes every missing thumbnail, however long it takes.
    """
    page = render_report(run_dir, scorecard, thumbnail_budget_s)
    target = run_dir / REPORT_FILE
    # Written aside and renamed, so a browser or `view` never reads half a page.
    fd, temporary = tempfile.mkstemp(dir=run_dir, prefix=".report-", suffix=".html")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(page)
    os.chmod(temporary, 0o644)
    os.replace(temporary, target)
    return target
