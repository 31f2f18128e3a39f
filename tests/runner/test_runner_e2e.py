"""`agent-eval run tasks/wifi_on.yaml` end to end: the real console script, the virtual phone behind the real
adb server, and scripted OpenAI-compatible endpoints playing known paths. They test the scoring, not a model.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import adbutils
import pytest
from scripted_endpoint import DONE, WAIT, Move, ScriptedEndpoint, free_port, tap

from virtual_phone import start_fleet

REPO = Path(__file__).resolve().parents[2]
WIFI_ON = REPO / "tasks" / "wifi_on.yaml"
AGENT_EVAL = str(Path(sys.executable).parent / "agent-eval")

TO_WIFI: list[Move] = [tap("Settings"), tap("Network & internet"), tap("Internet")]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def phone() -> Iterator[str]:
    with start_fleet(count=1, base_port=5800) as fleet:
        yield fleet.serials[0]


def agent_eval_run(
    run_dir: Path, endpoint: str, serial: str, *extra: str, seeds: int = 1, max_steps: int = 8
) -> subprocess.CompletedProcess[str]:
    args = [AGENT_EVAL, "run", str(WIFI_ON), "--endpoint", endpoint, "--model", "scripted"]
    args += [
        "--seeds",
        str(seeds),
        "--device",
        serial,
        "--run-dir",
        str(run_dir),
        "--max-steps",
        str(max_steps),
    ]
    return subprocess.run(
        [*args, *extra], capture_output=True, text=True, timeout=300, cwd=REPO, env=_env(), check=False
    )


def _env() -> dict[str, str]:
    # A wide terminal keeps rich from wrapping the lines the tests look for.
    return {**os.environ, "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}


def episodes(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "episodes.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def steps(run_dir: Path, seed: int = 0) -> list[dict[str, Any]]:
    path = run_dir / "episodes" / "endpoint" / "wifi_on" / str(seed) / "steps.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def play(script: Sequence[Move], phone: str, run_dir: Path, **kw: Any) -> tuple[dict[str, Any], str]:
    with ScriptedEndpoint(script) as server:
        result = agent_eval_run(run_dir, server.url, phone, **kw)
    assert result.returncode == 0, result.stderr
    assert server.misses == [], server.misses  # every scripted tap found its element in the prompt
    (episode,) = episodes(run_dir)
    return episode, result.stdout


def test_the_right_path_then_done_is_success(phone: str, tmp_path: Path) -> None:
    episode, stdout = play([*TO_WIFI, tap("Wi-Fi"), DONE], phone, tmp_path / "run")
    assert episode["outcome"] == "success"
    assert episode["reached"] is True and episode["success"] is True
    assert episode["goal_timeline"] == [False, False, False, False, True]
    assert episode["said"] == "done" and episode["said_at_step"] == 5
    assert episode["first_reached_step"] == 4 and episode["steps"] == 5 and episode["invalid_actions"] == 0
    assert episode["device"] == phone and episode["attempt"] == 1
    assert episode["episode_dir"] == "episodes/endpoint/wifi_on/0"
    assert "success" in stdout and "wifi_on seed 0" in stdout

    recorded = steps(tmp_path / "run")
    assert [s["step"] for s in recorded] == [1, 2, 3, 4, 5]
    assert [s["goal_after"] for s in recorded] == [False, False, False, True, True]
    episode_dir = tmp_path / "run" / "episodes" / "endpoint" / "wifi_on" / "0"
    for s in recorded:
        assert (episode_dir / s["screenshot"]).read_bytes().startswith(b"\x89PNG")
        assert "<hierarchy" in (episode_dir / s["ui_xml"]).read_text()
        assert len(s["prompt_hash"]) == 64 and s["raw_answer"] and s["action"] is not None
        assert s["latency"]["model_s"] > 0 and s["latency"]["harness_s"] > 0
        # Each step observes the screen its action left (the first also the start); done acts on nothing.
        assert (s["latency"]["observe_s"] > 0) is (s["step"] < 5)
    assert recorded[3]["action"]["type"] == "tap" and any('"Wi-Fi"' in e for e in recorded[3]["elements"])
    # The Wi-Fi switch is shown by its row's title, and the model saw it go on.
    assert any(e.endswith('Switch "Wi-Fi" checked=true') for e in recorded[4]["elements"])
    assert "Goal: Turn Wi-Fi on." in recorded[0]["prompt"][1]["content"]

    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["tasks"][0]["id"] == "wifi_on" and run["builds"][0]["engine"] == "endpoint"
    engine = json.loads((tmp_path / "run" / "engines" / "endpoint.json").read_text())
    assert engine["requests"] == 5 and engine["decode_tok_s"] > 0


def test_wifi_on_then_off_again_then_done_is_undone(phone: str, tmp_path: Path) -> None:
    episode, stdout = play([*TO_WIFI, tap("Wi-Fi"), tap("Wi-Fi"), DONE], phone, tmp_path / "run")
    assert episode["outcome"] == "undone"
    assert episode["goal_timeline"] == [False, False, False, False, True, False]
    assert episode["reached"] is True and episode["success"] is False and episode["said"] == "done"
    assert "undone" in stdout


def test_reaching_the_goal_but_never_saying_done_is_no_stop(phone: str, tmp_path: Path) -> None:
    episode, _ = play([*TO_WIFI, tap("Wi-Fi"), WAIT], phone, tmp_path / "run", max_steps=6)
    assert episode["outcome"] == "no_stop"
    assert episode["goal_timeline"] == [False, False, False, False, True, True, True]
    assert episode["said"] is None and episode["steps"] == 6 and episode["max_steps"] == 6


def test_saying_done_at_once_is_premature_done(phone: str, tmp_path: Path) -> None:
    episode, stdout = play([DONE], phone, tmp_path / "run")
    assert episode["outcome"] == "premature_done"
    assert episode["goal_timeline"] == [False] and episode["said_at_step"] == 1 and episode["steps"] == 1
    assert "premature_done" in stdout


def test_junk_answers_are_counted_as_invalid_steps_not_failures(phone: str, tmp_path: Path) -> None:
    script: list[Move] = [
        lambda prompt: "Let me think about this.",
        lambda prompt: '{"type": "tap", "element": 999}',
    ]
    episode, _ = play([*script, DONE], phone, tmp_path / "run")
    assert episode["outcome"] == "premature_done" and episode["invalid_actions"] == 2
    first, second, _ = steps(tmp_path / "run")
    assert "no JSON action" in first["invalid_reason"] and first["action"] is None
    assert second["action"]["element"] == 999 and second["invalid_reason"]


def test_a_refused_endpoint_is_named_before_anything_runs(phone: str, tmp_path: Path) -> None:
    # The endpoint is the grid's one build: it is checked when served, before any episode starts.
    url = f"http://127.0.0.1:{free_port()}/v1"
    result = agent_eval_run(tmp_path / "run", url, phone, "--max-attempts", "2", seeds=3)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "build 'endpoint'" in result.stderr and "does not answer" in result.stderr, result.stderr
    assert url in result.stderr and "rerun the same command" in result.stderr
    assert "3 episode(s) not run" in result.stderr
    assert episodes(tmp_path / "run") == []


@pytest.mark.parametrize(("fail", "message"), [("http500", "HTTP 500"), ("garbage", "not an OpenAI chat")])
def test_a_broken_endpoint_loses_no_finished_episode(
    phone: str, tmp_path: Path, fail: str, message: str
) -> None:
    run_dir = tmp_path / "run"
    with ScriptedEndpoint([DONE]) as server:
        first = agent_eval_run(run_dir, server.url, phone)
        assert first.returncode == 0, first.stderr
        kept = (run_dir / "episodes.jsonl").read_text()
        server.fail = fail
        second = agent_eval_run(run_dir, server.url, phone, "--max-attempts", "1", seeds=2)
    assert second.returncode == 2 and message in second.stderr
    assert (run_dir / "episodes.jsonl").read_text().startswith(kept)
    outcomes = [(e["seed"], e["outcome"]) for e in episodes(run_dir)]
    assert outcomes == [(0, "premature_done"), (1, "infra_error")]


def test_a_killed_run_continues_where_it_stopped(phone: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with ScriptedEndpoint([tap("Settings"), DONE], delay_s=0.3) as server:
        args = [
            AGENT_EVAL,
            "run",
            str(WIFI_ON),
            "--endpoint",
            server.url,
            "--model",
            "scripted",
            "--seeds",
            "3",
        ]
        args += ["--device", phone, "--run-dir", str(run_dir)]
        proc = subprocess.Popen(args, cwd=REPO, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while len(episodes(run_dir)) < 1 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)  # mid-way through seed 1
        proc.wait()
        first = episodes(run_dir)
        assert [e["seed"] for e in first] in ([0], [0, 1])
        again = agent_eval_run(run_dir, server.url, phone, seeds=3, max_steps=15)
        assert again.returncode != 0 and "different configuration" in again.stderr  # --max-steps differs
        args[-1:] = [str(run_dir)]
        result = subprocess.run(args, cwd=REPO, env=_env(), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    final = episodes(run_dir)
    assert final[: len(first)] == first
    assert sorted(e["seed"] for e in final) == [0, 1, 2]
    assert all(e["outcome"] == "premature_done" for e in final)
    assert "kept from earlier sessions" in result.stdout
    assert json.loads((run_dir / "run.json").read_text())["sessions"] == 2


def test_a_phone_that_disappears_mid_episode_is_an_infra_error(tmp_path: Path) -> None:
    fleet = start_fleet(count=1, base_port=5810)
    serial = fleet.serials[0]

    def pull_the_plug(prompt: str) -> str:
        fleet.stop()
        return json.dumps({"type": "tap", "element": 0})

    try:
        with ScriptedEndpoint([tap("Settings"), pull_the_plug]) as server:
            result = agent_eval_run(tmp_path / "run", server.url, serial)
    finally:
        fleet.stop()
    assert result.returncode == 2
    assert "device(s) lost" in result.stderr and serial in result.stderr
    (episode,) = episodes(tmp_path / "run")
    assert episode["outcome"] == "infra_error" and serial in episode["error"]
    assert episode["steps"] == 2


def test_without_a_device_it_starts_a_virtual_phone_and_stops_it(tmp_path: Path) -> None:
    # A private adb server, so the phones other tests (or people) have connected are not "a connected device".
    adb_port = "5898"
    env = {**_env(), "ANDROID_ADB_SERVER_PORT": adb_port}
    try:
        with ScriptedEndpoint([*TO_WIFI, tap("Wi-Fi"), DONE]) as server:
            args = [AGENT_EVAL, "run", str(WIFI_ON), "--endpoint", server.url, "--model", "scripted"]
            args += ["--run-dir", str(tmp_path / "run"), "--phone-port", "5850"]
            result = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env, check=False)
        assert result.returncode == 0, result.stderr
        assert "no device connected: starting a virtual phone on adb port 5851" in result.stdout
        (episode,) = episodes(tmp_path / "run")
        assert episode["outcome"] == "success" and episode["device"] == "emulator-5850"
        # The phone was stopped afterwards: nothing listens on its adb port any more.
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", 5851)) != 0
    finally:
        subprocess.run([adbutils.adb_path(), "-P", adb_port, "kill-server"], capture_output=True, check=False)


def test_with_images_the_screenshot_is_sent_and_recorded_by_its_hash(phone: str, tmp_path: Path) -> None:
    with ScriptedEndpoint([DONE]) as server:
        result = agent_eval_run(tmp_path / "run", server.url, phone, "--images")
    assert result.returncode == 0, result.stderr
    text, image = server.requests[0]["messages"][1]["content"]
    assert text["type"] == "text" and "Goal: Turn Wi-Fi on." in text["text"]
    png = base64.b64decode(image["image_url"]["url"].removeprefix("data:image/png;base64,"))
    (step,) = steps(tmp_path / "run")
    assert (
        png
        == (tmp_path / "run" / "episodes" / "endpoint" / "wifi_on" / "0" / step["screenshot"]).read_bytes()
    )
    assert step["prompt"][1]["content"][1]["image_url"]["url"] == "sha256:" + hashlib.sha256(png).hexdigest()
    assert episodes(tmp_path / "run")[0]["build_manifest"]["accepts_images"] is True


def test_several_devices_share_one_run(tmp_path: Path) -> None:
    with start_fleet(count=2, base_port=5860) as fleet, ScriptedEndpoint([tap("Settings"), DONE]) as server:
        first, second = fleet.serials
        result = agent_eval_run(tmp_path / "run", server.url, first, "--device", second, seeds=4)
    assert result.returncode == 0, result.stderr
    recorded = episodes(tmp_path / "run")
    assert sorted(e["seed"] for e in recorded) == [0, 1, 2, 3]
    assert {e["outcome"] for e in recorded} == {"premature_done"}
    assert {e["device"] for e in recorded} == {first, second}
