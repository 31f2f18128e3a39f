"""The one plug point every agent implements: given the step's context, decide the next action.

The LLM policy and the oracle (scripted solution) both satisfy `Policy`; the episode loop knows only this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_eval.action import Action
from agent_eval.screen.observation import Observation


@dataclass(frozen=True)
class PastStep:
    """What the agent is reminded of about an earlier step."""

    step: int
    action: Action | None  # None: the answer was invalid
    summary: str  # short human-readable line, e.g. 'tap 3 "Network & internet"'
    screen: tuple[str, ...] = ()  # what the screen the step was taken on said (Observation.texts)
    app: str = ""  # the app that screen belonged to (Observation.package)


def recent(history: tuple[PastStep, ...], steps: int | None) -> tuple[PastStep, ...]:
    """The last `steps` of the history (None: all of it; 0 or less: none), as a policy shows them."""
    if steps is None:
        return history
    return history[-steps:] if steps > 0 else ()


@dataclass(frozen=True)
class StepContext:
    goal: str
    step: int  # 1-based
    max_steps: int
    observation: Observation
    history: tuple[PastStep, ...]
    seed: int
    answers: bool = False  # the task asks a question: the `answer` action is offered (and expected)
    # False in a navigation probe: the episode cannot be ended by the agent, so a policy must not answer
    # done, infeasible or answer (the LLM policy takes them out of the schema the engine is constrained by;
    # the prompt stays the ordinary one, so the probe replays the episode on an engine that keeps its draw).
    can_stop: bool = True


@dataclass(frozen=True)
class Decision:
    action: Action | None  # None when the answer could not be turned into an action (an invalid step)
    raw_answer: str = ""
    invalid_reason: str | None = None
    prompt: list[dict[str, Any]] = field(default_factory=list)  # messages sent, images elided
    prompt_hash: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_s: float = 0.0  # time spent waiting for the model


class Policy(Protocol):
    """What plays a build's episodes: one decision per step, from the step's context (an agent makes it)."""

    def decide(self, context: StepContext) -> Decision:
        """Choose the next action. Raise EngineError for engine failures (an infra error, retried)."""
        ...
