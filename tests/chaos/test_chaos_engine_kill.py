"""A real engine killed with SIGKILL mid-grid: restarted, the run completes.

The episodes the kill interrupted end as infra_error attempts (never scored) and are played again after the
restart, which comes at once: the grid asks whether the engine died after each failed attempt. The engine
is llama-server serving the shipped GGUF (`gguf-q4_1`) to two phones, one slot each, so the kill takes slots
in the middle of their requests: it starts in seconds where a vLLM server takes ~40 s on an AVX2 host, and
the grid's restart-and-retry does not depend on the engine kind (a vLLM server killed and restarted once,
then refused a second restart, is tests/builds/test_builds_engine.py's).
"""

from __future__ import annotations

import io
import threading
import time
from pathlib import Path

import psutil
import pytest
from _chaos import episodes, scored
from _engines import prepared_default_builds
from rich.console import Console

from agent_eval.grid import GridSpec, run_grid
from agent_eval.records import EngineRecord

pytestmark = [pytest.mark.engine, pytest.mark.slow]

BUILD = "gguf-q4_1"
ENGINE_PORT = 8300
SEEDS = 4
PHONES = 2


def _engine_servers(port: int) -> list[psutil.Process]:
    """The llama-server processes listening on `port` (the engine itself, not its guard)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        server = bool(cmd) and cmd[0].endswith("llama-server")
        if server and str(port) in cmd and "--" not in cmd:
            found.append(proc)
    return found


def _kill_mid_episode(run_dir: Path, killed: list[int]) -> None:
    """Once an episode has recorded a step but not yet its outcome (it is under way), SIGKILL the engine."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        ended = {(e["build"], e["task_id"], str(e["seed"])) for e in episodes(run_dir)}
        under_way = [
            p
            for p in run_dir.glob("episodes/*/*/*/steps.jsonl")
            if p.stat().st_size > 0 and (p.parts[-4], p.parts[-3], p.parts[-2]) not in ended
        ]
        if under_way:
            for proc in _engine_servers(ENGINE_PORT):
                proc.kill()
                killed.append(proc.pid)
            return
        time.sleep(0.05)


def test_a_killed_engine_is_restarted_and_the_interrupted_episode_retried(tmp_path: Path) -> None:
    _, ready = prepared_default_builds()
    assert BUILD in ready, f"{BUILD} was not prepared: scripts/setup.sh installs llama-cpp-python"
    run_dir = tmp_path / "run"
    spec = GridSpec(
        tasks=["wifi_on"],
        builds=[BUILD],
        reference=BUILD,
        seeds=SEEDS,
        adaptive={"enabled": False},
        max_steps=4,
        max_attempts=3,
        devices=PHONES,
        phone_base_port=6010,
        engine_base_port=ENGINE_PORT,
        run_dir=str(run_dir),
    )
    killed: list[int] = []
    out = io.StringIO()
    killer = threading.Thread(target=_kill_mid_episode, args=(run_dir, killed), daemon=True)
    killer.start()
    result = run_grid(spec, console=Console(file=out, width=200), bars=False, html=False)
    killer.join(timeout=5)
    text = out.getvalue()

    assert killed, "the engine was never seen serving"
    assert not any(psutil.pid_exists(pid) for pid in killed)
    assert _engine_servers(ENGINE_PORT) == [], "the grid left its engine running"
    assert "died; restarting it" in text, text[-3000:]
    # The run completed: every cell scored once, nothing left for a rerun.
    assert result.problems == [], (result.problems, text[-3000:])
    assert set(scored(run_dir)) == {(BUILD, "wifi_on", seed) for seed in range(SEEDS)}
    lines = episodes(run_dir)
    interrupted = [e for e in lines if e["outcome"] == "infra_error"]
    assert interrupted and all(e["error"] for e in interrupted)
    # The death is noticed at each phone's first failed attempt (a second one when the engine's guard had not
    # yet seen its server go), not after cells spent their 3 attempts each on a dead server.
    assert len(interrupted) <= 2 * PHONES, [(e["seed"], e["attempt"]) for e in interrupted]
    # Each interrupted episode's attempt is an infra error; its scored retry comes after it: nothing is lost.
    for failed in interrupted:
        retry = scored(run_dir)[(BUILD, "wifi_on", failed["seed"])]
        assert retry["attempt"] > failed["attempt"] and retry["started_at"] > failed["finished_at"]
    # Not counted in the rates: the scorecard scores 2 episodes and counts the failed attempts apart.
    assert result.scorecard is not None
    (score,) = result.scorecard.builds
    assert score.episodes == SEEDS and score.unresolved_infra_errors == 0
    assert score.infra_error_attempts == len(interrupted) == result.infra_attempts
    record = EngineRecord.model_validate_json((run_dir / "engines" / f"{BUILD}.json").read_text())
    assert record.restarts == 1
    log = (run_dir / "engines" / f"{BUILD}.log").read_text()
    assert log.count(f"=== agent-eval: starting {BUILD}") == 2
    assert f"--parallel {PHONES}" in log  # one slot per phone, both times
    print(f"engine killed (pid {killed}); {len(interrupted)} infra-error attempt(s) before the restart")
