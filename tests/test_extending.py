"""docs/extending.md, played out: a new agent, a new engine kind and a new device backend, each registered
the way the page says and run through a grid on the virtual phone with the scripted endpoint."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from rich.console import Console
from scripted_endpoint import DONE, ScriptedEndpoint, tap

from agent_eval.agent.agents import PromptAgent, get_agent, register_agent
from agent_eval.agent.policy import PastStep
from agent_eval.agent.prompt import SYSTEM_PROMPT, ChatFormat, action_schema, build_prompt
from agent_eval.builds.engine_kinds import Launch, Serving, engine_kind, register_engine_kind
from agent_eval.builds.spec import Build
from agent_eval.chat.endpoint import Endpoint
from agent_eval.device import Device, DeviceRequest, EpisodeDevice, register_device_backend
from agent_eval.grid import GridResult, GridSpec, run_grid
from agent_eval.records import Outcome
from agent_eval.rundir import read_episodes, read_steps
from agent_eval.screen.observation import Observation
from virtual_phone import start_fleet

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parent
WIFI_ON = [tap("Settings"), tap("Network & internet"), tap("Internet"), tap("Wi-Fi"), DONE]


@pytest.fixture(scope="module")
def phone() -> Iterator[str]:
    with start_fleet(count=1, base_port=5960) as fleet:
        yield fleet.serials[0]


def run_wifi_grid(tmp_path: Path, builds: list[dict[str, Any]], **spec: Any) -> GridResult:
    """wifi_on, one seed, the given builds, scored only by its records."""
    (tmp_path / "builds.yaml").write_text(yaml.safe_dump({"builds": builds}))
    grid = GridSpec(
        tasks=["wifi_on"],
        builds_file=str(tmp_path / "builds.yaml"),
        seeds=1,
        run_dir=str(tmp_path / "run"),
        **spec,
    )
    return run_grid(grid, console=Console(record=True, width=200), bars=False, score=False)


# -- an agent ----------------------------------------------------------------------------------------------


def no_history(
    goal: str, observation: Observation, step: int, max_steps: int, history: Sequence[PastStep]
) -> str:
    """The default prompt's user text without the reminder of earlier steps."""
    return build_prompt.user_text(goal, observation, step, max_steps, ())


terse_prompt = ChatFormat(SYSTEM_PROMPT + "\nBe terse.", no_history)


def test_a_registered_agent_plays_the_builds_that_name_it(phone: str, tmp_path: Path) -> None:
    register_agent(PromptAgent("terse", terse_prompt, action_schema))
    assert get_agent("terse").name == "terse"
    with ScriptedEndpoint(WIFI_ON) as server:
        build = {"name": "terse", "reference": True, "scheme": "endpoint", "engine": "endpoint"}
        build |= {"base_url": server.url, "model": "scripted", "agent": "terse"}
        result = run_wifi_grid(tmp_path, [build], devices=[phone])
    assert result.outcomes == {Outcome.SUCCESS: 1}
    [episode] = read_episodes(tmp_path / "run")
    assert episode.build_manifest is not None and episode.build_manifest.agent == "terse"
    steps = read_steps(tmp_path / "run", episode)
    assert steps and all(s.prompt[0]["content"].endswith("Be terse.") for s in steps)


# -- an engine kind ----------------------------------------------------------------------------------------


class ScriptedServer:
    """An engine kind whose server is the scripted endpoint in a process of its own."""

    name = "scripted-server"
    starts_server = True
    teacher_forcing = False
    images = False
    prepares_without_engine = True

    def check(self, build: Build) -> None:
        if build.scheme != "scripted":
            raise ValueError("a scripted-server build has scheme 'scripted'")

    def missing_software(self) -> str | None:
        return None

    def launch(self, build: Build, weights: Path, port: int, serving: Serving) -> Launch:
        command = [sys.executable, str(TESTS / "_scripted_server.py"), str(port), build.served_name]
        endpoint = Endpoint(base_url=f"http://127.0.0.1:{port}/v1", model=build.served_name)
        return Launch(command, {"PYTHONPATH": str(TESTS)}, "/v1/models", endpoint)

    def connect(self, build: Build) -> Endpoint:
        raise AssertionError("scripted-server builds are started, not connected to")

    def manifest_mode(self, build: Build) -> str | None:
        return None


def test_a_registered_engine_kind_is_started_and_played_like_vllm(
    phone: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_engine_kind(ScriptedServer())
    assert engine_kind("scripted-server").starts_server
    # A models dir of its own: the shared one's prepare lock may be held by a real `builds prepare`.
    monkeypatch.setenv("AGENT_EVAL_MODELS", str(tmp_path / "models"))
    weights = tmp_path / "models" / "scripted"
    weights.mkdir(parents=True)
    (weights / "model.safetensors").write_bytes(b"a scripted model has no weights")
    build = {"name": "scripted", "reference": True, "scheme": "scripted", "engine": "scripted-server"}
    result = run_wifi_grid(tmp_path, [build | {"model_path": "scripted"}], devices=[phone])
    assert result.outcomes == {Outcome.SUCCESS: 1} and not result.engine_errors
    record = json.loads((tmp_path / "run" / "engines" / "scripted.json").read_text())
    assert record["engine"] == "scripted-server" and record["startup_s"] is not None


# -- a device backend --------------------------------------------------------------------------------------


class CountingDevice(Device):
    """An adb device that counts the screens it was asked for."""

    observed = 0

    def observe(self) -> Observation:
        CountingDevice.observed += 1
        return super().observe()


class CountingBackend:
    """Hands out the phone named by the test, as a CountingDevice."""

    name = "counting"

    def __init__(self, serial: str) -> None:
        self.serial = serial

    @contextmanager
    def devices(self, request: DeviceRequest, say: Any) -> Iterator[list[EpisodeDevice]]:
        say(f"counting on {self.serial}")
        yield [CountingDevice(self.serial)]


def test_a_registered_device_backend_gives_the_grid_its_phones(phone: str, tmp_path: Path) -> None:
    register_device_backend(CountingBackend(phone))
    with ScriptedEndpoint(WIFI_ON) as server:
        build = {"name": "ep", "reference": True, "scheme": "endpoint", "engine": "endpoint"}
        build |= {"base_url": server.url, "model": "scripted"}
        result = run_wifi_grid(tmp_path, [build], device_backend="counting")
    assert result.outcomes == {Outcome.SUCCESS: 1}
    assert CountingDevice.observed >= 5  # the first screen and one after each of the four taps
