"""Scripted endpoints of known navigation and recognition abilities, for the navigation-probe tests.

Each plays the oracle path of the goal in its prompt (tests/_goal_agents.py's PATHS) and differs in when it
stops. Each reads from the request's schema whether it may stop: a navigation probe takes done out of it.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import yaml
from _goal_agents import PATHS
from scripted_endpoint import DONE, WAIT, ScriptedEndpoint

_GOAL = re.compile(r"Goal: (.+)")
_STEP = re.compile(r"Step (\d+) of")


def may_stop(body: dict[str, Any]) -> bool:
    """Whether the schema the request constrains the answer with offers done."""
    return '"done"' in json.dumps(body.get("response_format") or {})


class AbilityAgent(ScriptedEndpoint):
    """Navigates the goal's path; `kind` says how it stops:

    - "good": says done once there (the reference);
    - "early": says done on a wrong page with probability `p` at every step before the goal holds;
    - "never": gets there, then waits to the end of its steps (never says done);
    - "half": on odd seeds it is lost (waits in place, and rightly never says done); on even seeds it is good.
    """

    def __init__(self, kind: str, *, p: float = 0.0, model: str = "scripted") -> None:
        super().__init__([DONE], model=model)
        self.kind, self.p = kind, p
        self.stops_offered: list[bool] = []

    def reply_to(self, body: dict[str, Any]) -> str:
        prompt = "\n".join(str(m.get("content")) for m in body["messages"])
        goal, step_match = _GOAL.search(prompt), _STEP.search(prompt)
        assert goal is not None and step_match is not None, prompt[:500]
        step = int(step_match.group(1))
        seed = (int(body["seed"]) - step) // 1_000_003  # the LLM policy's step_seed, inverted
        path = list(PATHS[goal.group(1).strip()])
        allowed = may_stop(body)
        with self._lock:
            self.stops_offered.append(allowed)
        taps = len(path) - 1  # the goal holds after the last tap
        if self.kind == "half" and seed % 2 == 1:
            return WAIT(prompt)
        if step <= taps:
            if self.kind == "early" and allowed and random.Random(seed * 1000 + step).random() < self.p:
                return DONE(prompt)
            return path[step - 1](prompt)
        if self.kind == "never" or not allowed:
            return WAIT(prompt)
        return DONE(prompt)


def start_ability_agents(p: float) -> dict[str, AbilityAgent]:
    agents = {
        "good": AbilityAgent("good", model="good"),
        "early": AbilityAgent("early", p=p, model="early"),
        "never": AbilityAgent("never", model="never"),
        "half": AbilityAgent("half", model="half"),
    }
    for agent in agents.values():
        agent.start()
    return agents


def ability_builds_file(path: Path, agents: dict[str, AbilityAgent], **extra: Any) -> Path:
    bits = {"good": 16.0, "early": 8.0, "never": 6.0, "half": 4.0}
    builds = [
        {
            "name": name,
            "reference": name == "good",
            "scheme": "endpoint",
            "bits_per_weight": bits[name],
            "engine": "endpoint",
            "base_url": agent.url,
            "model": agent.model,
            **extra.get(name, {}),
        }
        for name, agent in agents.items()
    ]
    path.write_text(yaml.safe_dump({"builds": builds}))
    return path
