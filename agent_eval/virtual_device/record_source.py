"""Where a list screen's records come from: the app's database table (SQL built from the screen's YAML), or a
source an app module registers (Files lists a folder). A Protocol with a small registry, by name.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from agent_eval.virtual_device.screen_data import RecordList
from agent_eval.virtual_device.state import PhoneState

Record = dict[str, object]
KEY = "_id"  # every table's record key, as Android's providers name it


@dataclass(frozen=True)
class DataContext:
    """What a source reads: an app's database (None when the app has none) and the phone's state (files)."""

    database: Callable[[str], sqlite3.Connection | None]
    state: PhoneState


class RecordSource(Protocol):
    """Records of a list screen, each with a `_id` (a string key the screens pass around)."""

    def columns(self, ctx: DataContext, package: str, spec: RecordList) -> set[str] | None:
        """The columns its records have, for checking templates at phone start (None: cannot tell)."""
        ...

    def rows(self, ctx: DataContext, package: str, spec: RecordList, parent: Mapping[str, object]) -> list[Record]:
        """The records in the list's order; `parent` is the record the screen was opened for ({} if none)."""
        ...


def _connection(ctx: DataContext, package: str) -> sqlite3.Connection:
    conn = ctx.database(package)
    if conn is None:
        raise LookupError(f"{package} has no database (declare its tables under `data:`)")
    return conn


def table_columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in conn.execute(f'PRAGMA table_info("{table}")')}


def list_sql(spec: RecordList) -> str:
    """The SELECT of a table-bound list: filtered, one row per `group` value (the first by sort), sorted."""
    where = f" WHERE {spec.where}" if spec.where else ""
    if spec.group:
        inner = (
            f'SELECT *, ROW_NUMBER() OVER (PARTITION BY "{spec.group}" ORDER BY {spec.sort}) AS _rank '
            f'FROM "{spec.table}"{where}'
        )
        return f"SELECT * FROM ({inner}) WHERE _rank = 1 ORDER BY {spec.sort}"
    return f'SELECT * FROM "{spec.table}"{where} ORDER BY {spec.sort}'


def query(conn: sqlite3.Connection, sql: str, params: Mapping[str, object]) -> list[Record]:
    cur = conn.execute(sql, dict(params))
    names = [d[0] for d in cur.description]
    return [{n: (str(v) if n == KEY else v) for n, v in zip(names, row, strict=True)} for row in cur]


class TableSource:
    """The rows of the app's table named by the list's `table`."""

    def columns(self, ctx: DataContext, package: str, spec: RecordList) -> set[str] | None:
        return table_columns(_connection(ctx, package), spec.table)

    def rows(self, ctx: DataContext, package: str, spec: RecordList, parent: Mapping[str, object]) -> list[Record]:
        return query(_connection(ctx, package), list_sql(spec), parent)


def record(ctx: DataContext, package: str, table: str, key: str | None) -> Record | None:
    """One record of a table by its `_id`, or None when there is no such record (deleted meanwhile)."""
    if key is None:
        return None
    conn = ctx.database(package)
    if conn is None:
        return None
    rows = query(conn, f'SELECT * FROM "{table}" WHERE "{KEY}" = :key', {"key": key})
    return rows[0] if rows else None


SOURCES: dict[str, RecordSource] = {"table": TableSource()}


def register_source(name: str, source: RecordSource) -> None:
    SOURCES[name] = source
