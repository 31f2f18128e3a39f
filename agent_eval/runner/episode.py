"""One episode: start the task, then observe → decide → act → check the goal, step by step, to an outcome.

Writes each step's screenshot, UI dump and StepRecord as it goes; a device or engine failure ends it as
infra_error. A navigation probe is the same loop with stopping taken away: it ends when the goal first holds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from agent_eval.action import Action, ActionType
from agent_eval.agent.policy import Decision, PastStep, Policy, StepContext
from agent_eval.agent.prompt import action_summary, element_lines
from agent_eval.device.backend import EpisodeDevice
from agent_eval.errors import InfraError, InvalidActionError, TaskError
from agent_eval.records import (
    BuildManifest,
    EpisodeKind,
    EpisodeRecord,
    Outcome,
    Said,
    StepLatency,
    StepRecord,
    classify,
    classify_answer,
    classify_probe,
)
from agent_eval.rundir import STEPS_FILE
from agent_eval.screen.observation import Observation
from agent_eval.task import TaskInstance, goal_holds, start_episode


@dataclass
class _Tally:
    """What an episode has accumulated so far (kept even when it ends in an infra error).

    Its fields are the episode record's own, under the record's names.
    """

    goal_timeline: list[bool] = field(default_factory=list)
    steps: int = 0
    invalid_actions: int = 0
    said: Said | None = None
    said_at_step: int | None = None
    answer: str | None = None
    answer_correct: bool | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency: StepLatency = field(default_factory=StepLatency)

    def add(self, lat: StepLatency) -> None:
        t = self.latency
        t.observe_s += lat.observe_s
        t.model_s += lat.model_s
        t.act_s += lat.act_s
        t.check_s += lat.check_s
        t.harness_s += lat.harness_s

    def count_tokens(self, decision: Decision) -> None:
        self.prompt_tokens += decision.prompt_tokens
        self.completion_tokens += decision.completion_tokens


def run_episode(
    device: EpisodeDevice,
    instance: TaskInstance,
    policy: Policy,
    *,
    build: str,
    run_id: str,
    episode_dir: Path,
    manifest: BuildManifest | None = None,
    attempt: int = 1,
    relative_to: Path | None = None,
    snapshot: str | None = "default_boot",
    kind: EpisodeKind = "episode",
) -> EpisodeRecord:
    """Play one episode of `instance` on `device` with `policy` and return its record.

    `episode_dir` must exist and be empty; the step files go there. Raises TaskError when the task's start
    state is broken (its goal already holds, or a verify task's does not). InfraError never escapes: it
    becomes an infra_error record, which the caller retries. `kind="probe"` plays a navigation probe: the
    policy is told it cannot stop (a stop it answers anyway is an invalid step), and the episode ends when
    the goal first holds or at max steps (docs/scorecard.md, "Navigation and recognition apart").
    """
    where = str(episode_dir.relative_to(relative_to)) if relative_to else str(episode_dir)
    played = Played(run_id, kind, build, device.serial, manifest, attempt, where, datetime.now(UTC))
    tally = _Tally()
    error: str | None = None
    try:
        _play(device, instance, policy, episode_dir, tally, snapshot, probe=kind == "probe")
        if kind == "probe":
            outcome = classify_probe(tally.goal_timeline)
        elif instance.task.answer is not None:
            outcome = classify_answer(tally.goal_timeline, tally.said, tally.answer_correct)
        else:
            outcome = classify(tally.goal_timeline, tally.said)
    except InfraError as e:
        outcome, error = Outcome.INFRA_ERROR, str(e)
    return _record(instance, played, tally, outcome, error)


@dataclass(frozen=True)
class Played:
    """As what and where an attempt was played: what its record says whatever the outcome.

    Its fields are the episode record's own, under the record's names.
    """

    run_id: str
    kind: EpisodeKind
    build: str
    device: str  # the serial
    build_manifest: BuildManifest | None
    attempt: int
    episode_dir: str  # as recorded: relative to the run directory when that is known
    started_at: datetime


def infra_error_record(instance: TaskInstance, played: Played, error: str) -> EpisodeRecord:
    """The record of an attempt of which nothing came back (its remote phone died with it)."""
    return _record(instance, played, _Tally(), Outcome.INFRA_ERROR, error)


def _record(
    instance: TaskInstance, played: Played, tally: _Tally, outcome: Outcome, error: str | None
) -> EpisodeRecord:
    scored = outcome is not Outcome.INFRA_ERROR
    reached_at = next((i for i, held in enumerate(tally.goal_timeline) if held), None)
    return EpisodeRecord(
        **vars(played),
        **vars(tally),
        task_id=instance.id,
        task_version=instance.task.version,
        seed=instance.seed,
        params=dict(instance.params),
        verify=instance.verify,
        max_steps=instance.task.max_steps,
        outcome=outcome,
        reached=scored and reached_at is not None,
        success=outcome is Outcome.SUCCESS,
        first_reached_step=reached_at if scored else None,
        finished_at=datetime.now(UTC),
        error=error,
    )


def _first_look(
    device: EpisodeDevice, instance: TaskInstance, tally: _Tally, snapshot: str | None
) -> tuple[Observation, float, float]:
    """Start the task and check its goal on the first screen: (observation, observe s, check s)."""
    start_episode(device, instance, snapshot=snapshot)
    t0 = time.perf_counter()
    observation = device.observe()
    observe_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    held = goal_holds(instance.goal_state, device, observation)
    check_s = time.perf_counter() - t0
    if held != instance.verify:
        state = "already holds" if held else "does not hold"
        kind = "a verify task must start in its goal state" if instance.verify else "its setup is broken"
        raise TaskError(f"{instance.task.where}: goal {state} at the start of seed {instance.seed} — {kind}")
    tally.goal_timeline.append(held)
    return observation, observe_s, check_s


def _act(device: EpisodeDevice, action: Action, observation: Observation, lat: StepLatency) -> str | None:
    """Send the action; the device's reason when it rejects it (an invalid step), else None."""
    t0 = time.perf_counter()
    try:
        device.act(action, observation)
    except InvalidActionError as e:
        return str(e)
    finally:
        lat.act_s = time.perf_counter() - t0
    return None


def _look(device: EpisodeDevice, instance: TaskInstance, tally: _Tally, lat: StepLatency) -> Observation:
    """Observe after an action and record whether the goal holds now."""
    t0 = time.perf_counter()
    observation = device.observe()
    lat.observe_s += time.perf_counter() - t0
    t0 = time.perf_counter()
    tally.goal_timeline.append(goal_holds(instance.goal_state, device, observation))
    lat.check_s += time.perf_counter() - t0
    return observation


def _play(
    device: EpisodeDevice,
    instance: TaskInstance,
    policy: Policy,
    episode_dir: Path,
    tally: _Tally,
    snapshot: str | None,
    *,
    probe: bool = False,
) -> None:
    observation, first_observe_s, first_check_s = _first_look(device, instance, tally, snapshot)
    if probe and tally.goal_timeline[-1]:
        return  # a verify task's probe: it is there before it moves

    history: list[PastStep] = []
    steps_file = (episode_dir / STEPS_FILE).open("a", encoding="utf-8")
    with steps_file:
        for step in range(1, instance.task.max_steps + 1):
            lat = StepLatency(observe_s=first_observe_s, check_s=first_check_s)
            first_observe_s = first_check_s = 0.0
            step_start = time.perf_counter() - lat.observe_s - lat.check_s
            context = _context(instance, step, observation, history, can_stop=not probe)
            asked_at = time.time()  # wall clock: phones' calls are laid side by side for engine busy
            decision = policy.decide(context)
            lat.model_s = decision.model_s
            record = _step_record(step, episode_dir, observation, decision)
            record.model_started_at = asked_at
            tally.steps = step
            tally.count_tokens(decision)
            action = decision.action
            summary = action_summary(action, observation)
            seen = observation

            if action is not None and action.is_terminal and not probe:
                _said(device, instance, action, observation, tally)
                tally.said_at_step = step
            else:
                observation, summary = _take(
                    device, instance, action, observation, tally, record, summary, lat
                )

            history.append(PastStep(step, action, summary, screen=seen.texts(), app=seen.package))
            record.goal_after = tally.goal_timeline[-1]
            measured = lat.observe_s + lat.model_s + lat.act_s + lat.check_s
            record.latency = lat
            # Harness time is measured last so that writing this step's record is counted in it.
            lat.harness_s = max(time.perf_counter() - step_start - measured, 0.0)
            steps_file.write(record.model_dump_json() + "\n")
            steps_file.flush()
            lat.harness_s = max(time.perf_counter() - step_start - measured, 0.0)
            tally.add(lat)
            if tally.said is not None or (probe and tally.goal_timeline[-1]):
                break


def _take(
    device: EpisodeDevice,
    instance: TaskInstance,
    action: Action | None,
    observation: Observation,
    tally: _Tally,
    record: StepRecord,
    summary: str,
    lat: StepLatency,
) -> tuple[Observation, str]:
    """A step that does not end the episode: the action sent and the goal checked, or an invalid step.
    Returns the observation after it and the step's summary for the history."""
    if action is None or action.is_terminal:
        tally.invalid_actions += 1
        if action is not None:  # a probe's stop: an engine that ignored the schema, or a policy can_stop
            record.invalid_reason = f"a navigation probe cannot stop ({action.type.value})"
            summary = f"{summary} (rejected: a probe cannot stop)"
        # Nothing was sent to the device, so the screen and the goal are as they were.
        tally.goal_timeline.append(tally.goal_timeline[-1])
        return observation, summary
    rejected = _act(device, action, observation, lat)
    if rejected is not None:
        tally.invalid_actions += 1
        record.invalid_reason = rejected
        summary = f"{summary} (rejected: {rejected})"
    return _look(device, instance, tally, lat), summary


def _context(
    instance: TaskInstance, step: int, observation: Observation, history: list[PastStep], *, can_stop: bool
) -> StepContext:
    return StepContext(
        goal=instance.goal,
        step=step,
        max_steps=instance.task.max_steps,
        observation=observation,
        history=tuple(history),
        seed=instance.seed,
        answers=instance.task.answer is not None,  # the task asks a question: offer the answer action
        can_stop=can_stop,
    )


_SAID: dict[str, Said] = {"done": "done", "infeasible": "infeasible", "answer": "answer"}


def _said(
    device: EpisodeDevice, instance: TaskInstance, action: Action, observation: Observation, tally: _Tally
) -> None:
    """Record the terminal action; an answer is judged by the task's answer check, if it has one."""
    tally.said = _SAID[action.type.value]
    if action.type.value != "answer":
        return
    tally.answer = action.text or ""
    if instance.answer is not None:  # the check with this seed's parameters filled in
        tally.answer_correct = goal_holds(instance.answer, device, observation, answer=tally.answer)


def _step_record(step: int, episode_dir: Path, observation: Observation, decision: Decision) -> StepRecord:
    """The step's record, with its observation files written next to steps.jsonl."""
    stem = f"step-{step:03d}"
    screenshot = None
    if observation.screenshot_png:
        (episode_dir / f"{stem}.png").write_bytes(observation.screenshot_png)
        screenshot = f"{stem}.png"
    ui_xml = None
    if observation.ui_xml:
        (episode_dir / f"{stem}.xml").write_text(observation.ui_xml, encoding="utf-8")
        ui_xml = f"{stem}.xml"
    return StepRecord(
        step=step,
        screenshot=screenshot,
        ui_xml=ui_xml,
        activity=observation.activity,
        elements=element_lines(observation),
        prompt=decision.prompt,
        prompt_hash=decision.prompt_hash,
        raw_answer=decision.raw_answer,
        action=decision.action,
        invalid_reason=decision.invalid_reason,
        prompt_tokens=decision.prompt_tokens,
        completion_tokens=decision.completion_tokens,
        target_id=_target_id(decision, observation),
    )


def _target_id(decision: Decision, observation: Observation) -> str | None:
    """The resource id the action went to: its named element, or the focused field it typed into."""
    action = decision.action
    if action is None:
        return None
    if action.element is not None:
        named = [e for e in observation.elements if e.index == action.element]
    elif action.type is ActionType.TYPE:
        named = [e for e in observation.elements if e.focused]
    else:
        return None
    if not named:
        return None
    return named[0].resource_id.rsplit("/", 1)[-1] or None
