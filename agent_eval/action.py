"""The actions an agent can take on a phone, as one recorded value type.

The agent parses model answers into these; the device driver executes them; the run store records them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ActionType(StrEnum):
    TAP = "tap"
    LONG_PRESS = "long_press"
    SWIPE = "swipe"
    SCROLL = "scroll"
    TYPE = "type"
    KEY = "key"
    OPEN_APP = "open_app"
    WAIT = "wait"
    DONE = "done"
    INFEASIBLE = "infeasible"
    ANSWER = "answer"  # the final answer to a question the goal asks; `text` holds it


TERMINAL_ACTIONS = frozenset({ActionType.DONE, ActionType.INFEASIBLE, ActionType.ANSWER})

Direction = Literal["up", "down", "left", "right"]
Key = Literal["back", "home", "enter"]


class Action(BaseModel):
    """One step's decision. Which fields matter depends on `type`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: ActionType
    element: int | None = Field(default=None, description="Number of the element in the list the agent saw.")
    x: int | None = Field(
        default=None, description="Screen x in pixels, for taps/presses without an element."
    )
    y: int | None = Field(default=None, description="Screen y in pixels.")
    direction: Direction | None = Field(default=None, description="For scroll and swipe.")
    text: str | None = Field(default=None, description="For type: the text to enter; for answer: the answer.")
    key: Key | None = Field(default=None, description="For key: which key.")
    app: str | None = Field(default=None, description="For open_app: the app's label or package name.")
    seconds: float | None = Field(default=None, description="For wait.")

    @property
    def is_terminal(self) -> bool:
        return self.type in TERMINAL_ACTIONS
