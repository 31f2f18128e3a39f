"""`agent-eval report RUN_DIR`: recompute the scorecard from the run directory alone, print it and save it.

Scoring is imported inside the command: statsmodels takes seconds to load, a cost other commands skip.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command("report")
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--reference", default=None, help="Build to compare against (default: as run.json or the manifests say)."
)
@click.option(
    "--margin",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Non-inferiority margin δ, a drop in rate (default: as run.json says, else 0.10).",
)
@click.option("--drill-down", is_flag=True, help="Also print the per-task drill-down (exploratory).")
@click.option("--html/--no-html", default=True, show_default=True, help="Also write report.html.")
@click.option(
    "--no-write", is_flag=True, help="Print only; write no scorecard.json, scorecard.md or report.html."
)
def report_command(
    run_dir: Path, reference: str | None, margin: float | None, drill_down: bool, html: bool, no_write: bool
) -> None:
    """Score RUN_DIR (runs/<id>): rates with intervals, regression verdicts, cost; save the scorecard."""
    from rich.console import Console

    from agent_eval.report.markdown import write_scorecard
    from agent_eval.report.terminal import render
    from agent_eval.scoring.scorecard import score_run

    card = score_run(run_dir, reference=reference, margin=margin)
    # Piped output gets a fixed width wide enough for the tables instead of rich's 80-column fallback.
    console = Console(width=None if sys.stdout.isatty() else 200)
    render(card, console, drill_down=drill_down)
    if no_write:
        return
    written = list(write_scorecard(run_dir, card))
    if html:
        from agent_eval.report.html import write_html_report

        written.append(write_html_report(run_dir, card))
    console.print("\nwrote " + ", ".join(str(path) for path in written))
