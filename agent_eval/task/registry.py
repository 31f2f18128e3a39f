"""The goal-predicate plug point: each predicate kind is a pydantic model registered under its task-file key.

A task file writes a predicate as a one-key mapping (`setting: {...}`); the key is the kind's `kind` tag.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Annotated, Any, ClassVar, Protocol

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

from agent_eval.device.adb import ShellResult
from agent_eval.errors import ConfigError
from agent_eval.registry import Registry
from agent_eval.screen.observation import Element, Observation


class StateSource(Protocol):
    """The device as a goal predicate reads it (the adb `Device` and every `EpisodeDevice` satisfy it)."""

    def shell(self, cmd: str, timeout_s: float = 10, *, idempotent: bool = False) -> ShellResult:
        """Run `cmd` in the device's shell (as adb's shell user); `idempotent`: safe to retry on a dropped
        connection. A failing command is a non-zero `exit_code`, not an exception; DeviceError: the device
        itself failed (infra)."""
        ...

    def setting(self, namespace: str, key: str) -> str | None:
        """`settings get <namespace> <key>` (namespace: system, secure or global); None when unset."""
        ...

    def focused_activity(self) -> str:
        """The focused activity's component, e.g. `com.android.settings/.SubSettings`."""
        ...

    def settled_ui(self) -> str:
        """The screen's view hierarchy (uiautomator XML) once it has stopped changing."""
        ...


class Probe(Protocol):
    """What a predicate reads while it is evaluated: the device, the screen, and its sub-predicates."""

    observation: Observation | None

    @property
    def device(self) -> StateSource:
        """The device under test (`probe.device.shell(...)`, `probe.device.setting(...)`)."""
        ...

    def nodes(self) -> tuple[Element, ...]: ...

    def activity(self) -> str: ...

    def answer(self) -> str | None: ...

    def holds(self, predicate: GoalPredicate) -> bool: ...


class GoalPredicate(BaseModel):
    """One kind of goal-state check. Subclass it with `kind` (its key in a task file), one field of that
    name (its alias may be the key when the key is a Python keyword), and `holds`."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    kind: ClassVar[str]

    @abstractmethod
    def holds(self, probe: Probe) -> bool:
        """Whether the check holds now; device failures raise DeviceError."""


_HOLDERS: list[type[BaseModel]] = []  # models with a Predicate field: rebuilt when a kind is added


def _rebuild_holders(model: type[GoalPredicate]) -> None:
    for holder in _HOLDERS:
        holder.model_rebuild(force=True)


PREDICATES: Registry[type[GoalPredicate]] = Registry("goal predicate", on_register=_rebuild_holders)


def predicate_kinds() -> list[str]:
    """The kinds in the order they were registered: the built-ins first, as errors list them."""
    return [name for name, _ in PREDICATES.in_order()]


def predicate_kind_of(value: Any) -> str | None:
    """The registered kind a task-file mapping (or a predicate model) is, or None."""
    if isinstance(value, dict):
        keys = list(value)
        return keys[0] if len(keys) == 1 and keys[0] in PREDICATES else None
    kind = getattr(type(value), "kind", None)
    return kind if isinstance(kind, str) and kind in PREDICATES else None


class _RegisteredKinds:
    """The pydantic schema of `Predicate`: a tagged union of the kinds registered when it is built."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        choices: dict[Any, CoreSchema] = {k: handler.generate_schema(m) for k, m in PREDICATES.registered()}
        if not choices:  # while the built-in kinds are being defined
            return core_schema.any_schema()
        return core_schema.tagged_union_schema(
            choices,
            discriminator=predicate_kind_of,
            custom_error_type="unknown_predicate",
            custom_error_message="a predicate is a mapping with exactly one key, one of: "
            + ", ".join(choices),
        )


Predicate = Annotated[GoalPredicate, _RegisteredKinds()]


def holds_predicates(*models: type[BaseModel]) -> None:
    """Declare models with a Predicate field: they are rebuilt now and whenever a kind is registered."""
    _HOLDERS.extend(models)
    for model in models:
        model.model_rebuild(force=True)


def register_predicate(model: type[GoalPredicate]) -> None:
    """Make `model` usable in task files under its `kind` key (a later registration replaces it)."""
    kind = getattr(model, "kind", None)
    if not isinstance(kind, str) or not kind.isidentifier():
        raise ConfigError(f"predicate model {model.__name__} needs a `kind` tag: its key in a task file")
    if not any((info.alias or name) == kind for name, info in model.model_fields.items()):
        raise ConfigError(f"predicate model {model.__name__} needs a field named (or aliased) {kind!r}")
    PREDICATES.register(kind, model)


def predicate_models() -> list[type[GoalPredicate]]:
    return [model for _, model in PREDICATES.in_order()]
