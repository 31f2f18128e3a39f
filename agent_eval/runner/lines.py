"""How a finished episode reads as one line of console markup, shared by `agent-eval run` and the grid.

Outcome colours live here too, so every command shows an outcome the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape

from agent_eval.records import EpisodeRecord, Outcome
from agent_eval.runner.loop import Cell

OUTCOME_STYLE = {
    Outcome.SUCCESS: "bold green",
    Outcome.UNDONE: "yellow",
    Outcome.NO_STOP: "cyan",
    Outcome.PREMATURE_DONE: "magenta",
    Outcome.NAV_FAIL: "red",
    Outcome.WRONG_ANSWER: "blue",
    Outcome.INFRA_ERROR: "bold red",
}


def episode_line(cell: Cell, record: EpisodeRecord) -> str:
    """One finished episode (or failed attempt): outcome, cell, steps, what the agent said, time."""
    style = OUTCOME_STYLE[record.outcome]
    probe = " (navigation probe)" if cell.kind == "probe" else ""
    head = f"[{style}]{record.outcome.value:<15}[/] {cell.build} {cell.task.id} seed {cell.seed}{probe}"
    if record.outcome is Outcome.INFRA_ERROR:
        return f"{head}  attempt {record.attempt}: [red]{escape(record.error or '')}"
    seconds = (record.finished_at - record.started_at).total_seconds()
    said = f", said {record.said} at step {record.said_at_step}" if record.said else ""
    invalid = f", {record.invalid_actions} invalid" if record.invalid_actions else ""
    return f"{head}  {record.steps} steps{said}{invalid}  {seconds:.1f} s"


def unfinished_problems(
    failed: Sequence[EpisodeRecord],
    retired_devices: Sequence[str],
    not_run: Sequence[Cell],
    gave_up: str | None,
    max_attempts: int,
) -> list[str]:
    """What a rerun must still do, in words (empty when every episode finished); run and grid alike."""
    problems = []
    if failed:
        last = failed[-1]
        problems.append(
            f"{len(failed)} episode(s) failed every attempt, {max_attempts} times "
            f"(last: {last.build} {last.task_id} seed {last.seed}: {last.error})"
        )
    if retired_devices:
        problems.append(f"device(s) lost: {', '.join(retired_devices)}")
    if gave_up:
        problems.append(gave_up)
    if not_run:
        problems.append(f"{len(not_run)} episode(s) not run")
    return problems
