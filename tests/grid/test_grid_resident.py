"""Engines stay resident (idle) between a grid's phases when memory allows, instead of starting again."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _null_client import NullChatClient

from agent_eval.builds import load_builds
from agent_eval.chat.client import Usage
from agent_eval.grid import schedule
from agent_eval.grid.schedule import Engines, available_gib

REPO = Path(__file__).resolve().parents[2]


class _Served:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log
        self.endpoint = type("E", (), {"base_url": f"http://127.0.0.1:1/{name}/"})()
        self.up = True

    def alive(self) -> bool:
        return self.up

    def write_record(self, usage: Usage | None = None) -> None:
        self.log.append(f"record {self.name}")


@pytest.fixture
def log(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    events: list[str] = []

    @contextlib.contextmanager
    def serve(
        build: Any,
        run_dir: Path,
        port: int | None = None,
        manifest: object = None,
        on_created: Any = None,
        serving: Any = None,
    ) -> Iterator[_Served]:
        events.append(f"start {build.name}")
        served = _Served(build.name, events)
        try:
            yield served
        finally:
            events.append(f"stop {build.name}")

    monkeypatch.setattr(schedule, "serve", serve)
    monkeypatch.setattr(schedule, "ChatClient", NullChatClient)
    monkeypatch.setattr(schedule, "_agent", lambda name, client, served: f"agent {name}")
    monkeypatch.setattr(schedule, "port_is_free", lambda port: True)
    return events


def _builds() -> Any:
    return load_builds(REPO / "builds" / "default.yaml")


def test_an_engine_stays_up_between_phases_and_is_stopped_at_the_end(log: list[str], tmp_path: Path) -> None:
    builds = _builds()
    engines = Engines(tmp_path, 8200, lambda line: None, reserve_gib=0.0)
    for _ in range(2):  # two phases, one build at a time
        for name in ("bf16", "w8a8"):
            with engines.serving([builds.get(name)]) as agents:
                assert str(agents[name]) == f"agent {name}"
    # Started once each (each start's wait recorded), both still up.
    assert log == ["start bf16", "record bf16", "start w8a8", "record w8a8"]
    engines.close()
    assert log[4:] == ["record bf16", "stop bf16", "record w8a8", "stop w8a8"] and not engines.live


def test_without_room_or_when_asked_each_engine_stops_after_its_block(log: list[str], tmp_path: Path) -> None:
    builds = _builds()
    for engines in (
        Engines(tmp_path, 8200, lambda line: None, reserve_gib=available_gib() + 1e6),
        Engines(tmp_path, 8200, lambda line: None, resident=False),
    ):
        log.clear()
        for _ in range(2):
            with engines.serving([builds.get("bf16")]):
                pass
        assert log == ["start bf16", "record bf16", "record bf16", "stop bf16"] * 2


def test_a_dead_resident_engine_is_started_again(log: list[str], tmp_path: Path) -> None:
    builds = _builds()
    engines = Engines(tmp_path, 8200, lambda line: None, reserve_gib=0.0)
    with engines.serving([builds.get("bf16")]):
        pass
    engines.live["bf16"].served.up = False  # type: ignore[attr-defined]
    with engines.serving([builds.get("bf16")]):
        pass
    assert [e for e in log if not e.startswith("record")] == ["start bf16", "stop bf16", "start bf16"]
    engines.close()
