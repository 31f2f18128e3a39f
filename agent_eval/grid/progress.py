"""What a running grid shows: a progress bar per build (episodes done / planned) and a line per episode.

The bars' totals grow when the adaptive top-up plans more seeds; infra-error attempts are shown, not counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from agent_eval.records import EpisodeRecord, Outcome
from agent_eval.runner.lines import episode_line as run_episode_line
from agent_eval.runner.loop import Cell


def episode_line(cell: Cell, record: EpisodeRecord, phase: int) -> str:
    """One finished episode (or failed attempt), with the grid phase and the phone it ran on."""
    line = run_episode_line(cell, record)
    if record.outcome is Outcome.INFRA_ERROR:
        return line
    return f"{line}  [dim]phase {phase} on {record.device}"


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
        if record.outcome is not Outcome.INFRA_ERROR and cell.kind == "episode":  # probes are not planned
            self._progress.advance(self._build[cell.build])
            self._progress.advance(self._all)
