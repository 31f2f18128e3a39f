"""What an app does that its YAML cannot say: a named menu action (Files: rename, move), a change to the values
Save writes (Calendar: the end time), or how a record is deleted. One small module per app registers it here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from agent_eval.virtual_device.record_source import DataContext
from agent_eval.virtual_device.state import PhoneState

Value = int | float | str | bytes | None


class Database(Protocol):
    """The writes a screen makes to its app's database (appdata.AppDatabase)."""

    def insert(self, table: str, values: Mapping[str, Value]) -> int: ...

    def update_row(self, table: str, row_id: int, values: Mapping[str, Value]) -> bool: ...

    def delete_row(self, table: str, row_id: int) -> bool: ...


@dataclass(frozen=True)
class AppContext:
    """What an app's behaviour may touch: its database (None if it has none), the reads, the phone's state."""

    package: str
    database: Database | None
    reads: DataContext
    state: PhoneState


class AppBehaviour(Protocol):
    def action(self, app: AppContext, name: str, key: str | None, text: str) -> None:
        """Runs the menu action `name` on record `key` (`text`: what the user typed, if it asked)."""
        ...

    def saving(self, app: AppContext, table: str, values: dict[str, Value], key: str | None) -> None:
        """Adjusts the values Save is about to write (in place)."""
        ...

    def delete(self, app: AppContext, table: str, key: str) -> None:
        """Deletes a record."""
        ...


class DataOnly:
    """An app with no behaviour of its own: records are rows of its tables."""

    def action(self, app: AppContext, name: str, key: str | None, text: str) -> None:
        raise LookupError(f"{app.package} has no action {name!r} (register an AppBehaviour for it)")

    def saving(self, app: AppContext, table: str, values: dict[str, Value], key: str | None) -> None:
        return None

    def delete(self, app: AppContext, table: str, key: str) -> None:
        if app.database is not None:
            app.database.delete_row(table, int(key))


BEHAVIOURS: dict[str, AppBehaviour] = {}


def register_behaviour(package: str, behaviour: AppBehaviour) -> None:
    BEHAVIOURS[package] = behaviour


def behaviour(package: str) -> AppBehaviour:
    return BEHAVIOURS.get(package, DataOnly())
