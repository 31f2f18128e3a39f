"""The recorded steps fidelity replays: each step's exact prompt, the source's answer and the goal state.

Only steps whose prompt the current agent would build the same way are comparable: a step recorded under an
older system prompt, or with an image the record no longer holds, is refused with a message saying so.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from agent_eval.action import Action, ActionType
from agent_eval.agent.agents import system_prompts
from agent_eval.errors import RunStoreError
from agent_eval.records import EpisodeRecord, StepRecord
from agent_eval.rundir import read_episodes, read_steps, settle_attempts
from agent_eval.rundir.layout import MANIFEST_FILE
from agent_eval.rundir.run_manifest import read_manifest
from agent_eval.scoring.scorecard import resolve_reference


class StepsFrom(StrEnum):
    REFERENCE = "reference"  # the reference build's own episodes
    ORACLE = "oracle"  # demonstrations: episodes played by the oracle (scheme or engine "oracle")
    ALL = "all"  # every build's episodes


@dataclass(frozen=True)
class SourceStep:
    build: str  # whose answer this is
    task_id: str
    seed: int
    episode_dir: str  # relative to the run directory: the cluster for intervals and the viewer's link
    step: int
    messages: list[dict[str, Any]]
    answer: str
    action: Action | None
    goal_before: bool  # the goal state when the prompt was made (the timeline's value before this step)
    answers: bool = False  # its task asks a question: the agent's schema had the answer action

    @property
    def episode(self) -> str:
        return self.episode_dir or f"{self.build}/{self.task_id}/{self.seed}"

    @property
    def said_done(self) -> bool:
        return self.action is not None and self.action.type is ActionType.DONE


def _chosen(episodes: list[EpisodeRecord], source: StepsFrom, reference: str | None) -> list[EpisodeRecord]:
    if source is StepsFrom.ALL:
        return episodes
    if source is StepsFrom.ORACLE:
        return [
            e
            for e in episodes
            if e.build == "oracle"
            or (
                e.build_manifest is not None
                and "oracle" in (e.build_manifest.scheme, e.build_manifest.engine)
            )
        ]
    name = resolve_reference(reference, None, episodes)
    return [e for e in episodes if e.build == name]


def _problem(step: StepRecord, current_systems: set[str]) -> str | None:
    """Why a recorded step cannot be replayed today, or None."""
    if not step.prompt:
        return "no prompt recorded"
    system = next((m.get("content") for m in step.prompt if m.get("role") == "system"), None)
    if system not in current_systems:
        return "made by an older prompt version (its system prompt is no registered agent's current one)"
    for message in step.prompt:
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") == "image_url" for p in content
        ):
            return "its prompt had an image, which the record keeps only as a hash"
    return None


def question_tasks(run_dir: Path) -> set[str]:
    """The run's tasks that ask a question (run.json says; none without run.json)."""
    if not (run_dir / MANIFEST_FILE).is_file():
        return set()
    return {t.id for t in read_manifest(run_dir).tasks if t.answer}


def load_source_steps(
    run_dir: Path, source: StepsFrom = StepsFrom.REFERENCE, reference: str | None = None
) -> tuple[list[SourceStep], dict[str, int]]:
    """The replayable steps of the chosen episodes, and how many were skipped for each reason.

    Raises RunStoreError, saying what to do, when nothing is left to replay.
    """
    settled = settle_attempts(read_episodes(run_dir))
    episodes = _chosen(list(settled.scored.values()), source, reference)
    if not episodes:
        raise RunStoreError(
            f"{run_dir}: no finished episodes to take steps from (--steps-from {source.value})"
        )
    steps: list[SourceStep] = []
    skipped: dict[str, int] = {}
    current_systems = system_prompts()
    asking = question_tasks(run_dir)
    for episode in sorted(episodes, key=lambda e: (e.build, e.task_id, e.seed)):
        for record in read_steps(run_dir, episode):
            problem = _problem(record, current_systems)
            if problem is not None:
                skipped[problem] = skipped.get(problem, 0) + 1
                continue
            timeline = episode.goal_timeline
            steps.append(
                SourceStep(
                    build=episode.build,
                    task_id=episode.task_id,
                    seed=episode.seed,
                    episode_dir=episode.episode_dir,
                    step=record.step,
                    messages=record.prompt,
                    answer=record.raw_answer,
                    action=record.action,
                    goal_before=timeline[record.step - 1] if record.step - 1 < len(timeline) else False,
                    answers=episode.task_id in asking or episode.answer is not None,
                )
            )
    if not steps:
        why = (
            "; ".join(f"{n} step(s): {reason}" for reason, n in skipped.items())
            or "the episodes have no steps"
        )
        raise RunStoreError(
            f"{run_dir}: no recorded step can be replayed ({why}). Record steps with the current agent: "
            "run the tasks again (agent-eval run) and point fidelity at that run."
        )
    return steps, skipped
