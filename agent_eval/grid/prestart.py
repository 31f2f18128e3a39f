"""Starting the next build's engine early: in the tail of the current build's cells (phones idle), when the
host's free memory leaves room for it, so the next block finds its engine answering instead of waiting.

`room_to_start_early` decides; `EarlyStart` runs one start on a thread and hands over, or stops, its engine.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from agent_eval.builds import Build, ServedBuild
from agent_eval.rundir import read_engine_record

# A served build's peak RSS before this run has measured one: the default builds take ~2.1 GB (docs/grid.md).
DEFAULT_ENGINE_GIB = 2.5

T = TypeVar("T")
Opener = Callable[[Build, Callable[[ServedBuild], None]], tuple[T, contextlib.ExitStack]]


def expected_gib(run_dir: Path, build: Build) -> float:
    """The memory the build's engine will take: its peak RSS measured in this run (engines/<build>.json, an
    earlier phase or session), else DEFAULT_ENGINE_GIB."""
    record = read_engine_record(run_dir, build.name)
    if record is not None and record.peak_rss_mb:
        return record.peak_rss_mb / 1024
    return DEFAULT_ENGINE_GIB


def room_to_start_early(
    build: Build, run_dir: Path, reserve_gib: float, available_gib: Callable[[], float]
) -> tuple[bool, str]:
    """Whether MemAvailable less the build's expected RSS keeps `reserve_gib` free; and why, in words."""
    if not build.kind.starts_server:
        return False, "it has no engine to start"
    need, free = expected_gib(run_dir, build), available_gib()
    why = f"{free:.1f} GiB available, {need:.1f} GiB expected, {reserve_gib:g} GiB kept free"
    return free - need >= reserve_gib, why


@dataclass
class EarlyStart(Generic[T]):
    """One engine being started on a thread; `take()` waits for it and hands it over, `cancel()` stops it."""

    build: Build
    begun: float = field(default_factory=time.monotonic)
    served: ServedBuild | None = None  # known once serve() made it, so a start under way can be cancelled
    opened: tuple[T, contextlib.ExitStack] | None = None
    error: BaseException | None = None
    thread: threading.Thread | None = None

    @classmethod
    def begin(cls, build: Build, opener: Opener[T]) -> EarlyStart[T]:
        early: EarlyStart[T] = cls(build)
        # A daemon thread: a harness that dies mid-start leaves the engine to its guard, which then stops it.
        early.thread = threading.Thread(
            target=early._run, args=(opener,), name=f"early-start-{build.name}", daemon=True
        )
        early.thread.start()
        return early

    def _run(self, opener: Opener[T]) -> None:
        try:
            self.opened = opener(self.build, self._made)
        except BaseException as e:  # said by whoever takes it; the usual start then runs instead
            self.error = e

    def _made(self, served: ServedBuild) -> None:
        self.served = served

    def take(self) -> tuple[tuple[T, contextlib.ExitStack] | None, float]:
        """(the started engine, or None when its start failed; seconds waited here for the start to end)."""
        waited = time.monotonic()
        if self.thread is not None:
            self.thread.join()
        return self.opened, time.monotonic() - waited

    def cancel(self) -> None:
        """Stop the engine, whether its start is under way or done (its build has nothing left to play)."""
        if self.served is not None:
            self.served.cancel()
        if self.thread is not None:
            self.thread.join()
        if self.opened is not None:
            self.opened[1].close()
            self.opened = None
