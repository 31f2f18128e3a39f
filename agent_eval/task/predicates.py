"""Evaluating a task's goal_state on a device: each predicate kind says how it holds (task/goal_kinds.py).

Device reads are made lazily and at most once per evaluation, so `all:` of three settings costs three reads.
"""

from __future__ import annotations

from agent_eval.screen.observation import Element, Observation
from agent_eval.screen.uitree import parse_ui
from agent_eval.task.goal_kinds import matching_elements
from agent_eval.task.registry import GoalPredicate, StateSource

__all__ = ["StateSource", "goal_holds"]


class _Probe:
    """One evaluation's reads (task/registry.py's Probe): each made at most once."""

    def __init__(self, device: StateSource, observation: Observation | None, answer: str | None) -> None:
        self.device = device
        self.observation = observation
        self._answer = answer
        self._nodes: tuple[Element, ...] | None = None
        self._activity: str | None = None

    def holds(self, predicate: GoalPredicate) -> bool:
        return predicate.holds(self)

    def answer(self) -> str | None:
        return self._answer

    def nodes(self) -> tuple[Element, ...]:
        if self._nodes is None:
            if self.observation is not None:
                self._nodes = self.observation.all_nodes or self.observation.elements
            else:
                self._nodes = tuple(parse_ui(self.device.settled_ui())[1])
        return self._nodes

    def activity(self) -> str:
        if self._activity is None:
            self._activity = (
                self.observation.activity if self.observation is not None else self.device.focused_activity()
            )
        return self._activity


def goal_holds(
    goal_state: GoalPredicate,
    device: StateSource,
    observation: Observation | None = None,
    *,
    answer: str | None = None,
) -> bool:
    """Whether `goal_state` holds on `device` now.

    `observation`, when given, must have been taken after the last action: element and activity predicates
    then read it instead of dumping the screen again. `answer` is the agent's final answer, if it gave one.
    Device failures raise DeviceError.
    """
    return _Probe(device, observation, answer).holds(goal_state)


__all__ = ["StateSource", "goal_holds", "matching_elements"]
