"""The `answer` goal predicate: the agent's final answer, normalised as the task file says, equals (or
matches) the expected text. Used in a task's `answer:` check; the episode gives it the answer's text."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from agent_eval.task.goal_kinds import _as_text, _check_regex
from agent_eval.task.registry import GoalPredicate, Probe, register_predicate
from agent_eval.task.strict import Strict

Normalisation = Literal["case", "whitespace", "digits", "punctuation"]


def normalise(text: str, steps: list[Normalisation]) -> str:
    """`text` after each step: case (casefold), whitespace (runs become one space, ends stripped), digits
    (only the digits kept: phone numbers however they are spaced), punctuation (removed)."""
    for step in steps:
        if step == "case":
            text = text.casefold()
        elif step == "whitespace":
            text = " ".join(text.split())
        elif step == "digits":
            text = "".join(c for c in text if c.isdigit())
        else:
            text = re.sub(r"[^\w\s]", "", text)
    return text


class AnswerCheck(Strict):
    """The answer, normalised, equals an expected text (normalised too) or wholly matches a regex."""

    equals: str | list[str] | None = Field(None, description="The expected answer, or several accepted ones.")
    matches: str | None = Field(None, description="A regular expression the whole normalised answer matches.")
    normalize: list[Normalisation] = Field(
        default_factory=lambda: list[Normalisation](["case", "whitespace"]),
        description="In order, to the answer and to `equals`: case, whitespace, digits, punctuation.",
    )

    _regex = field_validator("matches")(_check_regex)

    @field_validator("equals", mode="before")
    @classmethod
    def _texts(cls, value: object) -> object:
        return [_as_text(v) for v in value] if isinstance(value, list) else _as_text(value)

    @model_validator(mode="after")
    def _one_expectation(self) -> AnswerCheck:
        if (self.equals is None) == (self.matches is None):
            raise ValueError("give exactly one of 'equals' or 'matches'")
        if isinstance(self.equals, list) and not self.equals:
            raise ValueError("'equals' lists at least one accepted answer")
        return self

    def accepts(self, answer: str) -> bool:
        given = normalise(answer, self.normalize)
        if self.matches is not None:
            return re.fullmatch(self.matches, given) is not None
        expected = self.equals if isinstance(self.equals, list) else [self.equals or ""]
        return any(given == normalise(e, self.normalize) for e in expected)


class AnswerPredicate(GoalPredicate):
    kind: ClassVar[str] = "answer"
    answer: AnswerCheck

    def holds(self, probe: Probe) -> bool:
        given = probe.answer()
        return given is not None and self.answer.accepts(given)


register_predicate(AnswerPredicate)
