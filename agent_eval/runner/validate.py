"""Validating tasks: plays every task's oracle through the real episode loop to check each task is sound.

A task passes when it starts right (goal false; true for verify tasks) and its oracle ends in success; for a
task that asks a question, with its goal state (the screen that shows the answer) reached on the way.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_eval.agent.oracle import OraclePolicy
from agent_eval.device.backend import EpisodeDevice
from agent_eval.device.workers import on_devices
from agent_eval.errors import AgentEvalError, RunStoreError, TaskError
from agent_eval.records import Outcome, StepRecord
from agent_eval.rundir import STEPS_FILE, read_lines
from agent_eval.runner.episode import run_episode
from agent_eval.task import Task, TaskInstance, goal_holds, start_episode
from agent_eval.task.params import combinations

INFRA_ATTEMPTS = 2


@dataclass(frozen=True)
class TaskCheck:
    """The verdict on one task instance (one seed)."""

    instance: TaskInstance
    outcome: str  # an Outcome value, or "broken start" / "start checked" / "error"
    steps: int
    seconds: float
    problem: str = ""  # what is wrong with the task; "" when it is valid

    @property
    def ok(self) -> bool:
        return not self.problem


def seeds_for(task: Task, limit: int | None) -> range:
    """Every parameter combination, or the first `limit` seeds."""
    return range(limit if limit is not None else combinations(task.params))


def _check_start_only(device: EpisodeDevice, instance: TaskInstance, snapshot: str | None) -> str:
    """For a task without an oracle: only that its start state is what it claims. Returns a problem or ""."""
    start_episode(device, instance, snapshot=snapshot)
    held = goal_holds(instance.goal_state, device)
    if held != instance.verify:
        return "goal already holds at the start" if held else "verify task does not start in its goal state"
    return ""


def _invalid_reasons(episode_dir: Path) -> list[str]:
    steps_file = episode_dir / STEPS_FILE
    try:
        steps = read_lines(steps_file, StepRecord).records
    except RunStoreError:
        steps = []
    reasons = [f"step {s.step}: {s.invalid_reason}" for s in steps if s.invalid_reason]
    return reasons or [f"see {steps_file}"]


def _verdict(
    instance: TaskInstance, started: float, outcome: str, steps: int = 0, problem: str = ""
) -> TaskCheck:
    return TaskCheck(instance, outcome, steps, time.perf_counter() - started, problem)


def check_instance(
    device: EpisodeDevice, instance: TaskInstance, *, snapshot: str | None, work_dir: Path
) -> TaskCheck:
    """Play `instance`'s oracle with the episode loop (or only check its start when it has no oracle)."""
    started = time.perf_counter()
    if instance.oracle is None:
        try:
            problem = _check_start_only(device, instance, snapshot)
        except AgentEvalError as e:
            problem = str(e)
        return _verdict(instance, started, "broken start" if problem else "start checked", problem=problem)
    for attempt in range(1, INFRA_ATTEMPTS + 1):
        # A device hiccup says nothing about the task: try again before blaming it.
        episode_dir = work_dir / instance.id / str(instance.seed) / f"attempt-{attempt}"
        episode_dir.mkdir(parents=True, exist_ok=True)
        try:
            record = run_episode(
                device,
                instance,
                OraclePolicy(instance),
                build="oracle",
                run_id="validate",
                episode_dir=episode_dir,
                snapshot=snapshot,
                attempt=attempt,
            )
        except TaskError as e:
            return _verdict(instance, started, "broken start", problem=str(e))
        if record.outcome is not Outcome.INFRA_ERROR:
            break
    problems = []
    if record.outcome is not Outcome.SUCCESS:
        problems.append(record.error or f"the oracle ended in {record.outcome.value}, not success")
    elif instance.answer is not None and not record.reached:
        # The demonstrator answers once the goal state holds, else when its script runs out: an oracle
        # whose right answer never met its goal state teaches answering from a screen the task did not mean.
        problems.append(
            "the oracle answered right but the goal state (the screen that shows the answer) never held: "
            "fix the goal state or the oracle's steps"
        )
    if record.invalid_actions:
        reasons = _invalid_reasons(episode_dir)
        problems.append(f"{record.invalid_actions} oracle step(s) were invalid: " + "; ".join(reasons))
    return _verdict(instance, started, record.outcome.value, record.steps, "; ".join(problems))


def validate_tasks(
    tasks: Sequence[Task],
    devices: Sequence[EpisodeDevice],
    *,
    seeds: int | None = None,
    snapshot: str | None = "default_boot",
    work_dir: Path,
) -> Iterator[TaskCheck]:
    """Check every task instance, one worker per device, yielding each verdict as soon as it is known
    (in the order they finish; with one device, the tasks' order)."""
    instances = [task.instantiate(seed) for task in tasks for seed in seeds_for(task, seeds)]
    yield from on_devices(
        instances, devices, lambda device, i: check_instance(device, i, snapshot=snapshot, work_dir=work_dir)
    )
