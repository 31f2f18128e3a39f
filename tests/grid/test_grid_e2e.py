"""A grid end to end on virtual phones, scripted endpoints as builds: a good agent twice and a degraded one.

The degraded agent switches the goal back off after reaching it on odd seeds (deterministic by seed), so it
navigates like the reference but fails completion half the time. Also: a grid killed with SIGKILL continues.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from _goal_agents import GoalAgent, builds_file, start_agents
from rich.console import Console
from scripted_endpoint import free_port

from agent_eval.device.driver import Device
from agent_eval.errors import ConfigError, InfraError, RunStoreError
from agent_eval.grid import GridSpec, load_grid, run_grid, spec_from
from agent_eval.records import Outcome
from agent_eval.scoring.stats import Verdict
from virtual_phone import start_fleet

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TASKS = ["wifi_on", "airplane_mode_on"]


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, GoalAgent]]:
    servers = start_agents()
    yield servers
    for server in servers.values():
        server.stop()


def episodes(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "episodes.jsonl"
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []
    )


def test_good_and_degraded_agents_get_the_expected_verdicts(
    agents: dict[str, GoalAgent], tmp_path: Path
) -> None:
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        yaml.safe_dump(
            {
                "tasks": TASKS,
                "builds_file": str(builds_file(tmp_path / "builds.yaml", agents)),
                "seeds": 4,
                "adaptive": {"enabled": True, "schedule": [8]},
                "devices": 2,
                "phone_base_port": 5900,
                "serving": "side-by-side",
                "run_dir": str(tmp_path / "run"),
            }
        )
    )
    spec = load_grid(grid)
    console = Console(record=True, width=200, force_terminal=False)
    result = run_grid(spec, console=console, bars=False)
    out = console.export_text()

    assert result.problems == [] and result.phases == 2
    # Phase 1: 4 paired seeds everywhere. Neither build is decided on 8 pairs (degraded's 4 losses give
    # p = 1/16; good-again's 8 agreeing pairs leave a drop up to ~0.4), so both grow to 8 with the reference.
    assert result.targets == {(b, t): 8 for b in ("good", "degraded", "good-again") for t in TASKS}
    records = episodes(tmp_path / "run")
    keys = Counter((e["build"], e["task_id"], e["seed"]) for e in records)
    assert all(n == 1 for n in keys.values()) and len(keys) == 48 == result.planned
    for build, task in result.targets:
        assert sorted(s for b, t, s in keys if (b, t) == (build, task)) == list(
            range(result.targets[(build, task)])
        )
    by = {(e["build"], e["task_id"], e["seed"]): e for e in records}
    for (build, task, seed), e in by.items():
        expected = "undone" if build == "degraded" and seed % 2 == 1 else "success"
        assert e["outcome"] == expected, (build, task, seed, e["outcome"])
    # Pairing: every build was asked with the same episode seeds the store records.
    assert agents["degraded"].seeds.keys() == set(range(8))
    assert agents["good-again"].seeds.keys() == set(range(8))

    card = result.scorecard
    assert card is not None and card.reference == "good"
    assert card.regression is not None
    verdicts = {(c.build, m.metric): m for c in card.regression.builds for m in (c.navigation, c.success)}
    assert verdicts[("degraded", "success")].verdict is Verdict.REGRESSION
    assert verdicts[("degraded", "success")].b == 8 and verdicts[("degraded", "success")].c == 0
    assert verdicts[("degraded", "navigation")].verdict is not Verdict.REGRESSION
    assert verdicts[("degraded", "navigation")].b == 0
    for metric in ("navigation", "success"):
        assert verdicts[("good-again", metric)].verdict in (Verdict.NON_INFERIOR, Verdict.INCONCLUSIVE)
        assert verdicts[("good-again", metric)].pairs == 16
    # The scorecard's numbers are the episodes' numbers.
    scores = {s.build: s for s in card.builds}
    for build in ("good", "good-again", "degraded"):
        mine = [e for e in records if e["build"] == build]
        assert scores[build].episodes == len(mine)
        assert scores[build].success.count == sum(e["success"] for e in mine)
        assert scores[build].navigation.count == sum(e["reached"] for e in mine)
    saved = json.loads((tmp_path / "run" / "scorecard.json").read_text())
    assert saved["regression"]["builds"][-1]["success"]["verdict"] == "REGRESSION"
    assert (tmp_path / "run" / "scorecard.md").is_file()
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["config"]["grid"]["margin"] == 0.1 and run["config"]["reference"] == "good"
    assert "phase 2" in out and "undone" in out and "REGRESSION" in out

    # Running the same grid again plays nothing new; a changed build set is refused, growth is not.
    again = run_grid(spec, console=Console(record=True, width=200), bars=False, score=False)
    assert sum(again.outcomes.values()) == 0 and again.kept == 48
    assert len(episodes(tmp_path / "run")) == 48


AGENT_SCRIPT = [sys.executable, "-m", "agent_eval", "run"]


def test_a_killed_grid_continues_without_losing_or_repeating_episodes(
    agents: dict[str, GoalAgent], tmp_path: Path
) -> None:
    for server in agents.values():
        server.delay_s = 0.15  # slow enough that the kill lands mid-episode
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        yaml.safe_dump(
            {
                "tasks": ["airplane_mode_on"],
                "builds_file": str(builds_file(tmp_path / "builds.yaml", agents)),
                "builds": ["good", "degraded"],
                "seeds": 4,
                "adaptive": {"enabled": False},
                "devices": 2,
                "phone_base_port": 5910,
                "serving": "side-by-side",
                "run_dir": str(tmp_path / "run"),
            }
        )
    )
    run_dir = tmp_path / "run"
    env = {**os.environ, "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
    try:
        proc = subprocess.Popen(
            [*AGENT_SCRIPT, str(grid), "--no-bars"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 120
        while len(episodes(run_dir)) < 3 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        first = (run_dir / "episodes.jsonl").read_bytes()
        before = {(e["build"], e["task_id"], e["seed"]) for e in episodes(run_dir)}
        assert 3 <= len(before) < 8

        # The same run directory: fewer seeds or another build set are refused before anything runs.
        quiet = Console(file=io.StringIO())
        with pytest.raises(ConfigError, match="grow its seeds, not shrink"):
            run_grid(spec_from([grid], seeds=2), console=quiet, bars=False)
        with pytest.raises(RunStoreError, match="different configuration") as refused:
            run_grid(spec_from([grid], builds=["good", "good-again"]), console=quiet, bars=False)
        assert "build degraded is no longer included" in str(refused.value)
        assert (run_dir / "episodes.jsonl").read_bytes() == first

        # More seeds are growth: the rerun continues and adds only what is missing.
        again = subprocess.run(
            [*AGENT_SCRIPT, str(grid), "--no-bars", "--seeds", "5"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        for server in agents.values():
            server.delay_s = 0.0
    assert again.returncode == 0, again.stderr
    final = (run_dir / "episodes.jsonl").read_bytes()
    # Every line written before the kill is still there, byte for byte (a torn last line is cut, not kept).
    whole = first[: first.rfind(b"\n") + 1]
    assert final.startswith(whole)
    keys = [(e["build"], e["task_id"], e["seed"]) for e in episodes(run_dir)]
    assert len(keys) == len(set(keys)) == 10  # 2 builds × 5 seeds, none twice
    assert before <= set(keys)
    assert json.loads((run_dir / "run.json").read_text())["config"]["seeds"] == 5
    assert (run_dir / "scorecard.json").is_file()


def test_a_failing_engine_is_retried_counted_apart_and_the_rerun_finishes(
    agents: dict[str, GoalAgent], tmp_path: Path
) -> None:
    spec = GridSpec(
        tasks=["airplane_mode_on"],
        builds_file=str(builds_file(tmp_path / "builds.yaml", agents)),
        builds=["good", "degraded"],
        seeds=2,
        adaptive={"enabled": False},
        max_attempts=2,
        run_dir=str(tmp_path / "run"),
    )
    quiet = Console(file=io.StringIO(), width=200)
    agents["degraded"].fail = "http500"
    try:
        with start_fleet(count=1, base_port=5920) as fleet:
            phone = [Device(fleet.serials[0])]
            broken = run_grid(spec, console=quiet, bars=False, devices=phone)
            agents["degraded"].fail = None
            fixed = run_grid(spec, console=quiet, bars=False, devices=phone)
    finally:
        agents["degraded"].fail = None
    # Each of degraded's two cells used both attempts; the good build's episodes are untouched by it.
    assert broken.infra_attempts == 4 and len(broken.failed) == 2
    assert broken.outcomes == Counter({Outcome.SUCCESS: 2})
    assert "2 episode(s) failed every attempt" in broken.problems[0]
    with pytest.raises(InfraError, match="rerun the same command"):
        broken.raise_for_problems()
    assert fixed.problems == [] and fixed.kept == 2 and sum(fixed.outcomes.values()) == 2
    lines = episodes(tmp_path / "run")
    failed = [e for e in lines if e["outcome"] == "infra_error"]
    assert len(failed) == 4 and all("HTTP 500" in e["error"] for e in failed)
    retried = {
        e["seed"]: e["attempt"] for e in lines if e["build"] == "degraded" and e["outcome"] != "infra_error"
    }
    assert retried == {0: 3, 1: 3}  # attempts count on across sessions
    card = fixed.scorecard
    assert card is not None
    degraded = next(b for b in card.builds if b.build == "degraded")
    assert (
        degraded.infra_error_attempts == 4
        and degraded.episodes == 2
        and degraded.unresolved_infra_errors == 0
    )


def test_a_build_whose_engine_does_not_answer_is_reported_and_the_others_still_run(
    agents: dict[str, GoalAgent], tmp_path: Path
) -> None:
    file = builds_file(tmp_path / "builds.yaml", agents)
    data = yaml.safe_load(file.read_text())
    gone = f"http://127.0.0.1:{free_port()}/v1"
    data["builds"].append(
        {"name": "gone", "scheme": "endpoint", "engine": "endpoint", "base_url": gone, "model": "m"}
    )
    file.write_text(yaml.safe_dump(data))
    spec = GridSpec(
        tasks=["airplane_mode_on"],
        builds_file=str(file),
        builds=["good", "gone"],
        seeds=2,
        run_dir=str(tmp_path / "run"),
    )
    with start_fleet(count=1, base_port=5930) as fleet:
        result = run_grid(
            spec, console=Console(file=io.StringIO()), bars=False, devices=[Device(fleet.serials[0])]
        )
    assert result.outcomes == Counter({Outcome.SUCCESS: 2})
    assert len(result.engine_errors) == 1 and "does not answer" in result.engine_errors[0]
    assert sorted((c.build, c.seed) for c in result.not_run) == [("gone", 0), ("gone", 1)]
    assert result.problems[0].startswith("build 'gone'") and "2 episode(s) not run" in result.problems[-1]
    assert result.scorecard is not None and [b.build for b in result.scorecard.builds] == ["good"]


def test_a_finished_grid_continues_without_serving_its_builds_again(tmp_path: Path) -> None:
    own = GoalAgent(model="own").start()
    file = builds_file(tmp_path / "builds.yaml", {"good": own})
    spec = GridSpec(tasks=["airplane_mode_on"], builds_file=str(file), seeds=2, run_dir=str(tmp_path / "run"))
    quiet = Console(file=io.StringIO())
    with start_fleet(count=1, base_port=5940) as fleet:
        phone = [Device(fleet.serials[0])]
        try:
            first = run_grid(spec, console=quiet, bars=False, devices=phone, score=False)
        finally:
            own.stop()
        # Its endpoint is gone now; nothing is left to play, so nothing needs it.
        again = run_grid(spec, console=quiet, bars=False, devices=phone)
    assert sum(first.outcomes.values()) == 2 and first.kept == 0
    assert again.problems == [] and again.kept == 2 and sum(again.outcomes.values()) == 0
    assert again.scorecard is not None and again.scorecard.builds[0].episodes == 2
