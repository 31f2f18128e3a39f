"""A plug-in package for agent-eval (as docs/extending.md shows): a `wifi` goal predicate, a `terse` agent, a
`copy-weights` recipe kind and a `text-endpoint` engine kind.

agent-eval finds it by its entry point (group `agent_eval.plugins`) and calls `register` once per command.
"""

from __future__ import annotations

import shutil
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator

from agent_eval.agent.agents import PromptAgent, register_agent
from agent_eval.agent.prompt import ChatFormat, action_schema, build_prompt
from agent_eval.builds.engines import EndpointKind
from agent_eval.builds.kinds import register_engine_kind
from agent_eval.builds.recipes import Plan, Recipe, Say, Step, Weights, register_recipe_kind
from agent_eval.records import RungInfo
from agent_eval.task.registry import GoalPredicate, Probe, register_predicate

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


def register() -> None:
    register_predicate(WifiPredicate)
    register_agent(PromptAgent("terse", ChatFormat(TERSE_SYSTEM, build_prompt.user_text), action_schema))
    register_recipe_kind(CopyWeights())
    register_engine_kind(TextEndpoint())
