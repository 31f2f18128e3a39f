"""The engine plug point: an engine kind knows how to check a build, start its server and reach it.

A build's `engine:` names a registered kind (`vllm-cpu`, `llama.cpp`, `endpoint` are in `engines.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agent_eval.errors import ConfigError
from agent_eval.registry import Registry

if TYPE_CHECKING:
    from agent_eval.builds.endpoint import Endpoint
    from agent_eval.builds.engines import Launch
    from agent_eval.builds.spec import Build


@dataclass(frozen=True)
class Serving:
    """What one start of an engine is for, beyond the build itself."""

    slots: int = 1
    """Requests it should answer at once: the grid's phones (an engine that batches decodes them together)."""
    teacher_forcing: bool = False
    """It will score given answers (fidelity), so it must answer /tokenize and prompt_logprobs."""


ONE_AT_A_TIME = Serving()


class EngineKind(Protocol):
    """One way of serving a build."""

    name: str
    starts_server: bool
    """True: the harness starts a server process per build; False: it connects to the build's base_url."""
    prepares_without_engine: bool
    """True: `builds prepare` makes its weights on a host that cannot serve them (GGUF needs no server)."""
    teacher_forcing: bool
    """True: its server scores a given answer token by token (prompt logprobs), so fidelity can probe it."""
    images: bool
    """True: its server takes image inputs, so a build may send screenshots (`accepts_images`)."""
    # Optional (read with getattr, default False): True when its seeded sampler keeps the drawn token when
    # tokens that were not drawn are masked, so a navigation probe replays its episode up to the stop.
    # keeps_draw_under_mask: bool

    def check(self, build: Build) -> None:
        """Raise ValueError (shown as a build-file error) when the build does not fit this engine."""
        ...

    def missing_software(self) -> str | None:
        """Why this host cannot run the engine at all (None: it can), in words that say how to fix it."""
        ...

    def launch(self, build: Build, weights: Path, port: int, serving: Serving) -> Launch:
        """The server command for a build whose weights are at `weights`, on `port`, for `serving`."""
        ...

    def connect(self, build: Build) -> Endpoint:
        """The endpoint of a build this kind does not start (only called when `starts_server` is False)."""
        ...

    def manifest_mode(self, build: Build) -> str | None:
        """The engine mode recorded in the build manifest (None: this engine has none)."""
        ...


ENGINE_KINDS: Registry[EngineKind] = Registry("engine")


CAPABILITIES = ("starts_server", "prepares_without_engine", "teacher_forcing", "images")


def register_engine_kind(kind: EngineKind) -> None:
    """Make `kind` usable as a build's `engine:` (a later registration under the same name replaces it)."""
    unstated = [c for c in CAPABILITIES if not isinstance(getattr(kind, c, None), bool)]
    if unstated:
        raise ConfigError(
            f"engine kind {getattr(kind, 'name', kind)!r} must state {', '.join(unstated)} (True or False)"
        )
    ENGINE_KINDS.register(kind.name, kind)


def engine_kind(name: str) -> EngineKind:
    return ENGINE_KINDS.get(name)


def engine_kinds() -> list[str]:
    return ENGINE_KINDS.names()
