"""The task file format (tasks/*.yaml) as pydantic models, and TaskInstance: a task resolved for one seed.

Goal-state predicates are one-key mappings: setting, shell, element, activity, all, any, not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    field_validator,
    model_validator,
)

from agent_eval.action import ActionType, Direction, Key
from agent_eval.task import params as task_params

PREDICATE_KINDS = ("shell", "setting", "element", "activity", "all", "any", "not")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


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


class ShellPredicate(_Strict):
    shell: ShellCheck


class SettingPredicate(_Strict):
    setting: SettingCheck


class ElementPredicate(_Strict):
    element: ElementCheck


class ActivityPredicate(_Strict):
    activity: ActivityCheck


class AllPredicate(_Strict):
    all_: list[Predicate] = Field(alias="all", min_length=1)


class AnyPredicate(_Strict):
    any_: list[Predicate] = Field(alias="any", min_length=1)


class NotPredicate(_Strict):
    not_: Predicate = Field(alias="not")


def _predicate_kind(value: Any) -> str | None:
    if isinstance(value, dict):
        keys = list(value)
        return keys[0] if len(keys) == 1 and keys[0] in PREDICATE_KINDS else None
    for kind, model in _KIND_MODELS.items():
        if isinstance(value, model):
            return kind
    return None


Predicate = Annotated[
    Annotated[ShellPredicate, Tag("shell")]
    | Annotated[SettingPredicate, Tag("setting")]
    | Annotated[ElementPredicate, Tag("element")]
    | Annotated[ActivityPredicate, Tag("activity")]
    | Annotated[AllPredicate, Tag("all")]
    | Annotated[AnyPredicate, Tag("any")]
    | Annotated[NotPredicate, Tag("not")],
    Discriminator(
        _predicate_kind,
        custom_error_type="unknown_predicate",
        custom_error_message="a predicate is a mapping with exactly one key, one of: "
        + ", ".join(PREDICATE_KINDS),
    ),
]

_KIND_MODELS: dict[str, type[BaseModel]] = {
    "shell": ShellPredicate,
    "setting": SettingPredicate,
    "element": ElementPredicate,
    "activity": ActivityPredicate,
    "all": AllPredicate,
    "any": AnyPredicate,
    "not": NotPredicate,
}

for _model in (AllPredicate, AnyPredicate, NotPredicate):
    _model.model_rebuild()


class Start(_Strict):
    """Where an episode begins after setup: home (the default), an app, an intent action, or an activity."""

    app: str | None = Field(None, description="An app label or package, opened like the agent's open_app.")
    intent: str | None = Field(None, description="An intent action, e.g. android.settings.WIFI_SETTINGS.")
    activity: str | None = Field(None, description="A component, e.g. com.android.settings/.Settings.")

    @model_validator(mode="before")
    @classmethod
    def _home_shorthand(cls, value: Any) -> Any:
        if value == "home":
            return {}
        if isinstance(value, str):
            raise ValueError("start is 'home' or a mapping with one of: app, intent, activity")
        return value

    @model_validator(mode="after")
    def _at_most_one(self) -> Start:
        if sum(v is not None for v in (self.app, self.intent, self.activity)) > 1:
            raise ValueError("give only one of app, intent, activity")
        return self

    @property
    def is_home(self) -> bool:
        return self.app is None and self.intent is None and self.activity is None


class OracleStep(_Strict):
    """One step of a scripted solution. Taps may name their element by text / resource_id / content_desc /
    class instead of a number; the oracle resolves it on the screen it sees. `until` repeats a scroll until
    a node with that text is on screen."""

    type: ActionType
    text: str | None = Field(None, description="tap/long_press: the element's text; type: the text to enter.")
    resource_id: str | None = None
    content_desc: str | None = None
    cls: str | None = Field(None, alias="class")
    element: int | None = None
    x: int | None = None
    y: int | None = None
    direction: Direction | None = None
    key: Key | None = None
    app: str | None = None
    seconds: float | None = None
    until: str | None = Field(None, description="scroll: repeat until a node with this text is visible.")
    max_repeats: int = Field(8, ge=1, le=50)

    _text = field_validator("text", mode="before")(_as_text)


class Task(_Strict):
    """One task file."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    version: int = Field(1, ge=1)
    goal: str = Field(min_length=1, description="The instruction shown to the agent.")
    start: Start = Field(default_factory=Start)
    setup: list[str] = Field(default_factory=list, description="adb shell commands run after reset.")
    goal_state: Predicate
    max_steps: int = Field(15, ge=1, le=500)
    params: dict[str, list[str | dict[str, str]]] = Field(default_factory=dict)
    verify: bool = Field(
        False, description="Starts in its goal state on purpose: the answer is to check and stop."
    )
    oracle: list[OracleStep] | None = None
    tags: list[str] = Field(default_factory=list)
    split: Literal["train", "held_out"] = Field(
        "train",
        description="train: the tuner may learn from it; held_out: never in the tuning data.",
    )

    _source: Path | None = PrivateAttr(default=None)

    @field_validator("params", mode="before")
    @classmethod
    def _param_values(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        cleaned: dict[Any, Any] = {}
        for name, values in value.items():
            if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise ValueError(f"parameter name {name!r} must be an identifier")
            if not isinstance(values, list) or not values:
                raise ValueError(f"parameter {name!r} needs a non-empty list of values")
            cleaned[name] = [
                {str(k): _as_text(v) for k, v in item.items()} if isinstance(item, dict) else _as_text(item)
                for item in values
            ]
            shapes = {tuple(sorted(item)) if isinstance(item, dict) else () for item in cleaned[name]}
            if len(shapes) > 1:
                raise ValueError(
                    f"the values of parameter {name!r} must all be texts, or mappings with the same keys"
                )
        return cleaned

    @model_validator(mode="after")
    def _goal_placeholders(self) -> Task:
        missing = task_params.unfilled(self.goal, task_params.placeholders(self.params))
        if missing:
            raise ValueError(
                f"goal uses {', '.join('{' + m + '}' for m in missing)} but params does not define it"
            )
        return self

    @property
    def source(self) -> Path | None:
        """The file this task was loaded from, when it was."""
        return self._source

    @property
    def where(self) -> str:
        return str(self._source) if self._source is not None else f"task {self.id}"

    def instantiate(self, seed: int) -> TaskInstance:
        """This task with its parameters chosen for `seed` and substituted everywhere."""
        values = task_params.choose(self.params, seed)
        raw = task_params.substitute(
            self.model_dump(by_alias=True, exclude={"params"}, exclude_unset=True), values
        )
        resolved = Task.model_validate({**raw, "params": self.params})
        return TaskInstance(
            task=self,
            seed=seed,
            params=values,
            goal=resolved.goal,
            start=resolved.start,
            setup=tuple(resolved.setup),
            goal_state=resolved.goal_state,
            oracle=tuple(resolved.oracle) if resolved.oracle is not None else None,
        )


@dataclass(frozen=True)
class TaskInstance:
    """A task resolved for one seed: what one episode runs."""

    task: Task
    seed: int
    params: dict[str, str]
    goal: str
    start: Start
    setup: tuple[str, ...]
    goal_state: Predicate
    oracle: tuple[OracleStep, ...] | None

    def __hash__(self) -> int:
        # The task holds lists (unhashable); an instance is identified by task, version and seed.
        return hash((self.task.id, self.task.version, self.seed))

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def verify(self) -> bool:
        return self.task.verify


TASK_MODELS: tuple[type[BaseModel], ...] = (
    Task,
    Start,
    OracleStep,
    ShellCheck,
    SettingCheck,
    ElementCheck,
    ActivityCheck,
    *_KIND_MODELS.values(),
)
