"""Helpers for the chaos tests: scripted agents that follow the tasks' oracles, fault logs, run directories.

The agents answer from the task files themselves, so every outcome is fixed by (build, task, seed) and a run
with faults injected can be compared episode by episode with the same run without them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from scripted_endpoint import ScriptedEndpoint, element_number

from agent_eval.task import Task, load_tasks

REPO = Path(__file__).resolve().parent.parent
TASKS_DIR = REPO / "tasks"
_GOAL = re.compile(r"Goal: (.+)")
_STEP = re.compile(r"Step (\d+) of")
NOT_JSON = "I think the Wi-Fi row is the one to press next."

EpisodeKey = tuple[str, str, int]


def oracle_tasks(ids: list[str]) -> dict[str, Task]:
    """The shipped tasks with these ids, by their goal sentence (what the prompt shows)."""
    tasks = load_tasks([TASKS_DIR / f"{task_id}.yaml" for task_id in ids])
    return {t.goal: t for t in tasks}


def _oracle_answer(step: Any, prompt: str) -> str:
    """One oracle step as the model's JSON answer, naming the element by its number in the prompt."""
    kind = step.type.value
    if kind == "tap":
        number = element_number(prompt, step.text)
        return json.dumps({"type": "tap", "element": number}) if number is not None else "no element"
    if kind == "open_app":
        return json.dumps({"type": "open_app", "app": step.app})
    return json.dumps({"type": kind})


class OracleAgent(ScriptedEndpoint):
    """An OpenAI-compatible server that plays each task's oracle, with flaws chosen by the episode seed.

    `flaws` maps seed → "undo" (taps the last switch again before done: reached, then undone), "babble" (a
    first answer that is not JSON, then the oracle: one invalid step), "quit" (done at once: premature) or
    "missing" (taps element 999 first: one invalid step). Seeds not listed play the oracle straight.
    """

    def __init__(self, tasks: dict[str, Task], *, flaws: dict[int, str] | None = None, model: str) -> None:
        super().__init__([], model=model)
        self.tasks = tasks
        self.flaws = flaws or {}
        self.asked: list[tuple[str, int, int]] = []  # (task, seed, step) per request

    def reply_to(self, body: dict[str, Any]) -> str:
        prompt = "\n".join(str(m.get("content")) for m in body["messages"])
        goal, step_match = _GOAL.search(prompt), _STEP.search(prompt)
        assert goal is not None and step_match is not None, prompt[:300]
        task = self.tasks[goal.group(1).strip()]
        step = int(step_match.group(1))
        seed = (int(body["seed"]) - step) // 1_000_003  # LLMPolicy's step_seed, inverted
        with self._lock:
            self.asked.append((task.id, seed, step))
        path: list[Any] = list(task.oracle)
        flaw = self.flaws.get(seed)
        if flaw == "undo":
            path = [*path[:-1], path[-2], path[-1]]
        elif flaw == "quit":
            path = [path[-1]]
        elif flaw in ("babble", "missing"):
            path = [flaw, *path]
        move = path[min(step, len(path)) - 1]
        if move == "babble":
            return NOT_JSON
        if move == "missing":
            return json.dumps({"type": "tap", "element": 999})
        return _oracle_answer(move, prompt)


@dataclass(frozen=True)
class Fault:
    time: float
    serial: str
    kind: str
    command: str


def read_faults(path: Path) -> list[Fault]:
    if not path.exists():
        return []
    return [Fault(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def episodes(run_dir: Path) -> list[dict[str, Any]]:
    """Every whole line of the run's episodes.jsonl (a torn last line is skipped, as the store does)."""
    path = run_dir / "episodes.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def scored(run_dir: Path) -> dict[EpisodeKey, dict[str, Any]]:
    """The scored (non-infra) record per (build, task, seed); asserts none is there twice."""
    out: dict[EpisodeKey, dict[str, Any]] = {}
    for e in episodes(run_dir):
        if e["outcome"] == "infra_error":
            continue
        key = (e["build"], e["task_id"], e["seed"])
        assert key not in out, f"{key} was scored twice"
        out[key] = e
    return out


def builds_file(path: Path, agents: dict[str, OracleAgent], reference: str) -> Path:
    """A builds file naming each scripted agent as an endpoint build."""
    builds = [
        {
            "name": name,
            "reference": name == reference,
            "scheme": "endpoint",
            "engine": "endpoint",
            "base_url": agent.url,
            "model": agent.model,
        }
        for name, agent in agents.items()
    ]
    path.write_text(yaml.safe_dump({"builds": builds}))
    return path


def during(faults: list[Fault], record: dict[str, Any]) -> Iterator[Fault]:
    """The faults logged on the record's phone while its episode ran."""
    from datetime import datetime

    start = datetime.fromisoformat(record["started_at"]).timestamp()
    end = datetime.fromisoformat(record["finished_at"]).timestamp()
    for fault in faults:
        if fault.serial == record["device"] and start <= fault.time <= end:
            yield fault


def outcomes_table(scorecard_md: str) -> dict[str, dict[str, str]]:
    """The scorecard.md 'Outcomes' table: build → column → cell text (the build without '(reference)')."""
    section = scorecard_md.split("## Outcomes", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|") and not line.startswith("|---")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    table = {}
    for row in rows[1:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        table[cells[0].removesuffix(" (reference)")] = dict(zip(header, cells, strict=True))
    return table
