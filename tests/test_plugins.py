"""A plug-in installed as a separate package (tests/plugin_pkg): found by its entry point, its predicate and
its agent used by a grid through the real `agent-eval` command, the virtual phone and a scripted endpoint; its
recipe kind preparing a build with `agent-eval builds prepare`, and its engine kind's capabilities read when a
build file loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from scripted_endpoint import DONE, ScriptedEndpoint, tap

from virtual_phone import start_fleet

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
PLUGIN_SOURCE = TESTS / "plugin_pkg"
AGENT_EVAL = str(Path(sys.executable).parent / "agent-eval")
WIFI_ON = [tap("Settings"), tap("Network & internet"), tap("Internet"), tap("Wi-Fi"), DONE]


def installed(site: Path, entry_point: str = "agent_eval_wifi_plugin:register") -> dict[str, str]:
    """An environment in which the plug-in is an installed distribution: its .dist-info (with the entry point
    of its pyproject.toml) on sys.path, as `pip install` leaves it, and its code importable."""
    info = site / "agent_eval_wifi_plugin-0.1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: agent-eval-wifi-plugin\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[agent_eval.plugins]\nwifi = {entry_point}\n")
    path = os.pathsep.join([str(REPO), str(PLUGIN_SOURCE), str(site)])
    return {**os.environ, "PYTHONPATH": path, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}


def wifi_task(folder: Path) -> Path:
    task = folder / "wifi_plugin.yaml"
    task.write_text(
        yaml.safe_dump(
            {
                "id": "wifi_plugin",
                "goal": "Turn Wi-Fi on.",
                "setup": ["svc wifi disable"],
                "goal_state": {"wifi": {"on": True}},
                "max_steps": 8,
            }
        )
    )
    return task


def test_the_entry_point_registers_the_plugins_kinds(tmp_path: Path) -> None:
    code = (
        "from agent_eval.plugins import load_plugins\n"
        "from agent_eval.task.registry import predicate_kinds\n"
        "from agent_eval.agent.agents import AGENTS\n"
        "from agent_eval.builds.engine_kinds import ENGINE_KINDS\n"
        "from agent_eval.builds.recipe_kinds import RECIPE_KINDS\n"
        "print(load_plugins(), load_plugins(), 'wifi' in predicate_kinds(), 'terse' in AGENTS,\n"
        "      'copy-weights' in RECIPE_KINDS, 'text-endpoint' in ENGINE_KINDS)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=installed(tmp_path), capture_output=True, text=True, check=False
    )
    assert done.stdout.strip() == "['wifi'] [] True True True True", done.stderr


def agent_eval(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AGENT_EVAL, *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def copy_builds(folder: Path) -> Path:
    """A build brought by the user (a weight file and its config) and one the plug-in's recipe kind copies."""
    source = folder / "models" / "own"
    source.mkdir(parents=True)
    (source / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    (source / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}')
    own = {"name": "own", "reference": True, "scheme": "bf16", "engine": "vllm-cpu", "model_path": "own"}
    copied = own | {"name": "copied", "reference": False, "model_path": "copied"}
    copied["prepare"] = {"kind": "copy-weights", "source": "own", "note": "made by the plug-in"}
    file = folder / "builds.yaml"
    file.write_text(yaml.safe_dump({"builds": [own, copied]}))
    return file


def test_the_plugins_recipe_kind_prepares_a_build_and_records_its_fact(tmp_path: Path) -> None:
    builds = copy_builds(tmp_path)
    env = installed(tmp_path / "site") | {"AGENT_EVAL_MODELS": str(tmp_path / "models")}
    done = agent_eval("builds", "prepare", str(builds), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "copied: copying own" in done.stdout
    made = tmp_path / "models" / "copied"
    assert (made / "model.safetensors").read_bytes() == (
        tmp_path / "models" / "own" / "model.safetensors"
    ).read_bytes()
    prepared = json.loads((made / "prepared.json").read_text())
    assert prepared["recipe"] == {"kind": "copy-weights", "source": "own", "note": "made by the plug-in"}
    assert prepared["facts"] == {
        "copied_from": "own",
        "files": ["config.json", "model.safetensors"],
        "note": "made by the plug-in",
    }
    assert "gguf" not in prepared and "calibration_hash" not in prepared
    again = agent_eval("builds", "prepare", str(builds), env=env)
    assert f"copied: up to date ({prepared['weights_hash'][:19]}), skipped" in again.stdout, again.stdout


def test_without_the_plugin_its_recipe_kind_is_refused_naming_the_build_and_the_known_kinds(
    tmp_path: Path,
) -> None:
    builds = copy_builds(tmp_path)
    done = agent_eval("builds", "list", str(builds), env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "build 'copied' builds[1].prepare: unknown recipe kind 'copy-weights'; known: awq," in done.stderr


def test_the_plugins_engine_kind_states_its_capabilities(tmp_path: Path) -> None:
    build = {"name": "text", "reference": True, "scheme": "endpoint", "engine": "text-endpoint"}
    build |= {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
    env = installed(tmp_path / "site")
    file = tmp_path / "builds.yaml"
    file.write_text(yaml.safe_dump({"builds": [build]}))
    listed = agent_eval("builds", "list", str(file), env=env)
    assert listed.returncode == 0 and "text-endpoint http://127.0.0.1:9/v1" in listed.stdout, listed.stderr
    # The plug-in's kind takes no images: a build that sends screenshots to it is refused when the file loads.
    file.write_text(yaml.safe_dump({"builds": [build | {"accepts_images": True}]}))
    refused = agent_eval("builds", "list", str(file), env=env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert (
        "build 'text' builds[0]: accepts_images: the text-endpoint engine's server takes no image"
        in refused.stderr
    )


def test_a_plugin_that_fails_to_load_is_named(tmp_path: Path) -> None:
    env = installed(tmp_path, entry_point="agent_eval_no_such_plugin:register")
    done = subprocess.run(
        [AGENT_EVAL, "builds", "list"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "plug-in 'wifi'" in done.stderr and "agent_eval_no_such_plugin" in done.stderr, done.stderr


def test_without_the_plugin_its_predicate_names_file_field_and_known_kinds(tmp_path: Path) -> None:
    task = wifi_task(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [AGENT_EVAL, "run", str(task), "--endpoint", "http://127.0.0.1:9/v1", "--model", "m"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{task}: goal_state: unknown predicate 'wifi'" in done.stderr, done.stderr
    assert "one of: shell, setting, element, activity, all, any, not" in done.stderr


@pytest.fixture(scope="module")
def phone() -> Iterator[str]:
    with start_fleet(count=1, base_port=6060) as fleet:
        yield fleet.serials[0]


@pytest.mark.slow
def test_a_grid_uses_the_plugins_predicate_and_agent(phone: str, tmp_path: Path) -> None:
    task = wifi_task(tmp_path)
    with ScriptedEndpoint(WIFI_ON) as server:
        build = {"name": "terse", "reference": True, "scheme": "endpoint", "engine": "endpoint"}
        build |= {"base_url": server.url, "model": "scripted", "agent": "terse"}
        (tmp_path / "builds.yaml").write_text(yaml.safe_dump({"builds": [build]}))
        grid = tmp_path / "grid.yaml"
        spec = {"tasks": [str(task)], "builds_file": "builds.yaml", "seeds": 2, "devices": [phone]}
        grid.write_text(yaml.safe_dump(spec | {"run_dir": str(tmp_path / "run")}))
        done = subprocess.run(
            [AGENT_EVAL, "run", str(grid), "--no-bars"],
            env=installed(tmp_path / "site"),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert server.misses == []
    episodes = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    # The plug-in's predicate judged the episodes: off after setup, on after the fourth tap.
    assert [e["outcome"] for e in episodes] == ["success", "success"]
    assert episodes[0]["goal_timeline"] == [False, False, False, False, True]
    # The plug-in's agent wrote the prompts.
    systems = {r["messages"][0]["content"][:31] for r in server.requests}
    assert systems == {"You are the terse plug-in agent"}
    card = json.loads((tmp_path / "run" / "scorecard.json").read_text())
    assert [b["build"] for b in card["builds"]] == ["terse"]
