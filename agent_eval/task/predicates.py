"""Evaluating a task's goal_state on a device: settings, shell outputs, UI elements, the focused activity.

Device reads are made lazily and at most once per evaluation, so `all:` of three settings costs three reads.
"""

from __future__ import annotations

import re
from typing import Protocol

from agent_eval.device.driver import ShellResult, short_component
from agent_eval.screen.observation import Element, Observation
from agent_eval.screen.uitree import ancestors, parse_ui
from agent_eval.task.schema import (
    ActivityPredicate,
    AllPredicate,
    AnyPredicate,
    ElementCheck,
    ElementPredicate,
    NotPredicate,
    Predicate,
    SettingPredicate,
    ShellPredicate,
)


class StateSource(Protocol):
    """What the predicates read from a device (agent_eval.device.Device satisfies it)."""

    def shell(self, cmd: str, timeout_s: float = 10, *, idempotent: bool = False) -> ShellResult: ...

    def setting(self, namespace: str, key: str) -> str | None: ...

    def focused_activity(self) -> str: ...

    def settled_ui(self) -> str: ...


class _Probe:
    def __init__(self, device: StateSource, observation: Observation | None) -> None:
        self.device = device
        self.observation = observation
        self._nodes: tuple[Element, ...] | None = None
        self._activity: str | None = None

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


def _text_matches(value: str, equals: str | None, matches: str | None) -> bool:
    if equals is not None:
        return value == equals
    return matches is not None and re.search(matches, value) is not None


def _row_of(nodes: tuple[Element, ...], label: Element) -> Element:
    """The clickable row holding `label` (a preference row, a list item), or the label itself."""
    if label.clickable:
        return label
    for parent in ancestors(nodes, label):
        if parent.clickable:
            return parent
    return label


def _inside(nodes: tuple[Element, ...], element: Element, container: Element) -> bool:
    return element.node == container.node or any(a.node == container.node for a in ancestors(nodes, element))


def _selects(check: ElementCheck, element: Element) -> bool:
    if check.text is not None and element.text != check.text:
        return False
    if check.text_matches is not None and re.search(check.text_matches, element.text) is None:
        return False
    rid = check.resource_id
    if rid is not None and element.resource_id != rid and not element.resource_id.endswith("/" + rid):
        return False
    if check.cls is not None and element.cls != check.cls and not element.cls.endswith("." + check.cls):
        return False
    if check.content_desc is not None and element.content_desc != check.content_desc:
        return False
    if check.checked is not None and element.checked != check.checked:
        return False
    return check.selected is None or element.selected == check.selected


def matching_elements(check: ElementCheck, nodes: tuple[Element, ...]) -> list[Element]:
    """The nodes that satisfy every selector and value of `check` (ignoring `exists`)."""
    found = [node for node in nodes if _selects(check, node)]
    if check.row is not None:
        rows = [_row_of(nodes, n) for n in nodes if n.text == check.row]
        found = [node for node in found if any(_inside(nodes, node, row) for row in rows)]
    return found


def _holds(predicate: Predicate, probe: _Probe) -> bool:
    if isinstance(predicate, SettingPredicate):
        s = predicate.setting
        return probe.device.setting(s.namespace, s.key) == s.equals
    if isinstance(predicate, ShellPredicate):
        c = predicate.shell
        return _text_matches(
            probe.device.shell(c.command, idempotent=True).output.strip(), c.equals, c.matches
        )
    if isinstance(predicate, ElementPredicate):
        found = bool(matching_elements(predicate.element, probe.nodes()))
        return found if predicate.element.exists else not found
    if isinstance(predicate, ActivityPredicate):
        a = predicate.activity
        current = probe.activity()
        if a.equals is not None:
            return short_component(current) == short_component(a.equals)
        return _text_matches(current, None, a.matches)
    if isinstance(predicate, AllPredicate):
        return all(_holds(p, probe) for p in predicate.all_)
    if isinstance(predicate, AnyPredicate):
        return any(_holds(p, probe) for p in predicate.any_)
    if isinstance(predicate, NotPredicate):
        return not _holds(predicate.not_, probe)
    raise TypeError(f"not a goal-state predicate: {predicate!r}")


def goal_holds(goal_state: Predicate, device: StateSource, observation: Observation | None = None) -> bool:
    """Whether `goal_state` holds on `device` now.

    `observation`, when given, must have been taken after the last action: element and activity predicates
    then read it instead of dumping the screen again. Device failures raise DeviceError.
    """
    return _holds(goal_state, _Probe(device, observation))
