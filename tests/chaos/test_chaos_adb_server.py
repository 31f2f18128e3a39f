"""The adb server itself dies mid-grid (`adb kill-server`): the harness starts it again, the phones announce
themselves to it, and the grid finishes every cell with the outcomes the scripted agents always get.

Runs against a private adb server (ANDROID_ADB_SERVER_PORT), never the shared one on 5037.
"""

from __future__ import annotations

import io
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _chaos import OracleAgent, builds_file, episodes, oracle_tasks, scored
from _phones import ADB
from rich.console import Console

from agent_eval.grid import GridSpec, run_grid
from virtual_phone import start_fleet

pytestmark = pytest.mark.slow

ADB_PORT = 6090
TASKS = ["airplane_mode_on", "wifi_on"]
SEEDS = 4


def _adb_server(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ADB, "-P", str(ADB_PORT), *args], capture_output=True, text=True, timeout=30)


@pytest.fixture
def private_adb(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(ADB_PORT))
    _adb_server("start-server")
    yield
    _adb_server("kill-server")


def test_a_killed_adb_server_is_started_again_and_the_grid_finishes(
    private_adb: None, tmp_path: Path
) -> None:
    tasks = oracle_tasks(TASKS)
    agent = OracleAgent(tasks, flaws={1: "undo"}, model="steady")
    run_dir = tmp_path / "run"
    killed: list[float] = []

    def kill_server() -> None:
        deadline = time.monotonic() + 120
        while len(episodes(run_dir)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _adb_server("kill-server").returncode == 0
        killed.append(time.time())

    with agent, start_fleet(count=2, base_port=6070) as fleet:
        spec = GridSpec(
            tasks=TASKS,
            builds_file=str(builds_file(tmp_path / "builds.yaml", {"steady": agent}, reference="steady")),
            seeds=SEEDS,
            adaptive={"enabled": False},
            devices=fleet.serials,
            run_dir=str(run_dir),
        )
        killer = threading.Thread(target=kill_server, daemon=True)
        killer.start()
        out = io.StringIO()
        result = run_grid(spec, console=Console(file=out, width=200), bars=False, html=False)
        killer.join(timeout=5)
        listed = _adb_server("devices").stdout
    assert killed, "the adb server was never killed"
    assert result.problems == [], (result.problems, out.getvalue()[-3000:])
    got = scored(run_dir)
    assert set(got) == {("steady", t, s) for t in TASKS for s in range(SEEDS)}
    assert {k: e["outcome"] for k, e in got.items()} == {
        ("steady", t, s): "undone" if s == 1 else "success" for t in TASKS for s in range(SEEDS)
    }
    # Episodes ran after the kill, on the server the harness started again, with both phones back on it.
    after = [e for e in got.values() if _ts(e["started_at"]) > killed[0]]
    assert len(after) >= 2, "too little ran after the adb server was killed"
    print(f"{len(after)} episodes after the kill; infra-error attempts: {result.infra_attempts}")
    assert all(serial in listed for serial in fleet.serials), listed


def _ts(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()
