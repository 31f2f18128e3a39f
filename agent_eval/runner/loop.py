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
from pathlib import Path
from typing import Protocol, runtime_checkable

from agent_eval.agent.policy import Policy
from agent_eval.chat.endpoint import Endpoint
from agent_eval.device.backend import EpisodeDevice
from agent_eval.errors import InfraError
from agent_eval.records import BuildManifest, EpisodeKind, EpisodeRecord, Outcome
from agent_eval.rundir import EpisodeKey, RunStore
from agent_eval.runner.episode import run_episode
from agent_eval.task import Task, TaskInstance


@dataclass(frozen=True)
class Cell:
    """One episode to run: a build on a task with a seed (or the navigation probe of that episode)."""

    build: str
    task: Task
    seed: int
    kind: EpisodeKind = "episode"

    @property
    def key(self) -> EpisodeKey:
        return (self.build, self.task.id, self.seed)

    @property
    def slot(self) -> tuple[EpisodeKind, str, str, int]:
        """The key with the kind: an episode and its probe are two slots of the same key."""
        return (self.kind, self.build, self.task.id, self.seed)

    def probe(self) -> Cell:
        """The navigation probe of this cell's episode."""
        return Cell(self.build, self.task, self.seed, "probe")


@dataclass(frozen=True)
class BuildAgent:
    """How a build plays: a policy per task instance (the oracle needs the instance), and its manifest."""

    name: str
    policy_for: Callable[[TaskInstance], Policy]
    manifest: BuildManifest | None = None
    endpoint: Endpoint | None = None  # where it answers, for seats that make their own policy (cluster)
    agent: str | None = None  # the build's `agent:` (registry name), for those seats too


@dataclass(frozen=True)
class Attempt:
    """Where and as what one attempt of a cell is recorded."""

    run_id: str
    number: int
    episode_dir: Path  # fresh and empty, on this host
    run_dir: Path
    snapshot: str | None


@runtime_checkable
class Seat(Protocol):
    """Where episodes are played one at a time: a device here (LocalSeat), or a phone on a cluster node."""

    @property
    def serial(self) -> str: ...

    def play(self, cell: Cell, agent: BuildAgent, attempt: Attempt) -> EpisodeRecord:
        """Play the attempt with the step files in attempt.episode_dir; infra errors are records."""
        ...

    def still_online(self) -> bool:
        """After an infra error: whether the phone is still there (else it is retired)."""
        ...


@dataclass(frozen=True)
class LocalSeat:
    """A device of this host (the adb `Device`, or any other device backend's)."""

    device: EpisodeDevice

    @property
    def serial(self) -> str:
        return self.device.serial

    def play(self, cell: Cell, agent: BuildAgent, attempt: Attempt) -> EpisodeRecord:
        instance = cell.task.instantiate(cell.seed)
        return run_episode(
            self.device,
            instance,
            agent.policy_for(instance),
            build=cell.build,
            run_id=attempt.run_id,
            episode_dir=attempt.episode_dir,
            manifest=agent.manifest,
            attempt=attempt.number,
            relative_to=attempt.run_dir,
            snapshot=attempt.snapshot,
            kind=cell.kind,
        )

    def still_online(self) -> bool:
        return _still_online(self.device)


def as_seat(device: EpisodeDevice | Seat) -> Seat:
    """A device of this host seated as is; a seat (a cluster phone) unchanged."""
    return device if isinstance(device, Seat) else LocalSeat(device)


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
FollowUp = Callable[[Cell, EpisodeRecord], Cell | None]
"""Given a finished episode, the cell to play after it (its navigation probe), or None."""


