"""The engine plug point: an engine kind knows how to check a build, start its server and reach it.

A build's `engine:` names a registered kind (`vllm-cpu`, `llama.cpp`, `endpoint` are in
`serving/built_in_engines.py`); its `engine_args:` is validated against the options model the kind states
(`options`), and its `pinning:` is applied by the harness to whatever command the kind returns (`Launch`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Protocol, TypeVar

from pydantic import BaseModel, Field, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

from agent_eval.chat.endpoint import Endpoint
from agent_eval.errors import ConfigError
from agent_eval.records import StrictModel
from agent_eval.registry import Registry

# The build a kind is handed (`spec.Build`): a parameter, so that this plug point needs nothing of the schema
# that imports it (`spec.Build.kind` is an `EngineKind[Build]`).
BuildT = TypeVar("BuildT", contravariant=True)


@dataclass(frozen=True)
class Serving:
    """What one start of an engine is for, beyond the build itself."""

    slots: int = 1
    """Requests it should answer at once: the grid's phones (an engine that batches decodes them together)."""
    teacher_forcing: bool = False
    """It will score given answers (fidelity), so it must answer /tokenize and prompt_logprobs."""


ONE_AT_A_TIME = Serving()


@dataclass(frozen=True)
class Launch:
    """Everything needed to start one build's server and know when it answers.

    The command is the server's own: the harness puts the build's pinning (numactl or taskset) in front of it
    and records what it applied, with `pinning`'s entries (what the kind did with the CPUs) added.
    """

    command: list[str]
    env: dict[str, str]  # the engine-relevant variables, added to the harness's environment
    ready_path: str  # GET this (relative to the server root) until it answers 200
    endpoint: Endpoint
    pinning: dict[str, Any] = field(default_factory=dict)  # e.g. {"n_threads": 2}: how it uses the CPUs
    unset: tuple[str, ...] = ()  # removed from the inherited environment unless `env` sets them


class EngineOptions(StrictModel):
    """The base of every engine kind's options (a build's `engine_args:`): what the harness itself reads.

    A kind states its own model, a subclass with its fields, as `options`; a key the model does not know is
    refused when the builds file loads, naming the build and the key.
    """

    startup_timeout_s: float = Field(420.0, gt=0, description="How long to wait for the server to answer.")


class EngineKind(Protocol[BuildT]):
    """One way of serving a build.

    Besides these, a kind may state (read with getattr):
    - `options`: the pydantic model of its builds' `engine_args:` (a subclass of `EngineOptions`; unstated:
      `EngineOptions` itself, so only `startup_timeout_s`). Its launch reads them as
      `build.options(TheModel)`.
    - `keeps_draw_under_mask` (default False): True when its seeded sampler keeps the drawn token when tokens
      that were not drawn are masked, so a grid's navigation probe replays its episode up to the stop
      instead of playing every one (bench/bench_probe_replay.py checks an engine; docs/scorecard.md).
    - `teacher_forcing_apart` (default False): True when the server its builds play on cannot score given
      answers, so a start for teacher forcing (`Serving(teacher_forcing=True)`) launches another server.
      A grid with fidelity then plays on the first and starts the second for its probes alone.
    """

    name: str
    starts_server: bool
    """True: the harness starts a server process per build; False: it connects to the build's base_url."""
    prepares_without_engine: bool
    """True: `builds prepare` makes its weights on a host that cannot serve them (GGUF needs no server)."""
    teacher_forcing: bool
    """True: its server scores a given answer token by token (prompt logprobs), so fidelity can probe it."""
    images: bool
    """True: its server takes image inputs, so a build may send screenshots (`accepts_images`)."""

    def check(self, build: BuildT) -> None:
        """Raise ValueError (shown as a build-file error) when the build does not fit this engine."""
        ...

    def missing_software(self) -> str | None:
        """Why this host cannot run the engine at all (None: it can), in words that say how to fix it."""
        ...

    def launch(self, build: BuildT, weights: Path, port: int, serving: Serving) -> Launch:
        """The server command for a build whose weights are at `weights`, on `port`, for `serving` (the
        harness pins it: the command names no numactl or taskset)."""
        ...

    def connect(self, build: BuildT) -> Endpoint:
        """The endpoint of a build this kind does not start (only called when `starts_server` is False)."""
        ...

    def manifest_mode(self, build: BuildT) -> str | None:
        """The engine mode recorded in the build manifest (None: this engine has none)."""
        ...


