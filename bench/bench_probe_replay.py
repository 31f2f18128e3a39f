"""Does an engine keep its draw when the stopping actions are masked? The navigation probe's premise.

Usage: .venv/bin/python bench/bench_probe_replay.py [builds/default.yaml] [--build NAME ...] [--seeds 8]
For each build (default: bf16 and gguf-q4_1 of builds/default.yaml, one per engine), serves it, starts a
virtual phone, and asks the first step of several tasks with the same seeds twice: with the full action
schema, and with done, infeasible and answer taken out (the probe's schema). Counts the draws the full
schema made, the stops among them, and how many of the others the masked request repeated to the character
(kept). An engine whose
sampler keeps its draw (vLLM's exponential race) keeps all of them; an inverse-CDF sampler does not.
Prints a table and writes JSON to runs/bench-probe-replay-<time>/.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_eval.agent.agents import get_agent
from agent_eval.agent.policy import StepContext
from agent_eval.builds import load_builds, prepare, serve, unavailable_reason
from agent_eval.chat.client import ChatClient
from agent_eval.device.driver import Device
from agent_eval.task import load_task, start_episode
from virtual_phone import start_fleet

REPO = Path(__file__).resolve().parents[1]
STOPS = {"done", "infeasible", "answer"}
# Verify tasks (the goal holds at the start: done is the right answer) beside tasks that start away from it.
TASKS = ("dark_theme_verify", "wifi_on_verify", "airplane_mode_on", "wifi_on", "bluetooth_on", "device_name")


def replay_counts(served: Any, serial: str, seeds: int) -> dict[str, Any]:
    build = served.build
    counts = {"asked": 0, "stops": 0, "kept": 0, "changed": 0, "examples": []}
    with ChatClient(served.endpoint) as client:
        policy = get_agent(build.agent).policy(client)
        device = Device(serial)
        for name in TASKS:
            path = REPO / "tasks" / f"{name}.yaml"
            if not path.exists():
                continue
            instance = load_task(path).instantiate(0)
            start_episode(device, instance)
            screen = device.observe()
            for seed in range(seeds):
                ordinary = StepContext(instance.goal, 1, instance.task.max_steps, screen, (), seed)
                free = policy.decide(ordinary)
                probe = policy.decide(dataclasses.replace(ordinary, can_stop=False))
                counts["asked"] += 1
                drawn = free.action.type.value if free.action is not None else "invalid"
                if drawn in STOPS:
                    counts["stops"] += 1
                elif probe.raw_answer == free.raw_answer:
                    counts["kept"] += 1
                else:
                    counts["changed"] += 1
                    if len(counts["examples"]) < 5:
                        counts["examples"].append([name, seed, free.raw_answer, probe.raw_answer])
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(REPO / "builds" / "default.yaml"))
    parser.add_argument("--build", action="append", dest="builds")
    parser.add_argument("--seeds", type=int, default=8)
    args = parser.parse_args()
    builds = load_builds(Path(args.file))
    names = args.builds or ["bf16", "gguf-q4_1"]
    runnable = [n for n in names if unavailable_reason(builds.get(n)) is None]
    for n in sorted(set(names) - set(runnable)):
        print(f"{n}: skipped, {unavailable_reason(builds.get(n))}")
    prepare(builds, only=runnable, say=lambda line: print(f"[prepare] {line}", flush=True))
    run_dir = REPO / "runs" / f"bench-probe-replay-{datetime.now(UTC):%Y%m%d-%H%M%S}"
    results: dict[str, Any] = {}
    with start_fleet(count=1, base_port=6330) as fleet:
        for name in runnable:
            build = builds.get(name)
            with serve(build, run_dir / name) as served:
                results[name] = {
                    "engine": build.engine,
                    **replay_counts(served, fleet.serials[0], args.seeds),
                }
            r = results[name]
            moved = r["asked"] - r["stops"]
            print(
                f"{name} ({build.engine}): {r['asked']} draws, {r['stops']} stops; of the other {moved}, "
                f"{r['kept']} kept under the mask, {r['changed']} changed",
                flush=True,
            )
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "probe-replay.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {run_dir / 'probe-replay.json'}")


if __name__ == "__main__":
    main()
