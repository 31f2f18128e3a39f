"""Running many episodes (cells: build × task × seed) over one or more devices into a run store.

Skips what the store has finished, retries infra errors a bounded number of times, and retires a device that
left the adb server. Knows nothing of the command line, so grids and build files can drive it too.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from agent_eval.agent.policy import Policy
from agent_eval.device.backend import EpisodeDevice
from agent_eval.errors import InfraError
from agent_eval.records import BuildManifest, EpisodeRecord, Outcome
from agent_eval.rundir import EpisodeKey, RunStore
from agent_eval.runner.episode import run_episode
from agent_eval.task import Task, TaskInstance


@dataclass(frozen=True)
class Cell:
    """One episode to run: a build on a task with a seed."""

    build: str
    task: Task
    seed: int

    @property
    def key(self) -> EpisodeKey:
        return (self.build, self.task.id, self.seed)


@dataclass(frozen=True)
class BuildAgent:
    """How a build plays: a policy per task instance (the oracle needs the instance), and its manifest."""

    name: str
    policy_for: Callable[[TaskInstance], Policy]
    manifest: BuildManifest | None = None


@dataclass
class RunSummary:
    """What one call of run_cells did."""

    kept: int = 0  # finished in an earlier session, not rerun
    outcomes: Counter[Outcome] = field(default_factory=Counter)  # of episodes finished in this call
    infra_attempts: int = 0  # infra-error attempts in this call (each one also a line in episodes.jsonl)
    failed: list[EpisodeRecord] = field(default_factory=list)  # cells whose last attempt was an infra error
    not_run: list[Cell] = field(default_factory=list)  # left when every device was lost, or the run gave up
    retired_devices: list[str] = field(default_factory=list)
    gave_up: str | None = None  # why the run stopped early, when it did

    @property
    def complete(self) -> bool:
        return not self.failed and not self.not_run


EpisodeCallback = Callable[[Cell, EpisodeRecord], None]


def run_cells(
    cells: Sequence[Cell],
    devices: Sequence[EpisodeDevice],
    agents: Mapping[str, BuildAgent],
    store: RunStore,
    *,
    max_attempts: int = 3,
    give_up_after: int | None = 2,
    on_episode: EpisodeCallback | None = None,
    snapshot: str | None = "default_boot",
) -> RunSummary:
    """Run every cell the store has not finished, one device per worker, in the order given.

    Each attempt (infra errors included) is appended to the store as it ends and passed to `on_episode`.
    A cell gets up to `max_attempts` attempts in this call; after `give_up_after` cells in a row used up
    theirs (a dead endpoint, say), the run stops and leaves the rest for a rerun. A TaskError (a broken
    task) stops the run and is raised.
    """
    if not devices:
        raise InfraError("no device to run episodes on")
    missing = sorted({c.build for c in cells} - set(agents))
    if missing:
        raise ValueError(f"no agent for build(s) {', '.join(missing)}")
    run_id = store.manifest.run_id if store.manifest is not None else store.run_dir.name
    finished = store.finished()
    earlier_attempts = store.infra_attempts()
    summary = RunSummary()
    todo: queue.SimpleQueue[Cell] = queue.SimpleQueue()
    for cell in cells:
        if cell.key in finished:
            summary.kept += 1
        else:
            todo.put(cell)

    lock = threading.Lock()
    stop = threading.Event()
    failure: list[BaseException] = []
    failed_in_a_row = 0

    def play(device: EpisodeDevice, cell: Cell) -> bool:
        """Run a cell to a scored record or out of attempts; False when the device is gone."""
        nonlocal failed_in_a_row
        agent = agents[cell.build]
        instance = cell.task.instantiate(cell.seed)
        previous = earlier_attempts.get(cell.key, 0)
        for attempt in range(1, max_attempts + 1):
            episode_dir = store.fresh_episode_dir(cell.build, cell.task.id, cell.seed)
            record = run_episode(
                device,
                instance,
                agent.policy_for(instance),
                build=cell.build,
                run_id=run_id,
                episode_dir=episode_dir,
                manifest=agent.manifest,
                attempt=previous + attempt,
                relative_to=store.run_dir,
                snapshot=snapshot,
            )
            store.append(record)
            with lock:
                if record.outcome is Outcome.INFRA_ERROR:
                    summary.infra_attempts += 1
                else:
                    summary.outcomes[record.outcome] += 1
                if on_episode is not None:
                    on_episode(cell, record)
            if record.outcome is not Outcome.INFRA_ERROR:
                with lock:
                    failed_in_a_row = 0
                return True
            if not _still_online(device):
                with lock:
                    summary.retired_devices.append(device.serial)
                todo.put(cell)  # another device may still run it
                return False
            if attempt == max_attempts:
                with lock:
                    summary.failed.append(record)
                    failed_in_a_row += 1
                    if give_up_after is not None and failed_in_a_row >= give_up_after and not stop.is_set():
                        summary.gave_up = (
                            f"stopped after {failed_in_a_row} episodes in a row failed {max_attempts} times"
                        )
                        stop.set()
        return True

    busy = 0  # workers playing a cell: a lost device requeues its cell, so an empty queue is not yet the end

    def next_cell() -> Cell | None:
        nonlocal busy
        while not stop.is_set():
            with lock:
                try:
                    cell = todo.get_nowait()
                except queue.Empty:
                    if busy == 0:
                        return None
                else:
                    busy += 1
                    return cell
            time.sleep(0.05)
        return None

    def worker(device: EpisodeDevice) -> None:
        nonlocal busy
        try:
            while (cell := next_cell()) is not None:
                try:
                    still_here = play(device, cell)
                finally:
                    with lock:
                        busy -= 1
                if not still_here:
                    return
        except BaseException as e:  # a broken task or a bug: stop every worker, re-raise in the caller
            with lock:
                failure.append(e)
            stop.set()

    if len(devices) == 1:
        worker(devices[0])
    else:
        threads = [threading.Thread(target=worker, args=(d,), name=f"episodes-{d.serial}") for d in devices]
        for t in threads:
            t.start()
        try:
            for t in threads:
                t.join()
        except BaseException:
            stop.set()
            raise
    store.touch()
    if failure:
        raise failure[0]
    while True:
        try:
            summary.not_run.append(todo.get_nowait())
        except queue.Empty:
            break
    return summary


def _still_online(device: EpisodeDevice, grace_s: float = 10.0) -> bool:
    # A phone whose transport just dropped is usually reconnecting: give it a moment before retiring it.
    try:
        device.wait_until_online(grace_s)
    except InfraError:
        return False
    return True
