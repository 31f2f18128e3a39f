"""`agent-eval report RUN_DIR` (score again, print, save) and `agent-eval view RUN_DIR` (serve the report).

Scoring is imported inside the command: statsmodels takes seconds to load, a cost other commands skip.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import click

from agent_eval.report.serve import RunServer, ensure_report


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

    from agent_eval.report.publish import publish_scorecard
    from agent_eval.scoring.scorecard import score_run

    card = score_run(run_dir, reference=reference, margin=margin)
    # Piped output gets a fixed width wide enough for the tables instead of rich's 80-column fallback.
    console = Console(width=None if sys.stdout.isatty() else 200)
    publish_scorecard(run_dir, card, console, html=html, drill_down=drill_down, write=not no_write)


@click.command("view")
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--port", type=click.IntRange(0, 65535), default=0, show_default=True, help="0 picks a free port."
)
def view_command(run_dir: Path, port: int) -> None:
    """Serve RUN_DIR's report (scorecard, plots, trajectories) on 127.0.0.1 until interrupted."""
    ensure_report(run_dir)
    with RunServer(run_dir, port) as server:
        click.echo(f"serving {run_dir} at {server.url}  (Ctrl-C stops)", nl=True)
        threading.Event().wait()


@click.command("compare")
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.argument("first")
@click.argument("second")
def compare_command(run_dir: Path, first: str, second: str) -> None:
    """SECOND against FIRST, two builds of RUN_DIR, on the (task, seed) pairs both played."""
    from agent_eval.scoring.pairwise import compare_in_run

    click.echo(f"{second} against {first} (Δ = {second} − {first}; 95% interval clustered by task)")
    for row in compare_in_run(run_dir, first, second):
        known = row.low is not None and row.high is not None
        interval = f"[{row.low:+.2f}, {row.high:+.2f}]" if known else "[–]"
        rates = f"{_rate(row.first_rate)} → {_rate(row.second_rate)}"
        click.echo(
            f"  {row.metric:<10} {row.pairs} pairs  {rates}  Δ {row.delta:+.2f} {interval}  "
            f"{row.wins} wins / {row.losses} losses  McNemar p {row.p_two_sided:.2g} (two-sided)"
        )


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"
