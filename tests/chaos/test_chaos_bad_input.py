"""Bad input through the real `agent-eval` command: a clear message naming the file or build, nothing lost.

One run directory holds three finished episodes (two of them with an invalid step: an answer that is not JSON,
and a tap on an element that does not exist); every bad command after that must leave its lines as they were.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from _chaos import NOT_JSON, REPO, TASKS_DIR, OracleAgent, builds_file, episodes, oracle_tasks
from scripted_endpoint import free_port

from virtual_phone import start_fleet

pytestmark = pytest.mark.slow

AGENT_EVAL = str(Path(sys.executable).parent / "agent-eval")
TASK = str(TASKS_DIR / "airplane_mode_on.yaml")
MISSING_PHONE = "emulator-6098"


@dataclass
class Earlier:
    """A run directory with finished episodes, and the bytes its episodes.jsonl must keep."""

    serial: str
    agent: OracleAgent
    run_dir: Path
    lines: bytes

    def kept(self) -> bool:
        return (self.run_dir / "episodes.jsonl").read_bytes().startswith(self.lines)


def agent_eval(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AGENT_EVAL, *args], capture_output=True, text=True, cwd=REPO, timeout=timeout, check=False
    )


def grid_module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_eval", "run", *args, "--no-bars"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
        check=False,
    )


def run_args(earlier: Earlier, *extra: str, task: str = TASK) -> list[str]:
    return [
        "run",
        task,
        "--endpoint",
        earlier.agent.url,
        "--model",
        earlier.agent.model,
        "--run-dir",
        str(earlier.run_dir),
        *extra,
    ]


@pytest.fixture(scope="module")
def earlier(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Earlier]:
    run_dir = tmp_path_factory.mktemp("bad-input") / "run"
    agent = OracleAgent(oracle_tasks(["airplane_mode_on"]), flaws={1: "babble", 2: "missing"}, model="oracle")
    with agent, start_fleet(count=1, base_port=6030) as fleet:
        serial = fleet.serials[0]
        first = Earlier(serial, agent, run_dir, b"")
        done = agent_eval(*run_args(first, "--seeds", "3", "--device", serial))
        assert done.returncode == 0, done.stdout + done.stderr
        first.lines = (run_dir / "episodes.jsonl").read_bytes()
        yield first


def test_answers_that_are_not_json_or_name_a_missing_element_are_invalid_steps(earlier: Earlier) -> None:
    by_seed = {e["seed"]: e for e in episodes(earlier.run_dir)}
    assert [by_seed[s]["outcome"] for s in range(3)] == ["success"] * 3
    assert [by_seed[s]["invalid_actions"] for s in range(3)] == [0, 1, 1]
    steps = {
        seed: [
            yaml.safe_load(line)
            for line in (earlier.run_dir / by_seed[seed]["episode_dir"] / "steps.jsonl")
            .read_text()
            .splitlines()
        ]
        for seed in (1, 2)
    }
    babble, missing = steps[1][0], steps[2][0]
    assert babble["raw_answer"] == NOT_JSON and babble["action"] is None and babble["invalid_reason"]
    assert missing["action"]["element"] == 999 and "no element 999" in missing["invalid_reason"]


def test_malformed_yaml_and_unknown_keys_name_the_file(earlier: Earlier, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("id: broken\nversion: 1\ngoal: [Turn on airplane mode.\n")
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text(Path(TASK).read_text().replace("goal_state:", "goal_sate:"))
    for path, wanted in ((broken, "not valid YAML"), (unknown, "unknown field 'goal_sate'")):
        done = agent_eval(*run_args(earlier, "--device", earlier.serial, task=str(path)))
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert str(path) in done.stderr and wanted in done.stderr, done.stderr
    assert earlier.kept()

    # A grid file and a builds file: the same, naming the file (and the field).
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump({"tasks": ["airplane_mode_on"], "seed": 3}))
    done = grid_module(str(grid))
    assert (
        done.returncode == 2
        and f"{grid}: invalid grid file" in done.stderr
        and "seed: unknown field" in (done.stderr)
    )
    grid.write_text("tasks: [airplane_mode_on\n")
    done = grid_module(str(grid))
    assert done.returncode == 2 and f"{grid}: line 2" in done.stderr and "not valid YAML" in done.stderr
    builds = builds_file(tmp_path / "builds.yaml", {"oracle": earlier.agent}, reference="oracle")
    builds.write_text(builds.read_text().replace("scheme: endpoint", "scheme: endpoint\n  colour: red"))
    grid.write_text(yaml.safe_dump({"tasks": ["airplane_mode_on"], "builds_file": str(builds)}))
    done = grid_module(str(grid))
    assert done.returncode == 2 and f"{builds}: invalid build file" in done.stderr and "colour" in done.stderr


def test_a_task_whose_oracle_fails_is_named_by_validate(earlier: Earlier, tmp_path: Path) -> None:
    lost = tmp_path / "lost.yaml"
    lost.write_text(
        Path(TASK)
        .read_text()
        .replace("Airplane mode", "Teleport mode")
        .replace("id: airplane_mode_on", "id: teleport_on")
    )
    done = agent_eval("validate", str(lost), "--device", earlier.serial)
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout + done.stderr
    assert "teleport_on" in out and "Teleport mode" in out and "all tasks valid" not in out


def test_an_endpoint_answering_garbage_is_an_infra_error_and_a_rerun_finishes(earlier: Earlier) -> None:
    earlier.agent.fail = "garbage"
    try:
        done = agent_eval(
            *run_args(earlier, "--seeds", "4", "--device", earlier.serial, "--max-attempts", "2")
        )
    finally:
        earlier.agent.fail = None
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert earlier.agent.url in done.stdout + done.stderr
    assert "failed every attempt, 2 times" in done.stderr and "rerun the same command" in done.stderr
    assert earlier.kept()
    failed = [e for e in episodes(earlier.run_dir) if e["outcome"] == "infra_error"]
    assert [e["seed"] for e in failed] == [3, 3]
    # The endpoint is fixed: the same command continues and plays only seed 3.
    again = agent_eval(*run_args(earlier, "--seeds", "4", "--device", earlier.serial))
    assert again.returncode == 0, again.stderr
    assert earlier.kept()
    scored = [e["seed"] for e in episodes(earlier.run_dir) if e["outcome"] != "infra_error"]
    assert scored == [0, 1, 2, 3]
    earlier.lines = (earlier.run_dir / "episodes.jsonl").read_bytes()


def test_an_endpoint_that_hangs_times_out(earlier: Earlier) -> None:
    earlier.agent.delay_s = 30.0
    started = time.monotonic()
    try:
        done = agent_eval(
            *run_args(earlier, "--seeds", "5", "--device", earlier.serial, "--max-attempts", "1"),
            "--timeout",
            "1",
        )
    finally:
        earlier.agent.delay_s = 0.0
    assert time.monotonic() - started < 60  # not the 30 s per request the server would take
    assert done.returncode == 2 and "timeout" in done.stdout + done.stderr, done.stdout + done.stderr
    assert earlier.kept()


def test_a_device_serial_that_does_not_exist_is_named(earlier: Earlier, tmp_path: Path) -> None:
    done = agent_eval(*run_args(earlier, "--seeds", "6", "--device", MISSING_PHONE))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"adb device {MISSING_PHONE!r} is not connected" in done.stderr, done.stderr
    assert earlier.kept()
    # The same through a grid file naming its phones.
    grid = tmp_path / "grid.yaml"
    builds = builds_file(tmp_path / "builds.yaml", {"oracle": earlier.agent}, reference="oracle")
    grid.write_text(
        yaml.safe_dump(
            {
                "tasks": ["airplane_mode_on"],
                "builds_file": str(builds),
                "devices": [MISSING_PHONE],
                "run_dir": str(tmp_path / "grid-run"),
            }
        )
    )
    done = grid_module(str(grid))
    assert done.returncode == 2 and MISSING_PHONE in done.stderr and "Traceback" not in done.stderr


def test_a_grid_build_whose_endpoint_answers_garbage_is_named_and_stops_the_grid(
    earlier: Earlier, tmp_path: Path
) -> None:
    # /models answers (so the build is up), but every chat answer is an HTML error page.
    garbage = OracleAgent(oracle_tasks(["airplane_mode_on"]), model="junk")
    garbage.fail = "garbage"
    builds = builds_file(tmp_path / "builds.yaml", {"junk": garbage}, reference="junk")
    grid = tmp_path / "grid.yaml"
    run_dir = tmp_path / "grid-run"
    grid.write_text(
        yaml.safe_dump(
            {
                "tasks": ["airplane_mode_on"],
                "builds_file": str(builds),
                "devices": [earlier.serial],
                "max_attempts": 2,
                "run_dir": str(run_dir),
            }
        )
    )
    with garbage:
        done = grid_module(str(grid))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "(last: junk airplane_mode_on seed" in done.stderr, done.stderr
    assert garbage.url in done.stderr and "not an OpenAI chat completion" in done.stderr
    assert "rerun the same command" in done.stderr
    # Two cells used their attempts, then the grid stopped instead of burning through the rest.
    lines = episodes(run_dir)
    assert lines and all(e["outcome"] == "infra_error" for e in lines) and len(lines) == 4


def test_a_grid_build_whose_endpoint_is_down_is_named_before_anything_runs(
    earlier: Earlier, tmp_path: Path
) -> None:
    builds = tmp_path / "builds.yaml"
    nobody = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there: connection refused
    builds.write_text(
        yaml.safe_dump(
            {
                "builds": [
                    {
                        "name": "silent",
                        "reference": True,
                        "scheme": "endpoint",
                        "engine": "endpoint",
                        "base_url": nobody,
                        "model": "silent",
                    }
                ]
            }
        )
    )
    grid = tmp_path / "grid.yaml"
    run_dir = tmp_path / "grid-run"
    grid.write_text(
        yaml.safe_dump(
            {
                "tasks": ["airplane_mode_on"],
                "builds_file": str(builds),
                "devices": [earlier.serial],
                "run_dir": str(run_dir),
            }
        )
    )
    done = grid_module(str(grid))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "build 'silent'" in done.stderr and "does not answer" in done.stderr, done.stderr
    assert not (run_dir / "episodes.jsonl").exists()


def test_a_task_whose_setup_fails_mid_grid_is_named_and_earlier_episodes_kept(
    earlier: Earlier, tmp_path: Path
) -> None:
    broken = tmp_path / "bad_setup.yaml"
    broken.write_text(
        Path(TASK)
        .read_text()
        .replace("id: airplane_mode_on", "id: bad_setup")
        .replace("settings put global airplane_mode_on 0", "settings put bogus airplane_mode_on 0")
    )
    builds = builds_file(tmp_path / "builds.yaml", {"oracle": earlier.agent}, reference="oracle")
    run_dir = tmp_path / "grid-run"
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        yaml.safe_dump(
            {
                "tasks": ["airplane_mode_on", str(broken)],
                "builds_file": str(builds),
                "seeds": 1,
                "devices": [earlier.serial],
                "run_dir": str(run_dir),
            }
        )
    )
    done = grid_module(str(grid))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{broken}: setup[0] `settings put bogus airplane_mode_on 0` failed" in done.stderr, done.stderr
    assert [(e["task_id"], e["outcome"]) for e in episodes(run_dir)] == [("airplane_mode_on", "success")]


def test_a_grid_build_whose_endpoint_hangs_times_out_as_its_builds_file_says(
    earlier: Earlier, tmp_path: Path
) -> None:
    hung = OracleAgent(oracle_tasks(["airplane_mode_on"]), model="hung")
    hung.delay_s = 30.0  # every chat answer takes 30 s
    builds = builds_file(tmp_path / "builds.yaml", {"hung": hung}, reference="hung")
    builds.write_text(
        builds.read_text().replace("scheme: endpoint", "scheme: endpoint\n  request_timeout_s: 1")
    )
    grid = tmp_path / "grid.yaml"
    run_dir = tmp_path / "grid-run"
    grid.write_text(
        yaml.safe_dump(
            {
                "tasks": ["airplane_mode_on"],
                "builds_file": str(builds),
                "seeds": 2,
                "devices": [earlier.serial],
                "max_attempts": 1,
                "run_dir": str(run_dir),
            }
        )
    )
    started = time.monotonic()
    with hung:
        done = grid_module(str(grid))
    assert time.monotonic() - started < 90  # not 2 cells × 3 tries × the default 120 s
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "(last: hung airplane_mode_on seed" in done.stderr and "no answer within 1 s" in done.stderr, (
        done.stderr
    )
    assert [e["outcome"] for e in episodes(run_dir)] == ["infra_error", "infra_error"]
