"""The agent plug point: an agent is a policy made from a chat client, with its own prompt format and schema.

Agents are registered by name; a build's `agent:` chooses one, and `default` is the prompt in `prompt.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from agent_eval.agent import compact, noted
from agent_eval.agent.llm import LLMPolicy, PromptFormat
from agent_eval.agent.parse import ParsedAnswer, parse_action
from agent_eval.agent.policy import Policy
from agent_eval.agent.prompt import ChatFormat, action_schema, build_prompt
from agent_eval.builds.spec import Build, add_build_check, declare_prompt_extension
from agent_eval.chat.client import ChatClient
from agent_eval.errors import ConfigError
from agent_eval.registry import Registry
from agent_eval.screen.observation import Observation

DEFAULT_AGENT = "default"
AnswerParser = Callable[[str, Observation | None], ParsedAnswer]


class Agent(Protocol):
    """Something that plays a build: given the build's chat client, the policy its episodes use."""

    @property
    def name(self) -> str: ...

    @property
    def needs_images(self) -> bool:
        """True: it cannot play without the screenshot, so its builds must send it (`accepts_images`)."""
        ...

    def policy(self, client: ChatClient) -> Policy: ...


@dataclass(frozen=True)
class PromptAgent:
    """An LLM agent: one chat request per step, in its prompt format, constrained by its action schema."""

    name: str
    prompt: PromptFormat
    schema: Callable[[], dict[str, Any]]
    parse: AnswerParser = parse_action
    needs_images: bool = False  # the shipped formats add the screenshot only when the build sends it
    history_len: int | None = 4  # the steps of history its format is given (None: the whole episode's)
    # The agent whose prompts this one's are, byte for byte, plus lines of its own in some steps: a model
    # tuned on those may be served with this agent (`builds prepare` merges its adapter under it).
    extends: str | None = None

    def policy(self, client: ChatClient) -> Policy:
        return LLMPolicy(
            client,
            prompt_format=self.prompt,
            schema=self.schema(),
            parse=self.parse,
            history_len=self.history_len,
        )


AGENTS: Registry[Agent] = Registry("agent")


def register_agent(agent: Agent) -> None:
    """Make `agent` choosable by its name (a later registration under the same name replaces it). An agent
    with `extends` (another agent's name) may play a model tuned on that agent's prompts."""
    AGENTS.register(agent.name, agent)
    extends = getattr(agent, "extends", None)
    if isinstance(extends, str):
        declare_prompt_extension(agent.name, extends)


def get_agent(name: str | None = None) -> Agent:
    """The agent registered as `name` (None: the default agent)."""
    return AGENTS.get(name or DEFAULT_AGENT)


def system_prompts() -> set[str]:
    """The system prompts of every registered agent (a question task's own included): a recorded step
    made with any of them can be replayed today (fidelity), one made with none of them came from an older
    prompt version."""
    formats = [
        a.prompt for a in AGENTS.values() if isinstance(a, PromptAgent) and isinstance(a.prompt, ChatFormat)
    ]
    return {f.system for f in formats} | {f.answer_system for f in formats if f.answer_system is not None}


def fits_its_engine(build: Build) -> None:
    """A build file's check: the build's agent is registered, and gets the screenshots it needs."""
    try:
        agent = get_agent(build.agent)
    except ConfigError as e:
        raise ValueError(f"agent: {e}") from None
    if agent.needs_images and not build.kind.images:
        raise ValueError(
            f"agent: {agent.name!r} needs the screenshot, and the {build.engine} engine's server takes no "
            "image inputs; choose an agent that reads the screen as text, or an engine kind that takes images"
        )
    if agent.needs_images and not build.accepts_images:
        raise ValueError(f"agent: {agent.name!r} needs the screenshot; set accepts_images: true")


add_build_check(fits_its_engine)
register_agent(PromptAgent(DEFAULT_AGENT, build_prompt, action_schema))
register_agent(PromptAgent("compact", compact.build_prompt, action_schema))  # the tuned default agent
# `compact` with what was read before the latest app switch; its format cuts the history itself.
register_agent(
    PromptAgent("compact-noted", noted.build_prompt, action_schema, history_len=None, extends="compact")
)
