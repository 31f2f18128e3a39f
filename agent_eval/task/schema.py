"""The task file format (tasks/*.yaml) as pydantic models, and TaskInstance: a task resolved for one seed.

Goal-state predicates are one-key mappings of a registered kind (task/registry.py; built-ins: goal_kinds.py).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, Field, PrivateAttr, field_validator, model_validator

from agent_eval.action import ActionType, Direction, Key
from agent_eval.task import answer_kind, data_kinds
from agent_eval.task import params as task_params
from agent_eval.task.goal_kinds import (
    CHECK_MODELS,
    ActivityCheck,
    ActivityPredicate,
    AllPredicate,
    AnyPredicate,
    ElementCheck,
    ElementPredicate,
    NotPredicate,
    SettingCheck,
    SettingPredicate,
    ShellCheck,
    ShellPredicate,
    _as_text,
)
from agent_eval.task.registry import (
    GoalPredicate,
    Predicate,
    holds_predicates,
    predicate_kinds,
    predicate_models,
)
from agent_eval.task.seeding import SeedFile, check_setup_command
from agent_eval.task.strict import Strict as _Strict


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


class Wordings(_Strict):
    """Other ways to say a task's goal, its `{parameters}` filled like the goal's: `agent-eval tune` words
    some of its demonstrations by `train` so the tuned model learns the goal's meaning rather than one
    sentence, and keeps `held_out` out of its data (for evaluation only)."""

    train: list[str] = Field(default_factory=list, description="Wordings the tuning data may use.")
    held_out: list[str] = Field(default_factory=list, description="Never in the tuning data.")


class Task(_Strict):
    """One task file."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    version: int = Field(1, ge=1)
    goal: str = Field(min_length=1, description="The instruction shown to the agent.")
    wordings: Wordings = Field(default_factory=Wordings)
    start: Start = Field(default_factory=Start)
    setup: list[Annotated[str, AfterValidator(check_setup_command)]] = Field(
        default_factory=list,
        description="adb shell commands run after reset (content insert ... seeds data).",
    )
    files: list[SeedFile] = Field(default_factory=list, description="Files pushed to the device after setup.")
    goal_state: Predicate
    answer: Predicate | None = Field(
        None,
        description="Answer tasks: the check of the agent's final answer (an `answer:` predicate, alone or "
        "in all/any/not); goal_state is then the screen that shows the answer.",
    )
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
    def _answer_where_it_is_judged(self) -> Task:
        if any(isinstance(p, answer_kind.AnswerPredicate) for p in _walk(self.goal_state)):
            raise ValueError(
                "goal_state cannot check the answer (it is judged when the agent answers): move the "
                "answer predicate to `answer:`"
            )
        if self.answer is not None and not any(
            isinstance(p, answer_kind.AnswerPredicate) for p in _walk(self.answer)
        ):
            raise ValueError("`answer:` needs an answer predicate, e.g. answer: {answer: {equals: '42'}}")
        return self

    @model_validator(mode="after")
    def _goal_placeholders(self) -> Task:
        names = task_params.placeholders(self.params)
        texts = [("goal", self.goal)]
        texts += [
            (f"wordings.{split}[{k}]", w)
            for split in ("train", "held_out")
            for k, w in enumerate(getattr(self.wordings, split))
        ]
        for where, text in texts:
            missing = task_params.unfilled(text, names)
            if missing:
                raise ValueError(
                    f"{where} uses {', '.join('{' + m + '}' for m in missing)} but params does not define it"
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
            wordings=resolved.wordings,
            start=resolved.start,
            setup=tuple(resolved.setup),
            goal_state=resolved.goal_state,
            answer=resolved.answer,
            files=tuple(resolved.files),
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
    answer: Predicate | None = None
    files: tuple[SeedFile, ...] = ()
    wordings: Wordings = dataclasses.field(default_factory=Wordings)

    def __hash__(self) -> int:
        # The task holds lists (unhashable); an instance is identified by task, version and seed.
        return hash((self.task.id, self.task.version, self.seed))

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def verify(self) -> bool:
        return self.task.verify


def _walk(predicate: GoalPredicate) -> list[GoalPredicate]:
    """The predicate and every predicate inside it (all/any/not, or a plug-in's own combination)."""
    found = [predicate]
    for name in type(predicate).model_fields:
        value = getattr(predicate, name)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, GoalPredicate):
                found += _walk(item)
    return found


holds_predicates(Task)


def task_models() -> tuple[type[BaseModel], ...]:
    """Every model a task file's fields come from (for "did you mean" hints), registered kinds included."""
    return (Task, Start, OracleStep, SeedFile, *CHECK_MODELS, *data_kinds.DATA_CHECKS, *predicate_models())


__all__ = [
    "ActivityCheck",
    "ActivityPredicate",
    "AllPredicate",
    "AnyPredicate",
    "ElementCheck",
    "ElementPredicate",
    "NotPredicate",
    "OracleStep",
    "Predicate",
    "SettingCheck",
    "SettingPredicate",
    "ShellCheck",
    "ShellPredicate",
    "Start",
    "Task",
    "TaskInstance",
    "predicate_kinds",
    "task_models",
]
