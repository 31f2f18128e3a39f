"""A grid on two virtual phones with faults injected scores exactly like the same grid without them.

Flaky UI dumps, slow screencaps, a dropping transport and a restless screen are the harness's problem:
the scripted agents are deterministic, so every episode's outcome must match its fault-free twin.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from _chaos import (
    REPO,
    OracleAgent,
    builds_file,
    during,
    episodes,
    oracle_tasks,
    outcomes_table,
    read_faults,
    scored,
)
from _phones import adb
from rich.console import Console

from agent_eval.grid import GridSpec, run_grid
from virtual_phone import start_fleet

pytestmark = pytest.mark.slow

TASKS = ["wifi_on", "airplane_mode_on", "bluetooth_on"]
SEEDS = 3
AGENT_FAILURES = {"undone", "no_stop", "premature_done", "nav_fail"}
COMPARED = ("outcome", "reached", "success", "said", "said_at_step", "steps", "invalid_actions")


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, OracleAgent]]:
    tasks = oracle_tasks(TASKS)
    servers = {
        # steady undoes its work on seed 1; shaky babbles, quits early or names a missing element.
        "steady": OracleAgent(tasks, flaws={1: "undo"}, model="steady"),
        "shaky": OracleAgent(tasks, flaws={0: "babble", 1: "quit", 2: "missing"}, model="shaky"),
    }
    for server in servers.values():
        server.start()
    yield servers
    for server in servers.values():
        server.stop()


def _grid(tmp_path: Path, agents: dict[str, OracleAgent], serials: list[str], name: str) -> GridSpec:
    return GridSpec(
        tasks=TASKS,
        builds_file=str(builds_file(tmp_path / "builds.yaml", agents, reference="steady")),
        seeds=SEEDS,
        adaptive={"enabled": False},
        devices=serials,
        serving="side-by-side",
        max_attempts=3,
        run_dir=str(tmp_path / name),
    )


def _set_faults(serial: str, **fields: str) -> None:
    for field, value in fields.items():
        out = adb(serial, "emu", "faults", "set", field, value).stdout.decode()
        assert "KO" not in out, out


def _dump_outage(serial: str, run_dir: Path) -> None:
    """Mid-run, every dump of one phone fails until an attempt gives up on it: an infra error to retry."""
    deadline = time.monotonic() + 120
    while len(episodes(run_dir)) < 4 and time.monotonic() < deadline:
        time.sleep(0.1)
    _set_faults(serial, dump_fail_rate="1.0")
    while time.monotonic() < deadline:
        if any(e["outcome"] == "infra_error" for e in episodes(run_dir)):
            break
        time.sleep(0.1)
    _set_faults(serial, dump_fail_rate="0.2")


def test_injected_faults_never_change_an_outcome(agents: dict[str, OracleAgent], tmp_path: Path) -> None:
    fault_log = tmp_path / "faults.jsonl"
    out = io.StringIO()
    console = Console(file=out, width=200)
    with start_fleet(count=2, base_port=6000, fault_log=fault_log) as fleet:
        serials = fleet.serials
        clean = run_grid(_grid(tmp_path, agents, serials, "clean"), console=console, bars=False, html=False)
        assert read_faults(fault_log) == []
        for serial in serials:
            _set_faults(
                serial, dump_fail_rate="0.2", added_latency_s="0.2", latency_commands="screencap", seed="7"
            )
        # Only the first phone loses its transport, every 40 commands from now on (so several times a run).
        _set_faults(serials[0], drop_transport_after="40")
        # The other phone's screen never stops moving (an animated progress bar): dumps never settle.
        _set_faults(serials[1], restless_screen="true")
        burst = threading.Thread(target=_dump_outage, args=(serials[1], tmp_path / "faulty"), daemon=True)
        burst.start()
        faulty = run_grid(_grid(tmp_path, agents, serials, "faulty"), console=console, bars=False, html=False)
        burst.join(timeout=5)
        for serial in serials:
            adb(serial, "emu", "faults", "reset")
    text = out.getvalue()

    faults = read_faults(fault_log)
    kinds = Counter((f.serial, f.kind) for f in faults)
    assert kinds[(serials[0], "drop_transport")] >= 1 and kinds[(serials[1], "drop_transport")] == 0
    assert kinds[(serials[1], "restless_screen")] >= 1 and kinds[(serials[0], "restless_screen")] == 0
    assert all(kinds[(s, "dump_fail")] >= 1 and kinds[(s, "latency")] >= 1 for s in serials), kinds
    assert all("screencap" in f.command for f in faults if f.kind == "latency")

    # Every cell finished in both runs, and no phone was given up on.
    assert clean.problems == [] and faulty.problems == [], (faulty.problems, text[-3000:])
    before, after = scored(tmp_path / "clean"), scored(tmp_path / "faulty")
    assert len(before) == len(after) == len(TASKS) * 2 * SEEDS
    assert before.keys() == after.keys()
    # The scripted agents make mixed outcomes, so "identical" is a real check, not all-success.
    assert {e["outcome"] for e in before.values()} >= {"success", "undone", "premature_done"}
    for key, twin in before.items():
        got = after[key]
        assert {f: got[f] for f in COMPARED} == {f: twin[f] for f in COMPARED}, (key, got.get("error"))

    # Faults did strike scored episodes, agent failures included, and were absorbed: their outcome is the
    # fault-free twin's (checked above), so none of them became an agent failure because of a fault.
    struck = {key: list(during(faults, e)) for key, e in after.items()}
    assert sum(1 for hits in struck.values() if hits) >= len(after) // 2
    assert any(hits and after[key]["outcome"] in AGENT_FAILURES for key, hits in struck.items())

    # Attempts the faults did break are infra errors, each explained by a fault on its phone, and retried.
    lines = episodes(tmp_path / "faulty")
    infra = [e for e in lines if e["outcome"] == "infra_error"]
    assert infra, "the dump outage should have cost at least one attempt"
    for e in infra:
        assert e["error"] and list(during(faults, e)), e
        assert (e["build"], e["task_id"], e["seed"]) in after
    # The scorecard counts them apart from the rates, which equal the fault-free run's.
    assert faulty.scorecard is not None and clean.scorecard is not None
    with_faults = {b.build: b for b in faulty.scorecard.builds}
    for score in clean.scorecard.builds:
        mine = with_faults[score.build]
        assert mine.infra_error_attempts == sum(1 for e in infra if e["build"] == score.build)
        assert mine.unresolved_infra_errors == 0 and mine.episodes == score.episodes == len(TASKS) * SEEDS
        assert (mine.success.count, mine.navigation.count) == (score.success.count, score.navigation.count)
        assert score.infra_error_attempts == 0
    assert faulty.infra_attempts == len(infra)
    written = outcomes_table((tmp_path / "faulty" / "scorecard.md").read_text())
    for build in agents:
        assert written[build]["infra attempts"] == str(sum(1 for e in infra if e["build"] == build))
        assert written[build]["unscored (infra)"] == "0"
    print(f"faults injected: {dict(kinds)}; infra-error attempts retried: {len(infra)}")


def test_a_phone_lost_mid_grid_is_named_and_its_cells_finish_on_the_other(
    agents: dict[str, OracleAgent], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    with start_fleet(count=2, base_port=6004) as fleet:
        keep, lose = fleet.serials
        spec = _grid(tmp_path, agents, fleet.serials, "run").model_copy(
            update={"tasks": TASKS[:2], "seeds": 2}
        )

        def kill_phone() -> None:
            deadline = time.monotonic() + 120
            while len(episodes(run_dir)) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            adb(lose, "emu", "kill")

        killer = threading.Thread(target=kill_phone, daemon=True)
        killer.start()
        result = run_grid(spec, console=Console(file=io.StringIO(), width=200), bars=False, html=False)
        killer.join(timeout=5)
    # Every cell was scored once, on whichever phone was left; the lost one is named, not hidden.
    left = [c.key for c in result.not_run]
    assert left == [], f"{left} left unplayed although {keep} was free (its worker had already stopped)"
    assert set(scored(run_dir)) == {(b, t, s) for b in agents for t in TASKS[:2] for s in range(2)}
    assert result.retired_devices == [lose] and result.not_run == [] and result.failed == []
    assert result.problems == [f"device(s) lost: {lose}"]
    infra = [e for e in episodes(run_dir) if e["outcome"] == "infra_error"]
    assert all(e["device"] == lose for e in infra)
    assert {
        e["device"]
        for e in scored(run_dir).values()
        if e["started_at"] > max((i["finished_at"] for i in infra), default="")
    } <= {keep}


def test_when_every_phone_dies_the_grid_stops_saying_so_and_a_rerun_finishes(
    agents: dict[str, OracleAgent], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    grid = tmp_path / "grid.yaml"
    command = [sys.executable, "-m", "agent_eval", "run", str(grid), "--no-bars"]
    with start_fleet(count=1, base_port=6008) as fleet:
        spec = _grid(tmp_path, agents, fleet.serials, "run")
        grid.write_text(
            yaml.safe_dump({**spec.model_dump(mode="json"), "tasks": TASKS[:2], "builds": ["steady"]})
        )
        harness = subprocess.Popen(
            command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 120
        while len(episodes(run_dir)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        before = (run_dir / "episodes.jsonl").read_bytes()
        fleet.process.kill()  # the phone process crashes: the whole "emulator" is gone
        out, err = harness.communicate(timeout=300)
    assert harness.returncode == 2, err
    lost = f"device(s) lost: {fleet.serials[0]}"
    assert lost in err and "episode(s) not run" in err and "rerun the same command" in err, err
    assert "every device was lost" in out and (run_dir / "scorecard.json").is_file()
    assert (run_dir / "episodes.jsonl").read_bytes().startswith(before)
    # A new phone on the same port, the same command: the rest is played, nothing twice.
    with start_fleet(count=1, base_port=6008):
        again = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0, again.stderr
    assert (run_dir / "episodes.jsonl").read_bytes().startswith(before)
    assert set(scored(run_dir)) == {("steady", t, s) for t in TASKS[:2] for s in range(SEEDS)}


def _a_step_recorded(run_dir: Path) -> bool:
    return any(f.stat().st_size > 0 for f in (run_dir / "episodes").glob("**/steps.jsonl"))


def test_a_frozen_phone_is_given_up_on_not_waited_for_forever(
    agents: dict[str, OracleAgent], tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    grid = tmp_path / "grid.yaml"
    with start_fleet(count=1, base_port=6012) as fleet:
        spec = _grid(tmp_path, agents, fleet.serials, "run")
        grid.write_text(
            yaml.safe_dump({**spec.model_dump(mode="json"), "tasks": TASKS[:1], "builds": ["steady"]})
        )
        harness = subprocess.Popen(
            [sys.executable, "-m", "agent_eval", "run", str(grid), "--no-bars"],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        # Freeze it mid-episode, as soon as a step is recorded: its next call is a shell command or a screen
        # capture (timeouts of 10-30 s). Frozen between episodes, the reset's snapshot load would wait its
        # 120 s instead: the same verdict, slower.
        deadline = time.monotonic() + 120
        while not _a_step_recorded(run_dir) and time.monotonic() < deadline:
            time.sleep(0.005)
        frozen_at = time.monotonic()
        os.kill(fleet.process.pid, signal.SIGSTOP)  # the phone hangs: it accepts nothing, answers nothing
        try:
            _, err = harness.communicate(timeout=400)
        finally:
            os.kill(fleet.process.pid, signal.SIGCONT)
    # Every adb call has a timeout (the longest, a snapshot load, 120 s): the grid stops and says why.
    assert harness.returncode == 2 and f"device(s) lost: {fleet.serials[0]}" in err, err
    print(f"given up on {time.monotonic() - frozen_at:.1f} s after the freeze")
    stuck = [e for e in episodes(run_dir) if e["outcome"] == "infra_error"]
    assert stuck and all(e["error"] and e["device"] == fleet.serials[0] for e in stuck), stuck
