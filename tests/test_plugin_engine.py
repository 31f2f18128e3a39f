"""A plug-in package's engine kind with options of its own (tests/plugin_pkg, `scripted-taps`): its builds'
`engine_args` are validated against its model, the harness pins its server, and a grid plays it with the
plug-in's goal predicate, from `agent-eval run` and from Python, where plug-ins load without being asked."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_plugins import AGENT_EVAL, installed, wifi_task

from virtual_phone import start_fleet

WIFI_TAPS = ["Settings", "Network & internet", "Internet", "Wi-Fi"]
PHONE_PORT = 6600
ENGINE_PORT = 6650  # a grid's engines take ports from here (the range 6600-6690 is this file's)


def taps_build(**engine_args: Any) -> dict[str, Any]:
    build = {"name": "taps", "reference": True, "scheme": "scripted", "engine": "scripted-taps"}
    return build | {"model_path": "taps", "engine_args": engine_args}


def builds_file(folder: Path, build: dict[str, Any]) -> Path:
    file = folder / "builds.yaml"
    file.write_text(yaml.safe_dump({"builds": [build]}))
    return file


def list_builds(file: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AGENT_EVAL, "builds", "list", str(file)], env=env, capture_output=True, text=True, check=False
    )


def test_an_engine_kinds_own_options_are_validated_naming_the_build_and_the_key(tmp_path: Path) -> None:
    env = installed(tmp_path / "site")
    good = list_builds(builds_file(tmp_path, taps_build(taps=WIFI_TAPS, startup_timeout_s=30)), env)
    assert good.returncode == 0 and "taps" in good.stdout, good.stderr
    # A typo, and an option of vLLM's that this kind does not take: both refused with the kind's own options.
    for bad in ({"taps": WIFI_TAPS, "tapz": ["x"]}, {"taps": WIFI_TAPS, "max_model_len": 2048}):
        done = list_builds(builds_file(tmp_path, taps_build(**bad)), env)
        key = next(k for k in bad if k != "taps")
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert (
            f"build 'taps' builds[0].engine_args.{key}: not an option of engine 'scripted-taps' "
            "(its engine_args: startup_timeout_s, taps)" in done.stderr
        ), done.stderr
    missing = list_builds(builds_file(tmp_path, taps_build()), env)
    assert "build 'taps' builds[0].engine_args.taps: Field required" in missing.stderr, missing.stderr


def test_library_code_sees_installed_plugins_without_loading_them(tmp_path: Path) -> None:
    file = builds_file(tmp_path, taps_build(taps=WIFI_TAPS))
    code = (
        "import sys\n"
        "from agent_eval.builds import load_builds\n"
        "from agent_eval.task import load_task\n"
        "build = load_builds(sys.argv[1]).get('taps')\n"
        "task = load_task(sys.argv[2])\n"
        "print(build.engine, type(build.engine_args).__name__, build.engine_args.taps[-1], task.id)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(file), str(wifi_task(tmp_path))],
        env=installed(tmp_path / "site"),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.stdout.split() == ["scripted-taps", "TapOptions", "Wi-Fi", "wifi_plugin"], done.stderr


@pytest.fixture(scope="module")
def phone() -> Iterator[str]:
    with start_fleet(count=1, base_port=PHONE_PORT) as fleet:
        yield fleet.serials[0]


def grid_folder(folder: Path, phone: str) -> tuple[Path, dict[str, str]]:
    """A grid of the plug-in's task on its engine kind's build (weights of its own), and its environment."""
    (folder / "models" / "taps").mkdir(parents=True)
    (folder / "models" / "taps" / "model.safetensors").write_bytes(b"a scripted model has no weights")
    builds_file(folder, taps_build(taps=WIFI_TAPS))
    spec = {
        "tasks": [str(wifi_task(folder))],
        "builds_file": "builds.yaml",
        "seeds": 2,
        "devices": [phone],
        "engine_base_port": ENGINE_PORT,
        "run_dir": str(folder / "run"),
    }
    (folder / "grid.yaml").write_text(yaml.safe_dump(spec))
    return folder / "grid.yaml", installed(folder / "site") | {"AGENT_EVAL_MODELS": str(folder / "models")}


def assert_played_by_the_plugin(run: Path) -> None:
    episodes = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    # The plug-in's predicate judged them: off after setup, on after the fourth tap of its engine's script.
    assert [e["outcome"] for e in episodes] == ["success", "success"]
    assert episodes[0]["goal_timeline"] == [False, False, False, False, True]
    assert episodes[0]["build_manifest"]["engine_args"] == {"startup_timeout_s": 420.0, "taps": WIFI_TAPS}
    record = json.loads((run / "engines" / "taps.json").read_text())
    # The harness pinned the kind's command (the kind names no pinning tool) and recorded both parts.
    assert record["pinning"]["cpus"] == "0-1" and record["pinning"]["taps"] == len(WIFI_TAPS)
    tool = record["pinning"]["tool"]
    first = Path(record["command"][0]).name
    assert first == (tool or Path(sys.executable).name), record["command"]
    assert "agent_eval_wifi_plugin.fake_server" in record["command"]


@pytest.mark.slow
def test_agent_eval_run_plays_the_plugins_engine_kind(phone: str, tmp_path: Path) -> None:
    grid, env = grid_folder(tmp_path, phone)
    done = _played([AGENT_EVAL, "run", str(grid), "--no-bars"], env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_played_by_the_plugin(tmp_path / "run")


@pytest.mark.slow
def test_a_python_script_plays_the_plugins_engine_kind(phone: str, tmp_path: Path) -> None:
    grid, env = grid_folder(tmp_path, phone)
    code = (
        "import sys\n"
        "from agent_eval.grid import load_grid, run_grid\n"
        "result = run_grid(load_grid(sys.argv[1]), bars=False)\n"
        "print(sorted(o.value for o in result.outcomes))\n"
    )
    done = _played([sys.executable, "-c", code, str(grid)], env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_played_by_the_plugin(tmp_path / "run")


def _played(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A grid played by a process of its own, as a user starts it."""
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, check=False)