def run_cells(
    cells: Sequence[Cell],
    devices: Sequence[EpisodeDevice | Seat],
    agents: Mapping[str, BuildAgent],
    store: RunStore,
    *,
    max_attempts: int = 3,
    give_up_after: int | None = 2,
    on_episode: EpisodeCallback | None = None,
    snapshot: str | None = "default_boot",
    on_tail: Callable[[], None] | None = None,
    engine_died: Callable[[str], bool] | None = None,
    follow_up: FollowUp | None = None,
) -> RunSummary:
    """Run every cell the store has not finished, one device (or seat) per worker, in the order given.

    Each attempt (infra errors included) is appended to the store as it ends and passed to `on_episode`.
    A cell gets up to `max_attempts` attempts in this call; after `give_up_after` cells in a row used up
    theirs (a dead endpoint, say), the run stops and leaves the rest for a rerun. `engine_died(build)`, asked
    after an infra-error attempt, says whether that build's engine is known to be dead: then the cell goes
    back unplayed and the run stops at once (its caller restarts the engine and runs what is left), instead
    of spending every cell's attempts on it. A TaskError (a broken task) stops the run and is raised.
    `on_tail` is called once, from a worker, when a device finds no cell left while others still play: the
    tail, where the cells left are fewer than the devices (a grid starts the next build's engine there).
    `follow_up(cell, record)`, asked of every scored episode (finished now or in an earlier session), gives
    a cell to queue after it: the grid's navigation probes, which need the episode's outcome to be chosen.
    """
    if not devices:
        raise InfraError("no device to run episodes on")
    missing = sorted({c.build for c in cells} - set(agents))
    if missing:
        raise ValueError(f"no agent for build(s) {', '.join(missing)}")
    session = _Session(agents, store, max_attempts, give_up_after, on_episode, snapshot)
    session.on_tail, session.engine_died, session.follow_up = on_tail, engine_died, follow_up
    session.queue(cells)
    session.run([as_seat(d) for d in devices])
    return session.summary


