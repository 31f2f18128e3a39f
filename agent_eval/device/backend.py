"""The device plug point: what an episode needs of a device, and a backend that hands out devices for a run.

The adb backend (`device/adb_backend.py`) is one; another way of getting phones registers its own by name.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from agent_eval.action import Action
from agent_eval.device.driver import ShellResult
from agent_eval.registry import Registry
from agent_eval.screen.observation import Observation

Say = Callable[[str], None]


class EpisodeDevice(Protocol):
    """What the episode loop, the task start and the predicates use of a device (the adb `Device` is one)."""

    serial: str

    def observe(self) -> Observation: ...

    def act(self, action: Action, observation: Observation) -> None: ...

    def reset(self, snapshot: str | None = "default_boot") -> None: ...

    def shell(self, cmd: str, timeout_s: float = 10, *, idempotent: bool = False) -> ShellResult: ...

    def setting(self, namespace: str, key: str) -> str | None: ...

    def focused_activity(self) -> str: ...

    def settled_ui(self) -> str: ...

    def open_app(self, app: str) -> str: ...

    def start_activity(self, component: str) -> None: ...

    def start_intent(self, action: str) -> None: ...

    def wait_until_online(self, timeout_s: float = 60.0) -> None: ...


@dataclass(frozen=True)
class DeviceRequest:
    """Which devices a run asks for: named ones, else `count` started here, else what the backend picks."""

    serials: tuple[str, ...] = ()
    count: int = 0  # > 0: start this many phones at phone_port (a grid); 0: one connected, else one started
    phone_port: int = 5554
    started_only: bool = False  # never use a connected device, always start one (validate --virtual)


class DeviceBackend(Protocol):
    """A way of getting devices: a context that yields them and releases (or stops) them on exit."""

    name: str

    def devices(self, request: DeviceRequest, say: Say) -> AbstractContextManager[list[EpisodeDevice]]: ...


DEFAULT_DEVICE_BACKEND = "adb"
DEVICE_BACKENDS: Registry[DeviceBackend] = Registry("device backend")


def register_device_backend(backend: DeviceBackend) -> None:
    """Make `backend` choosable by its name (a later registration under the same name replaces it)."""
    DEVICE_BACKENDS.register(backend.name, backend)


def device_backend(name: str = DEFAULT_DEVICE_BACKEND) -> DeviceBackend:
    return DEVICE_BACKENDS.get(name)
