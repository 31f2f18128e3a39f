"""A plug-in package for agent-eval (as docs/extending.md shows): a `wifi` goal predicate, a `terse` agent, a
`copy-weights` recipe kind, a `text-endpoint` engine kind and a `scripted-taps` engine kind with options of
its own, whose server is a tiny fake OpenAI-compatible endpoint (fake_server.py). It imports only
agent_eval.api.

agent-eval finds it by its entry point (group `agent_eval.plugins`) and calls `register` once per command.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent_eval.api import (
    Build,
    ChatFormat,
    Endpoint,
    EndpointKind,
    EngineOptions,
    GoalPredicate,
    Launch,
    Plan,
    Probe,
    PromptAgent,
    Recipe,
    RungInfo,
    Say,
    Serving,
    Step,
    Weights,
    action_schema,
    build_prompt,
    register_agent,
    register_engine_kind,
    register_predicate,
    register_recipe_kind,
)

TERSE_SYSTEM = (
    "You are the terse plug-in agent. Each turn, answer with one JSON action on the numbered elements: "
    '{"type": "tap", "element": N}, {"type": "back"}, {"type": "done"}.'
)


class WifiCheck(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    on: bool


class WifiPredicate(GoalPredicate):
    """`wifi: {on: true}`: Wi-Fi is on (or off), read as `settings get global wifi_on`."""

    kind: ClassVar[str] = "wifi"
    wifi: WifiCheck

    def holds(self, probe: Probe) -> bool:
        return bool(probe.device.setting("global", "wifi_on") == ("1" if self.wifi.on else "0"))


class CopyRecipe(Recipe):
    """`prepare: {kind: copy-weights, source: BUILD, note: ...}`: the source build's files, copied."""

    note: str = ""

    @model_validator(mode="after")
    def _needs_source(self) -> CopyRecipe:
        if self.source is None:
            raise ValueError("a 'copy-weights' recipe needs 'source': the build whose files it copies")
        return self


class CopyWeights:
    """A recipe kind that copies its source's weights and records what it copied."""

    name = "copy-weights"
    fields = CopyRecipe

    def bits(self, recipe: Recipe, scheme: str) -> float | None:
        return None  # the scheme's nominal bits

    def list_group(self, recipe: Recipe, scheme: str) -> str:
        return "other"

    def rung(self, recipe: Recipe, weights: Weights) -> RungInfo | None:
        return None  # no quantization level

    def plan(self, step: Step) -> Plan:
        note = step.recipe.own(CopyRecipe).note

        def make(say: Say) -> dict[str, Any]:
            source = step.source_path()
            say(f"{step.build.name}: copying {source.name}")
            shutil.copytree(source, step.out, dirs_exist_ok=True)
            files = sorted(p.name for p in step.out.iterdir())
            return {"facts": {"copied_from": step.recipe.source, "files": files, "note": note}}

        return Plan(step.made_from, make)  # the same source weights: nothing to remake


class TextEndpoint(EndpointKind):
    """A server someone else runs with a text-only model: screenshots are refused when the file loads."""

    name = "text-endpoint"
    images = False


class TapOptions(EngineOptions):
    """A `scripted-taps` build's `engine_args:`: the labels its fake model taps, one per step, then done."""

    taps: list[str] = Field(min_length=1)


class ScriptedTaps:
    """An engine kind whose server is a fake OpenAI-compatible endpoint playing the build's `taps`."""

    name = "scripted-taps"
    starts_server = True
    prepares_without_engine = True
    teacher_forcing = False
    images = False
    options = TapOptions

    def check(self, build: Build) -> None:
        if build.scheme != "scripted":
            raise ValueError("a scripted-taps build has scheme 'scripted'")

    def missing_software(self) -> str | None:
        return None

    def launch(self, build: Build, weights: Path, port: int, serving: Serving) -> Launch:
        taps = build.options(TapOptions).taps
        command = [sys.executable, "-m", "agent_eval_wifi_plugin.fake_server", str(port), build.served_name]
        endpoint = Endpoint(base_url=f"http://127.0.0.1:{port}/v1", model=build.served_name)
        return Launch([*command, *taps], {}, "/v1/models", endpoint, {"taps": len(taps)})

    def connect(self, build: Build) -> Endpoint:
        raise AssertionError("scripted-taps builds are started, not connected to")

    def manifest_mode(self, build: Build) -> str | None:
        return None


def register() -> None:
    register_predicate(WifiPredicate)
    register_agent(PromptAgent("terse", ChatFormat(TERSE_SYSTEM, build_prompt.user_text), action_schema))
    register_recipe_kind(CopyWeights())
    register_engine_kind(TextEndpoint())
    register_engine_kind(ScriptedTaps())
