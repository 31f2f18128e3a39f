"""The LLM policy: one chat request per step (prompt → endpoint → parsed action), no memory between calls.

The episode loop owns the history; engine failures surface as EngineError so the episode is retried.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_eval.agent.parse import ParsedAnswer, parse_action
from agent_eval.agent.policy import Decision, StepContext, recent
from agent_eval.agent.prompt import Prompt, action_schema, build_prompt, with_answer, without_stops
from agent_eval.chat.client import ChatClient
from agent_eval.screen.observation import Observation

# How an agent words one step for the model: called as `prompt.build_prompt` is (the default).
PromptFormat = Callable[..., Prompt]


def step_seed(episode_seed: int, step: int) -> int:
    """The request seed for a step: fixed per (episode seed, step), so a rerun asks the same question."""
    return (episode_seed * 1_000_003 + step) % 2**31


class LLMPolicy:
    """Asks a chat endpoint for each step's action. Satisfies `Policy`."""

    def __init__(
        self,
        client: ChatClient,
        *,
        accepts_images: bool | None = None,
        history_len: int | None = 4,  # None: the whole episode's (a format that cuts it itself)
        structured_output: bool = True,
        prompt_format: PromptFormat = build_prompt,
        schema: dict[str, Any] | None = None,
        parse: Callable[[str, Observation | None], ParsedAnswer] = parse_action,
    ) -> None:
        self.client = client
        # Default to what the endpoint says it takes; a caller may switch images off for a text-only prompt.
        self.accepts_images = client.endpoint.accepts_images if accepts_images is None else accepts_images
        self.history_len = history_len
        self.structured_output = structured_output
        self._schema = schema if schema is not None else action_schema()
        self._prompt = prompt_format
        self._parse = parse

    def decide(self, context: StepContext) -> Decision:
        history = recent(context.history, self.history_len)
        # Only a task that asks a question is told of the answer action (other prompts stay as they were).
        asks: dict[str, Any] = {"answers": True} if context.answers else {}
        prompt = self._prompt(
            context.goal,
            context.observation,
            step=context.step,
            max_steps=context.max_steps,
            history=history,
            with_image=self.accepts_images,
            **asks,
        )
        schema = with_answer(self._schema) if context.answers else self._schema
        if not context.can_stop:
            if not self.structured_output:
                # Only the engine's constraint keeps a probe from stopping; a grid refuses such a build
                # before any episode (grid/probes.py), so reaching this is a caller's bug.
                raise ValueError("a navigation probe needs structured output to take stopping away")
            schema = without_stops(schema)
        result = self.client.chat(
            prompt.messages,
            json_schema=schema if self.structured_output else None,
            seed=step_seed(context.seed, context.step),
        )
        parsed = self._parse(result.text, context.observation)
        reason = parsed.reason
        if parsed.action is None and result.finish_reason == "length":
            reason = f"{reason} (the answer hit the token limit)"
        return Decision(
            action=parsed.action,
            raw_answer=result.text,
            invalid_reason=reason,
            prompt=prompt.recorded,
            prompt_hash=prompt.hash,
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            model_s=result.waited_s,  # retries included: waiting on the engine is never harness time
        )