class _Session:
    """One call of run_cells: the queue of cells, the workers (one per device) and what they did."""

    def __init__(
        self,
        agents: Mapping[str, BuildAgent],
        store: RunStore,
        max_attempts: int,
        give_up_after: int | None,
        on_episode: EpisodeCallback | None,
        snapshot: str | None,
    ) -> None:
        self.agents, self.store, self.snapshot = agents, store, snapshot
        self.max_attempts, self.give_up_after, self.on_episode = max_attempts, give_up_after, on_episode
        self.run_id = store.manifest.run_id if store.manifest is not None else store.run_dir.name
        self.earlier_attempts = store.infra_attempts()
        self.earlier_probe_attempts = store.infra_attempts("probe")
        self.tried: Counter[tuple[EpisodeKind, str, str, int]] = Counter()  # this call's, across seats
        self.summary = RunSummary()
        self.todo: queue.SimpleQueue[Cell] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.failure: list[BaseException] = []
        self.failed_in_a_row = 0
        self.on_tail: Callable[[], None] | None = None
        self.engine_died: Callable[[str], bool] | None = None
        self.follow_up: FollowUp | None = None
        self.queued: set[tuple[EpisodeKind, str, str, int]] = set()  # slots queued in this call
        self.tail_seen = False
        self.busy = (
            0  # workers playing a cell: a lost device requeues its cell, so an empty queue is not the end
        )

    def queue(self, cells: Sequence[Cell]) -> None:
        finished = {kind: self.store.finished(kind) for kind in ("episode", "probe")}
        pending = list(cells)
        for cell in pending:  # grows: an earlier session's episode whose probe is still to play
            if cell.slot in self.queued:
                continue
            self.queued.add(cell.slot)
            done = finished[cell.kind].get(cell.key)
            if done is None:
                self.todo.put(cell)
                continue
            self.summary.kept += 1
            after = self.follow_up(cell, done) if self.follow_up is not None else None
            if after is not None:
                pending.append(after)

    def run(self, devices: Sequence[Seat]) -> None:
        if len(devices) == 1:
            self.worker(devices[0])
        else:
            threads = [
                threading.Thread(target=self.worker, args=(d,), name=f"episodes-{d.serial}") for d in devices
            ]
            for t in threads:
                t.start()
            try:
                for t in threads:
                    t.join()
            except BaseException:
                self.stop.set()
                raise
        self.store.touch()
        if self.failure:
            raise self.failure[0]
        while True:
            try:
                self.summary.not_run.append(self.todo.get_nowait())
            except queue.Empty:
                break

    def attempt(self, seat: Seat, cell: Cell) -> EpisodeRecord:
        """Play one attempt of a cell on a seat, append it to the store and count it."""
        earlier = self.earlier_attempts if cell.kind == "episode" else self.earlier_probe_attempts
        with self.lock:  # a cell requeued from a lost phone counts on from its attempts there
            self.tried[cell.slot] += 1
            number = earlier.get(cell.key, 0) + self.tried[cell.slot]
        episode_dir = self.store.fresh_episode_dir(cell.build, cell.task.id, cell.seed, cell.kind)
        place = Attempt(self.run_id, number, episode_dir, self.store.run_dir, self.snapshot)
        record = seat.play(cell, self.agents[cell.build], place)
        self.store.append(record)
        with self.lock:
            if record.outcome is Outcome.INFRA_ERROR:
                self.summary.infra_attempts += 1
            else:
                self.summary.outcomes[record.outcome] += 1
            if self.on_episode is not None:
                self.on_episode(cell, record)
            after = None
            if record.outcome is not Outcome.INFRA_ERROR and self.follow_up is not None:
                after = self.follow_up(cell, record)
            if after is not None and after.slot not in self.queued:
                # Queued while this worker is still busy, so no worker sees an empty queue and leaves.
                self.queued.add(after.slot)
                self.todo.put(after)
        return record

    def play(self, device: Seat, cell: Cell) -> bool:
        """Run a cell to a scored record or out of attempts; False when the device is gone."""
        for attempt in range(1, self.max_attempts + 1):
            record = self.attempt(device, cell)
            if record.outcome is not Outcome.INFRA_ERROR:
                with self.lock:
                    self.failed_in_a_row = 0
                return True
            if not device.still_online():
                with self.lock:
                    self.summary.retired_devices.append(device.serial)
                self.todo.put(cell)  # another device may still run it
                return False
            if self.engine_died is not None and self.engine_died(cell.build):
                self.stop_for_engine(cell)
                return True
            if attempt == self.max_attempts:
                self.out_of_attempts(record)
        return True

    def stop_for_engine(self, cell: Cell) -> None:
        """The cell's engine is dead: put the cell back and stop, so its attempts wait for a restart."""
        self.todo.put(cell)
        with self.lock:
            if self.summary.gave_up is None:
                self.summary.gave_up = f"stopped: the engine of {cell.build} died"
            self.stop.set()

    def out_of_attempts(self, record: EpisodeRecord) -> None:
        with self.lock:
            self.summary.failed.append(record)
            self.failed_in_a_row += 1
            limit = self.give_up_after
            if limit is not None and self.failed_in_a_row >= limit and not self.stop.is_set():
                self.summary.gave_up = (
                    f"stopped after {self.failed_in_a_row} episodes in a row failed {self.max_attempts} times"
                )
                self.stop.set()

    def next_cell(self) -> Cell | None:
        while not self.stop.is_set():
            tail = False
            with self.lock:
                try:
                    cell = self.todo.get_nowait()
                except queue.Empty:
                    if self.busy == 0:
                        return None
                    tail, self.tail_seen = not self.tail_seen, True
                else:
                    self.busy += 1
                    return cell
            if tail and self.on_tail is not None:
                self.on_tail()  # outside the lock: it may take a moment, the other workers go on
            time.sleep(0.05)
        return None

    def worker(self, device: Seat) -> None:
        try:
            while (cell := self.next_cell()) is not None:
                try:
                    still_here = self.play(device, cell)
                finally:
                    with self.lock:
                        self.busy -= 1
                if not still_here:
                    return
        except BaseException as e:  # a broken task or a bug: stop every worker, re-raise in the caller
            with self.lock:
                self.failure.append(e)
            self.stop.set()


def _still_online(device: EpisodeDevice, grace_s: float = 10.0) -> bool:
    # A phone whose transport just dropped is usually reconnecting: give it a moment before retiring it.
    try:
        device.wait_until_online(grace_s)
    except InfraError:
        return False
    return True
