"""What a running grid shows: a progress bar per build (episodes done / planned) and a line per episode.

The bars' totals grow when the adaptive top-up plans more seeds; infra-error attempts are shown, not counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from agent_eval.records import EpisodeRecord, Outcome
from agent_eval.runner.loop import Cell

OUTCOME_STYLE = {
    Outcome.SUCCESS: "bold green",
    Outcome.UNDONE: "yellow",
    Outcome.NO_STOP: "cyan",
    Outcome.PREMATURE_DONE: "magenta",
    Outcome.NAV_FAIL: "red",
    Outcome.INFRA_ERROR: "bold red",
}


def episode_line(cell: Cell, record: EpisodeRecord, phase: int) -> str:
    """One finished episode (or failed attempt) as a line of console markup."""
    style = OUTCOME_STYLE[record.outcome]
    head = f"[{style}]{record.outcome.value:<15}[/] {cell.build} {cell.task.id} seed {cell.seed}"
    if record.outcome is Outcome.INFRA_ERROR:
        return f"{head}  attempt {record.attempt}: [red]{escape(record.error or '')}"
    seconds = (record.finished_at - record.started_at).total_seconds()
    said = f", said {record.said} at step {record.said_at_step}" if record.said else ""
    invalid = f", {record.invalid_actions} invalid" if record.invalid_actions else ""
    return (
        f"{head}  {record.steps} steps{said}{invalid}  {seconds:.1f} s  [dim]phase {phase} on {record.device}"
    )


class GridProgress:
    """Bars for the whole grid and each build; `plan` sets totals, `episode` prints and advances."""

    def __init__(self, console: Console, builds: Sequence[str], *, bars: bool = True) -> None:
        self.console = console
        self.phase = 1
        self._bars = bars
        self._progress = Progress(
            TextColumn("{task.description:<16}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("episodes"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            disable=not bars,
        )
        self._all: TaskID = self._progress.add_task("grid", total=0)
        self._build: dict[str, TaskID] = {b: self._progress.add_task(f"  {b}", total=0) for b in builds}

    def __enter__(self) -> GridProgress:
        self._progress.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._progress.stop()

    def plan(self, planned: Mapping[str, int], done: Mapping[str, int]) -> None:
        """Episodes planned and already finished, per build (a top-up raises the plan)."""
        for build, task in self._build.items():
            self._progress.update(task, total=planned.get(build, 0), completed=done.get(build, 0))
        self._progress.update(self._all, total=sum(planned.values()), completed=sum(done.values()))

    def say(self, message: str) -> None:
        self.console.print(message)

    def episode(self, cell: Cell, record: EpisodeRecord) -> None:
        self.console.print(episode_line(cell, record, self.phase))
        if record.outcome is not Outcome.INFRA_ERROR:
            self._progress.advance(self._build[cell.build])
            self._progress.advance(self._all)