def options_model(kind: EngineKind[Any]) -> type[EngineOptions]:
    """The model a kind's builds' `engine_args:` are validated against."""
    model: type[EngineOptions] = getattr(kind, "options", EngineOptions)
    return model


def keeps_draw_under_mask(kind: EngineKind[Any]) -> bool:
    """Whether its seeded sampler keeps the drawn token when undrawn tokens are masked (unstated: False)."""
    return bool(getattr(kind, "keeps_draw_under_mask", False))


def teacher_forcing_apart(kind: EngineKind[Any]) -> bool:
    """Whether teacher forcing needs a server of its own beside the one that plays (unstated: False)."""
    return bool(getattr(kind, "teacher_forcing_apart", False))


_HOLDERS: list[type[BaseModel]] = []  # models with an engine-options field: rebuilt when a kind is added


def _rebuild_holders(kind: EngineKind[Any]) -> None:
    for holder in _HOLDERS:
        holder.model_rebuild(force=True)


ENGINE_KINDS: Registry[EngineKind[Any]] = Registry("engine", on_register=_rebuild_holders)


CAPABILITIES = ("starts_server", "prepares_without_engine", "teacher_forcing", "images")


def register_engine_kind(kind: EngineKind[Any]) -> None:
    """Make `kind` usable as a build's `engine:` (a later registration under the same name replaces it).

    Refused: a kind that leaves one of `starts_server`, `prepares_without_engine`, `teacher_forcing`,
    `images` unstated (True or False), or whose `options` is not a subclass of `EngineOptions`.
    """
    name = getattr(kind, "name", kind)
    unstated = [c for c in CAPABILITIES if not isinstance(getattr(kind, c, None), bool)]
    if unstated:
        raise ConfigError(f"engine kind {name!r} must state {', '.join(unstated)} (True or False)")
    options = getattr(kind, "options", EngineOptions)
    if not (isinstance(options, type) and issubclass(options, EngineOptions)):
        raise ConfigError(
            f"engine kind {name!r}: its options model must subclass EngineOptions (agent_eval.api), "
            f"not {options!r}"
        )
    ENGINE_KINDS.register(kind.name, kind)


def engine_kind(name: str) -> EngineKind[Any]:
    return ENGINE_KINDS.get(name)


def engine_kinds() -> list[str]:
    return ENGINE_KINDS.names()


# -- a build's engine_args, validated as its engine kind's options ------------------------------------------

UNKNOWN_ENGINE = "?"  # the tag of engine_args whose engine is unknown: its own error says so


@dataclass(frozen=True)
class ForEngine:
    """A build's `engine_args:` as given, with the engine it is for (put there before validation)."""

    engine: str
    given: Any


def for_engine(engine: Any, given: Any) -> ForEngine:
    """Tag a build's raw `engine_args:` with its `engine:` so they validate as that kind's options."""
    known = isinstance(engine, str) and engine in ENGINE_KINDS
    return ForEngine(engine if known else UNKNOWN_ENGINE, {} if given is None else given)


def _tag(value: Any) -> str | None:
    """The choice to validate (a tagged build's engine) or to serialize (a kind with the options' model)."""
    if isinstance(value, ForEngine):
        return value.engine
    for name, kind in ENGINE_KINDS.registered():
        if type(value) is options_model(kind):
            return name
    return None


class _RegisteredOptions:
    """The pydantic schema of `AnyEngineOptions`: a tagged union of the kinds' options models."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        def choice(model: type[EngineOptions]) -> CoreSchema:
            return core_schema.no_info_before_validator_function(_given, handler.generate_schema(model))

        choices: dict[Any, CoreSchema] = {
            name: choice(options_model(kind)) for name, kind in ENGINE_KINDS.registered()
        }
        # An unknown engine is its own error; its engine_args validate as the built-in engines' do.
        fallback = ENGINE_KINDS.registered()[0][1] if choices else None
        choices[UNKNOWN_ENGINE] = choice(options_model(fallback) if fallback else EngineOptions)
        return core_schema.tagged_union_schema(
            choices,
            discriminator=_tag,
            custom_error_type="untagged_engine_args",
            custom_error_message="engine_args are validated with the build's engine (internal: untagged)",
        )


def _given(value: Any) -> Any:
    return value.given if isinstance(value, ForEngine) else value


AnyEngineOptions = Annotated[EngineOptions, _RegisteredOptions()]


def holds_engine_options(*models: type[BaseModel]) -> None:
    """Declare models with an AnyEngineOptions field: rebuilt now and whenever an engine kind registers."""
    _HOLDERS.extend(models)
    for model in models:
        model.model_rebuild(force=True)
