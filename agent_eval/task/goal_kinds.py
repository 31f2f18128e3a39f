"""The built-in goal predicates: setting, shell, element, activity, and all / any / not to combine them.

Each is a registered kind (task/registry.py): a pydantic model for its task-file mapping and how it holds.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from agent_eval.device.driver import short_component
from agent_eval.screen.observation import Element
from agent_eval.screen.uitree import ancestors
from agent_eval.task.registry import GoalPredicate, Predicate, Probe, holds_predicates, register_predicate
from agent_eval.task.strict import Strict as _Strict


def _as_text(value: Any) -> Any:
    """YAML reads `equals: 1` as an int; device outputs are text, so compare as text."""
    if isinstance(value, bool):
        raise ValueError("write the expected text in quotes (e.g. '1' or 'true'), not a YAML boolean")
    if isinstance(value, int | float):
        return str(value)
    return value


def _check_regex(pattern: str | None) -> str | None:
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as e:
            raise ValueError(f"not a valid regular expression: {e}") from e
    return pattern


class _EqualsOrMatches(_Strict):
    equals: str | None = None
    matches: str | None = Field(None, description="A regular expression searched for in the value.")

    _text = field_validator("equals", mode="before")(_as_text)
    _regex = field_validator("matches")(_check_regex)

    @model_validator(mode="after")
    def _one_expectation(self) -> _EqualsOrMatches:
        if (self.equals is None) == (self.matches is None):
            raise ValueError("give exactly one of 'equals' or 'matches'")
        return self


class ShellCheck(_EqualsOrMatches):
    """A shell command's output (stripped) equals a text or matches a regular expression."""

    command: str


class SettingCheck(_Strict):
    """`settings get NAMESPACE KEY` equals a value (null: the key is unset)."""

    namespace: Literal["global", "secure", "system"]
    key: str = Field(pattern=r"^[\w.:-]+$", description="A settings key such as wifi_on.")
    equals: str | None

    _text = field_validator("equals", mode="before")(_as_text)


class ElementCheck(_Strict):
    """Some node of the UI tree matches every selector given (and the checked/selected values given).

    With `exists: false` the predicate holds when no node matches.
    """

    text: str | None = None
    text_matches: str | None = None
    resource_id: str | None = None
    cls: str | None = Field(None, alias="class")
    content_desc: str | None = None
    row: str | None = Field(None, description="In the same clickable row as a node with this text.")
    checked: bool | None = None
    selected: bool | None = None
    exists: bool = True

    _text = field_validator("text", mode="before")(_as_text)
    _regex = field_validator("text_matches")(_check_regex)

    @model_validator(mode="after")
    def _has_selector(self) -> ElementCheck:
        if all(
            v is None
            for v in (self.text, self.text_matches, self.resource_id, self.cls, self.content_desc, self.row)
        ):
            raise ValueError(
                "select the element by text, text_matches, resource_id, class, content_desc or row"
            )
        return self


class ActivityCheck(_EqualsOrMatches):
    """The focused activity (`pkg/.Activity`) equals a component or matches a regular expression."""


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


class ShellPredicate(GoalPredicate):
    kind: ClassVar[str] = "shell"
    shell: ShellCheck

    def holds(self, probe: Probe) -> bool:
        c = self.shell
        output = probe.device.shell(c.command, idempotent=True).output.strip()
        return _text_matches(output, c.equals, c.matches)


class SettingPredicate(GoalPredicate):
    kind: ClassVar[str] = "setting"
    setting: SettingCheck

    def holds(self, probe: Probe) -> bool:
        s = self.setting
        return bool(probe.device.setting(s.namespace, s.key) == s.equals)


class ElementPredicate(GoalPredicate):
    kind: ClassVar[str] = "element"
    element: ElementCheck

    def holds(self, probe: Probe) -> bool:
        found = bool(matching_elements(self.element, probe.nodes()))
        return found if self.element.exists else not found


class ActivityPredicate(GoalPredicate):
    kind: ClassVar[str] = "activity"
    activity: ActivityCheck

    def holds(self, probe: Probe) -> bool:
        a, current = self.activity, probe.activity()
        if a.equals is not None:
            return short_component(current) == short_component(a.equals)
        return _text_matches(current, None, a.matches)


class AllPredicate(GoalPredicate):
    kind: ClassVar[str] = "all"
    all_: list[Predicate] = Field(alias="all", min_length=1)

    def holds(self, probe: Probe) -> bool:
        return all(probe.holds(p) for p in self.all_)


class AnyPredicate(GoalPredicate):
    kind: ClassVar[str] = "any"
    any_: list[Predicate] = Field(alias="any", min_length=1)

    def holds(self, probe: Probe) -> bool:
        return any(probe.holds(p) for p in self.any_)


class NotPredicate(GoalPredicate):
    kind: ClassVar[str] = "not"
    not_: Predicate = Field(alias="not")

    def holds(self, probe: Probe) -> bool:
        return not probe.holds(self.not_)


CHECK_MODELS = (ShellCheck, SettingCheck, ElementCheck, ActivityCheck)
BUILT_IN: tuple[type[GoalPredicate], ...] = (
    ShellPredicate,
    SettingPredicate,
    ElementPredicate,
    ActivityPredicate,
    AllPredicate,
    AnyPredicate,
    NotPredicate,
)
for _kind in BUILT_IN:
    register_predicate(_kind)
holds_predicates(AllPredicate, AnyPredicate, NotPredicate)
