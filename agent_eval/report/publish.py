"""Publishing a scorecard: the terminal tables, then scorecard.json/.md and report.html in the run directory.

The one writer both `agent-eval report` and the end of a grid use, so the two never disagree.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from agent_eval.report.markdown import write_scorecard
from agent_eval.report.terminal import render
from agent_eval.scoring.scorecard import Scorecard


def publish_scorecard(
    run_dir: Path,
    card: Scorecard,
    console: Console,
    *,
    html: bool = True,
    drill_down: bool = False,
    write: bool = True,
) -> list[Path]:
    """Print the scorecard; unless `write` is False, save it (and the HTML page) and say where."""
    render(card, console, drill_down=drill_down)
    if not write:
        return []
    written = list(write_scorecard(run_dir, card))
    if html:
        from agent_eval.report.html import write_html_report  # Pillow and the page only when asked for

        written.append(write_html_report(run_dir, card))
    console.print("wrote " + ", ".join(str(path) for path in written))
    return written
