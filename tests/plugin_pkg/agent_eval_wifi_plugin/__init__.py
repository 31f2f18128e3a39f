"""A plug-in package for agent-eval (as docs/extending.md shows): a `wifi` goal predicate and a `terse` agent.

agent-eval finds it by its entry point (group `agent_eval.plugins`) and calls `register` once per command.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from agent_eval.agent.agents import PromptAgent, register_agent
from agent_eval.agent.prompt import ChatFormat, action_schema, build_prompt
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


def register() -> None:
    register_predicate(WifiPredicate)
    register_agent(PromptAgent("terse", ChatFormat(TERSE_SYSTEM, build_prompt.user_text), action_schema))
