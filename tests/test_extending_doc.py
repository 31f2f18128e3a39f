"""docs/extending.md's code blocks, run as written: its Python blocks, in the page's order, as one module in a
process of its own (later blocks use the names of earlier ones, as the page says), then checked: each kind
they define is registered and does what the page says of it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "extending.md"

# Run after the page's blocks, in the same module: what each block registered, used as a file would use it.
CHECKS = """
from agent_eval.agent.agents import get_agent
from agent_eval.builds.serving.launcher import pinned
from agent_eval.builds.spec import parse_builds
from agent_eval.device.backend import device_backend
from agent_eval.errors import ConfigError
from agent_eval.task.loading import task_from_data

register()  # the plug-in package's entry point, as the page writes it


def first_error(call):
    try:
        call()
    except ConfigError as e:
        return str(e).splitlines()[1].strip()
    return "accepted"


scripted = {"name": "scripted", "reference": True, "scheme": "scripted", "engine": "scripted-server"}
scripted |= {"model_path": "m", "engine_args": {"extra_args": ["--quiet"]}}
build = parse_builds([scripted], "builds.yaml").get("scripted")
launch = pinned(build, build.kind.launch(build, Path("weights"), 6690, Serving()))
pinning_tool = launch.pinning["tool"] or Path(sys.executable).name  # None: neither numactl nor taskset here
print("engine", launch.command[-1], launch.pinning["cpus"], Path(launch.command[0]).name == pinning_tool)
print("option", first_error(lambda: parse_builds([scripted | {"engine_args": {"speed": 1}}], "builds.yaml")))
print("agent", get_agent("terse").name)
copied = {"name": "copied", "scheme": "bf16", "engine": "vllm-cpu", "model_path": "c"}
copied |= {"prepare": {"kind": "copy-weights", "source": "scripted"}}
print("recipe", type(parse_builds([scripted, copied], "builds.yaml").get("copied").prepare).__name__)
print("backend", device_backend("counting").name)
task = {"id": "wifi_doc", "goal": "Turn Wi-Fi on.", "goal_state": {"wifi": {"on": True}}}
print("predicate", type(task_from_data(task, "t.yaml").goal_state).__name__)
typo = task | {"goal_state": {"wifi": {"onn": True}}}
try:
    task_from_data(typo, "t.yaml")
    print("typo accepted")
except ConfigError as e:
    print("typo", "onn" in str(e))
text = {"name": "text", "reference": True, "scheme": "endpoint", "engine": "text-endpoint"}
text |= {"base_url": "http://127.0.0.1:9/v1", "model": "m", "accepts_images": True}
print("text-endpoint", first_error(lambda: parse_builds([text], "builds.yaml")))
"""


# The page's last part adds an app, whose Python previews that app's screens: tests/test_extending_app.py
# runs it in a copy of the project holding the app; this test runs the plug-in parts above it.
APP_SECTION = "## Adding an app and a task family"


def blocks(language: str) -> list[str]:
    page = PAGE.read_text(encoding="utf-8").split(APP_SECTION, 1)[0]
    return re.findall(rf"^```{language}\n(.*?)^```$", page, re.MULTILINE | re.DOTALL)


def test_the_pages_python_runs_as_written_and_its_kinds_work() -> None:
    code = blocks("python")
    assert len(code) >= 6, "the page's Python blocks were not found"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    done = subprocess.run(
        [sys.executable, "-"],
        input="\n\n".join([*code, CHECKS]),
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    said = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert said["engine"] == "--quiet 0-1 True"  # its option reached the command, which the harness pinned
    assert said["option"] == (
        "build 'scripted' builds[0].engine_args.speed: not an option of engine 'scripted-server' "
        "(its engine_args: startup_timeout_s, extra_args)"
    )
    assert said["agent"] == "terse" and said["backend"] == "counting"
    assert said["recipe"] == "CopyRecipe" and said["predicate"] == "WifiPredicate"
    assert said["typo"] == "True"
    assert said["text-endpoint"].startswith("build 'text' builds[0]: accepts_images: the text-endpoint")


def test_the_pages_pyproject_names_the_entry_point_group() -> None:
    [toml] = blocks("toml")
    project = tomllib.loads(toml)["project"]
    assert project["entry-points"]["agent_eval.plugins"] == {"wifi": "agent_eval_wifi_plugin:register"}
