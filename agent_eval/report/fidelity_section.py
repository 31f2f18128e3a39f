"""report.html's fidelity section: a plot of agreement and KL per build, and the steps where the builds
disagree most, each opening its episode in the trajectory viewer (scorecard.md's table: `markdown`)."""

from __future__ import annotations

from html import escape
from pathlib import Path

from agent_eval.report.plots import PALETTE, Interval, _svg, rates_chart
from agent_eval.report.text import number
from agent_eval.scoring.fidelity_fields import FidelityRow, read_fidelity_json


def _kl_chart(rows: list[FidelityRow]) -> str:
    left, top, bar_h, width = 90, 20, 22, 420
    top_kl = max((r.kl_high or r.kl or 0.0) for r in rows) or 1.0
    body = [f'<text x="{left}" y="14">mean per-step KL(reference ‖ build), nats (lower bound)</text>']
    for i, r in enumerate(rows):
        y = top + i * (bar_h + 8)
        w = (width - left - 60) * (r.kl or 0.0) / top_kl
        body.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{escape(r.build)}</text>')
        body.append(
            f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="{PALETTE[i % len(PALETTE)]}"/>'
        )
        body.append(f'<text x="{left + w + 4:.1f}" y="{y + 15}">{number(r.kl, 4)}</text>')
    return _svg(width, top + len(rows) * (bar_h + 8) + 10, body, "answer KL per build")


def _viewer_link(task: str, seed: int, text: str) -> str:
    # The trajectory viewer opens a (task, seed) when its matrix cell is clicked.
    selector = f'#matrix td.cell[data-task="{escape(task)}"][data-seed="{seed}"]'
    return (
        f'<a href="#viewer" onclick=\'var c=document.querySelector({escape(repr(selector))});'
        f"if(c)c.click();'>{escape(text)}</a>"
    )


def _agrees(value: bool | None) -> str:
    return "–" if value is None else ("yes" if value else "no")


def _disagreements(run_dir: Path) -> str:
    result = read_fidelity_json(run_dir)
    if result is None:
        return ""
    builds = [str(b["build"]) for b in result.get("builds", []) if not b.get("reference")]
    head = "".join(f"<th>{escape(b)}: agrees / KL</th>" for b in builds)
    rows = []
    for s in result.get("most_disagreeing", []):
        agrees, kl = s.get("agrees", {}), s.get("kl", {})
        cells = "".join(f"<td>{_agrees(agrees.get(b))} / {number(kl.get(b), 3)}</td>" for b in builds)
        task, seed = str(s["task_id"]), int(s["seed"])
        link = _viewer_link(task, seed, f"{task} seed {seed} step {s['step']}")
        rows.append(
            f"<tr><td class='name'>{link}</td>"
            f"<td class='name'><code>{escape(str(s.get('source_answer', '')))}</code></td>{cells}</tr>"
        )
    return (
        "<p>The steps where the builds disagree most with the reference's answer (most disagreeing builds, "
        "then largest KL); the link opens the episode in the viewer below.</p>"
        "<table><thead><tr><th class='name'>step</th><th class='name'>reference's answer</th>"
        f"{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def fidelity_html(run_dir: Path, rows: list[FidelityRow] | None) -> str:
    """The report's fidelity section; empty when the run has no fidelity.json."""
    if not rows:
        return ""
    agreement = {
        (r.build, "agreement"): Interval(r.agreement, r.agreement_low, r.agreement_high)
        for r in rows
        if r.agreement is not None and r.agreement_low is not None and r.agreement_high is not None
    }
    plots = rates_chart([r.build for r in rows], ["agreement"], agreement) + _kl_chart(rows)
    return (
        "<h2>Teacher-forced fidelity</h2>"
        "<p>The reference's recorded steps replayed to every build (one prefill each): action agreement with "
        "its interval (clustered by episode) and the answer KL from the reference.</p>"
        f'<div class="plots">{plots}</div>' + _disagreements(run_dir)
    )
