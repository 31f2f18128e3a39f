"""What an app does that its YAML cannot say: a named menu action (Files: rename, move) and a change to the
values Save writes (Calendar: the end time). One small module per app registers it here; how its records are
read and written is its record source (record_source.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from virtual_phone.records.record_source import DataContext
from virtual_phone.schema.appdata_schema import Value


@dataclass(frozen=True)
class AppContext:
    """What an app's behaviour may touch: its package and the phone's databases and files."""

    package: str
    data: DataContext


class AppBehaviour(Protocol):
    def action(self, app: AppContext, name: str, key: str | None, text: str) -> None:
        """Runs the menu action `name` on record `key` (`text`: what the user typed or chose, if asked)."""
        ...

    def saving(self, app: AppContext, table: str, values: dict[str, Value], key: str | None) -> None:
        """Adjusts the values Save is about to write (in place); `key` None: a new record."""
        ...


class DataOnly:
    """An app with no behaviour of its own."""

    def action(self, app: AppContext, name: str, key: str | None, text: str) -> None:
        raise LookupError(f"{app.package} has no action {name!r} (register an AppBehaviour for it)")

    def saving(self, app: AppContext, table: str, values: dict[str, Value], key: str | None) -> None:
        return None


BEHAVIOURS: dict[str, AppBehaviour] = {}


def register_behaviour(package: str, behaviour: AppBehaviour) -> None:
    BEHAVIOURS[package] = behaviour


def behaviour(package: str) -> AppBehaviour:
    return BEHAVIOURS.get(package, DataOnly())
