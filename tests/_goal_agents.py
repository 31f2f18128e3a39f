"""Scripted endpoints that play the goal in the prompt, as builds of a grid: used by the grid's end-to-end
tests and by the cluster scenarios (which run in a process of their own)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from scripted_endpoint import DONE, Move, ScriptedEndpoint, tap

_GOAL = re.compile(r"Goal: (.+)")
_STEP = re.compile(r"Step (\d+) of")

# The oracle paths of two short tasks, and where the degraded agent undoes its work.
PATHS: dict[str, list[Move]] = {
    "Turn Wi-Fi on.": [tap("Settings"), tap("Network & internet"), tap("Internet"), tap("Wi-Fi"), DONE],
    "Turn on airplane mode.": [tap("Network & internet"), tap("Airplane mode"), DONE],
}


class GoalAgent(ScriptedEndpoint):
    """Plays the path of the goal in the prompt; `undo_odd_seeds` taps the switch twice on odd seeds."""

    def __init__(self, *, undo_odd_seeds: bool = False, model: str = "scripted") -> None:
        super().__init__([DONE], model=model)
        self.undo_odd_seeds = undo_odd_seeds
        self.seeds: Counter[int] = Counter()

    def reply_to(self, body: dict[str, Any]) -> str:
        prompt = "\n".join(str(m.get("content")) for m in body["messages"])
        goal = _GOAL.search(prompt)
        step_match = _STEP.search(prompt)
        assert goal is not None and step_match is not None, prompt[:500]
        step = int(step_match.group(1))
        seed = (int(body["seed"]) - step) // 1_000_003  # the LLM policy's step_seed, inverted
        path = list(PATHS[goal.group(1).strip()])
        if self.undo_odd_seeds and seed % 2 == 1:
            path = [*path[:-1], path[-2], DONE]  # the switch again: reached, then undone
        if step == 1:
            with self._lock:
                self.seeds[seed] += 1
        text = path[min(step, len(path)) - 1](prompt)
        assert not text.startswith("no element"), text
        return text


def start_agents() -> dict[str, GoalAgent]:
    """The three builds' scripted endpoints, started: good (the reference), good-again and degraded."""
    servers = {
        "good": GoalAgent(model="good"),
        "good-again": GoalAgent(model="good-again"),
        "degraded": GoalAgent(undo_odd_seeds=True, model="degraded"),
    }
    for server in servers.values():
        server.start()
    return servers


def builds_file(path: Path, agents: dict[str, GoalAgent]) -> Path:
    builds = [
        {
            "name": name,
            "reference": name == "good",
            "scheme": "endpoint",
            "bits_per_weight": {"good": 16.0, "good-again": 8.0, "degraded": 4.0}[name],
            "engine": "endpoint",
            "base_url": server.url,
            "model": server.model,
        }
        for name, server in agents.items()
    ]
    path.write_text(yaml.safe_dump({"builds": builds}))
    return path
