"""A step's prompt from its context, the way the LLM policy builds it, in any prompt format.

The tuner's demonstrations are built through `step_prompt` with the tuned agent's format, so a training
prompt is byte for byte what that agent's LLM policy sends for the same screen and history.
"""

from __future__ import annotations

from typing import Any

from agent_eval.agent.llm import PromptFormat
from agent_eval.agent.policy import StepContext, recent
from agent_eval.agent.prompt import Prompt


def step_prompt(
    context: StepContext, builder: PromptFormat, *, history_len: int | None = 4, with_image: bool = False
) -> Prompt:
    """The prompt for one step: the last `history_len` steps of history (None: all of it), as
    `LLMPolicy.decide` cuts it, and the answer action offered only when the task asks a question (as the
    policy offers it)."""
    history = recent(context.history, history_len)
    asks: dict[str, Any] = {"answers": True} if context.answers else {}
    return builder(
        context.goal,
        context.observation,
        step=context.step,
        max_steps=context.max_steps,
        history=history,
        with_image=with_image,
        **asks,
    )
