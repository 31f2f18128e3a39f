"""The harness killed with SIGKILL at chosen moments, then run again: the run completes, every episode once.

Moments: during an action (a tap the phone is slowed down on), at a random time, and while the report is
being written. A kill mid-append cannot be aimed at (one write call per line, and no hook), so the torn line
such a crash leaves is written by hand: half a record at the end of episodes.jsonl. Also: Ctrl-C.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from _chaos import REPO, OracleAgent, builds_file, episodes, oracle_tasks, read_faults, scored
from _phones import default_sigint

from virtual_phone import FaultConfig, start_fleet

pytestmark = pytest.mark.slow

TASKS = ["airplane_mode_on", "wifi_on"]
SEEDS = 3
PLANNED = len(TASKS) * 2 * SEEDS
TAP_DELAY_S = 1.0
GRID = [sys.executable, "-m", "agent_eval", "run"]


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, OracleAgent]]:
    tasks = oracle_tasks(TASKS)
    servers = {
        "steady": OracleAgent(tasks, model="steady"),
        "shaky": OracleAgent(tasks, flaws={1: "undo", 2: "babble"}, model="shaky"),
    }
    for server in servers.values():
        server.start()
    yield servers
    for server in servers.values():
        server.stop()


def _start(grid: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*GRID, str(grid), "--no-bars"],
        cwd=REPO,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )


def _kill_when(proc: subprocess.Popen[bytes], ready: Callable[[], bool], timeout_s: float = 240) -> float:
    """SIGKILL the harness as soon as `ready()` holds; the time of the kill. Fails if it ended by itself."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert proc.poll() is None, "the harness ended before the kill"
        assert time.monotonic() < deadline, "the moment to kill never came"
        time.sleep(0.02)
    killed_at = time.time()
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    return killed_at


def _whole_lines(path: Path) -> bytes:
    data = path.read_bytes() if path.exists() else b""
    return data[: data.rfind(b"\n") + 1]


def test_killed_at_three_moments_the_run_completes_with_every_episode_once(
    agents: dict[str, OracleAgent], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    jsonl = run_dir / "episodes.jsonl"
    fault_log = tmp_path / "faults.jsonl"
    slow_taps = FaultConfig(added_latency_s=TAP_DELAY_S, latency_commands=["input"])
    with start_fleet(count=1, base_port=6020, faults=slow_taps, fault_log=fault_log) as fleet:
        grid = tmp_path / "grid.yaml"
        grid.write_text(
            yaml.safe_dump(
                {
                    "tasks": TASKS,
                    "builds_file": str(builds_file(tmp_path / "builds.yaml", agents, reference="steady")),
                    "seeds": SEEDS,
                    "adaptive": {"enabled": False},
                    "devices": fleet.serials,
                    "serving": "side-by-side",
                    "run_dir": str(run_dir),
                }
            )
        )
        kept = b""  # every whole line written so far: each later file must start with it

        # 1. During an action: the phone holds each `input` command for a second, and the fault log says when
        # one starts. Kill inside that second, once two episodes are on disk.
        proc = _start(grid)
        seen = len(read_faults(fault_log))
        # A second harness on the same run directory meanwhile is turned away, and writes nothing.
        deadline = time.monotonic() + 120
        while not episodes(run_dir) and time.monotonic() < deadline:
            time.sleep(0.05)
        second = subprocess.run(
            [*GRID, str(grid), "--no-bars"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert second.returncode == 2 and "in use by another agent-eval process" in second.stderr, (
            second.stderr
        )

        def tapping() -> bool:
            if len(episodes(run_dir)) < 2:
                return False
            new = read_faults(fault_log)[seen:]
            return any(f.kind == "latency" and f.time > time.time() - TAP_DELAY_S / 2 for f in new)

        killed_at = _kill_when(proc, tapping)
        tap = [f for f in read_faults(fault_log) if f.kind == "latency"][-1]
        assert tap.command.startswith("input") and killed_at - tap.time < TAP_DELAY_S
        first = scored(run_dir)
        assert 2 <= len(first) < PLANNED
        kept = _whole_lines(jsonl)

        # 2. While appending a record (simulated): a crash mid-write leaves the first half of a line.
        last_line = kept.splitlines()[-1]
        with jsonl.open("ab") as f:
            f.write(last_line[: len(last_line) // 2])

        # 3. At a random time after the rerun got going (it must cut the torn line first).
        proc = _start(grid)
        count = len(episodes(run_dir))
        delay = random.Random(int(time.time())).uniform(0.2, 3.0)
        going: list[float] = []

        def random_moment() -> bool:
            if not going and len(episodes(run_dir)) > count:
                going.append(time.monotonic())
            return bool(going) and time.monotonic() - going[0] > delay

        _kill_when(proc, random_moment)
        assert _whole_lines(jsonl).startswith(kept) and jsonl.read_bytes().startswith(kept)
        kept = _whole_lines(jsonl)

        # 4. While writing the report: every episode is in, and scorecard.json (written first) appeared.
        proc = _start(grid)
        _kill_when(proc, lambda: (run_dir / "scorecard.json").exists() and len(scored(run_dir)) == PLANNED)
        assert not (run_dir / "report.html").exists(), "the report was already written when the kill came"
        assert jsonl.read_bytes().startswith(kept)
        kept = _whole_lines(jsonl)

        # 5. The last run finishes it: nothing to play, the report written whole.
        done = subprocess.run(
            [*GRID, str(grid), "--no-bars"],
            cwd=REPO,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    final = jsonl.read_bytes()
    assert final == kept, "the finished run played or dropped episodes"
    lines = final.decode().splitlines()
    assert all(json.loads(line) for line in lines)  # the torn half line is gone, every line whole
    everything = scored(run_dir)  # raises if an episode was scored twice
    assert len(everything) == PLANNED and first.items() <= everything.items()
    assert {e["outcome"] for e in everything.values()} == {"success", "undone"}
    card = json.loads((run_dir / "scorecard.json").read_text())
    assert sum(b["episodes"] for b in card["builds"]) == PLANNED
    assert (run_dir / "report.html").read_text().rstrip().endswith("</html>")
    assert json.loads((run_dir / "run.json").read_text())["sessions"] == 4


def test_ctrl_c_stops_the_grid_quickly_and_the_rerun_finishes(
    agents: dict[str, OracleAgent], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    with start_fleet(count=2, base_port=6024) as fleet:
        grid = tmp_path / "grid.yaml"
        grid.write_text(
            yaml.safe_dump(
                {
                    "tasks": TASKS,
                    "builds_file": str(builds_file(tmp_path / "builds.yaml", agents, reference="steady")),
                    "builds": ["steady"],
                    "seeds": SEEDS,
                    "adaptive": {"enabled": False},
                    "devices": fleet.serials,
                    "run_dir": str(run_dir),
                }
            )
        )
        proc = _start(grid)
        deadline = time.monotonic() + 120
        while len(episodes(run_dir)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        before = _whole_lines(run_dir / "episodes.jsonl")
        interrupted_at = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and "interrupted" in err.decode(), err.decode()[-2000:]
        assert time.monotonic() - interrupted_at < 15
        assert (run_dir / "episodes.jsonl").read_bytes().startswith(before)
        done = subprocess.run(
            [*GRID, str(grid), "--no-bars"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (run_dir / "episodes.jsonl").read_bytes().startswith(before)
    assert len(scored(run_dir)) == len(TASKS) * SEEDS
