"""Where a screen's records come from and go to: a table of the app's database (SQL built from the screen's
YAML), or a source an app module registers (Contacts' two tables, a folder of files). A Protocol with a
small registry, by name; every record has a string key `_id`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from virtual_phone.schema.appdata_schema import Value
from virtual_phone.schema.screen_data import RecordList
from virtual_phone.state.appdata import AppDatabase
from virtual_phone.state.phone_clock import Clock
from virtual_phone.state.storage import Storage

Record = dict[str, object]
KEY = "_id"  # every record's key, as Android's providers name it


@dataclass(frozen=True)
class DataContext:
    """What sources read and write: an app's database by package (None: it has none) and the phone's files.
    Callers hold the phone's lock."""

    database: Callable[[str], AppDatabase | None]
    storage: Storage
    clock: Clock  # the phone's: the time new records get

    def db(self, package: str) -> AppDatabase:
        found = self.database(package)
        if found is None:
            raise LookupError(f"{package} has no database (declare its tables under `data:`)")
        return found


class RecordSource(Protocol):
    """Records by table name (for a module's source, a name it understands)."""

    def columns(self, ctx: DataContext, package: str, table: str) -> set[str]:
        """The columns its records have, to check templates and fields at phone start."""
        ...

    def rows(
        self, ctx: DataContext, package: str, spec: RecordList, parent: Mapping[str, object]
    ) -> list[Record]:
        """A list's records in order; `parent` is the record the screen was opened for ({} if none)."""
        ...

    def get(self, ctx: DataContext, package: str, table: str, key: str) -> Record | None: ...

    def insert(self, ctx: DataContext, package: str, table: str, values: Mapping[str, Value]) -> str: ...

    def update(
        self, ctx: DataContext, package: str, table: str, key: str, values: Mapping[str, Value]
    ) -> None: ...

    def delete(self, ctx: DataContext, package: str, table: str, key: str) -> None: ...


def list_sql(spec: RecordList) -> str:
    """The SELECT of a table-bound list: filtered, one row per `group` value (the first by sort), sorted."""
    where = f" WHERE {spec.where}" if spec.where else ""
    if spec.group:
        inner = (
            f"SELECT *, ROW_NUMBER() OVER (PARTITION BY {spec.group} ORDER BY {spec.sort}) AS _rank "
            f"FROM {spec.table}{where}"
        )
        return f"SELECT * FROM ({inner}) WHERE _rank = 1 ORDER BY {spec.sort}"
    return f"SELECT * FROM {spec.table}{where} ORDER BY {spec.sort}"


def sql_rows(db: AppDatabase, sql: str, params: Mapping[str, object]) -> list[Record]:
    """Rows of a SELECT with `:name` parameters (the reads screens make; the caller holds the lock)."""
    # Every `:name` gets the parent record's value, NULL when the screen was opened without one.
    cur = db.conn.execute(sql, {name: params.get(name) for name in re.findall(r":([A-Za-z_]\w*)", sql)})
    names = [d[0] for d in cur.description]
    return [{n: (str(v) if n == KEY else v) for n, v in zip(names, row, strict=True)} for row in cur]


class TableSource:
    """The rows of one table of the app's database, keyed by `_id`."""

    def columns(self, ctx: DataContext, package: str, table: str) -> set[str]:
        return set(ctx.db(package).columns(table))

    def rows(
        self, ctx: DataContext, package: str, spec: RecordList, parent: Mapping[str, object]
    ) -> list[Record]:
        return sql_rows(ctx.db(package), list_sql(spec), parent)

    def get(self, ctx: DataContext, package: str, table: str, key: str) -> Record | None:
        db = ctx.database(package)
        if db is None or not key.isdigit():
            return None
        rows = sql_rows(db, f"SELECT * FROM {table} WHERE {KEY} = :key", {"key": int(key)})
        return rows[0] if rows else None

    def insert(self, ctx: DataContext, package: str, table: str, values: Mapping[str, Value]) -> str:
        return str(ctx.db(package).insert(table, values))

    def update(
        self, ctx: DataContext, package: str, table: str, key: str, values: Mapping[str, Value]
    ) -> None:
        ctx.db(package).update_row(table, int(key), values)

    def delete(self, ctx: DataContext, package: str, table: str, key: str) -> None:
        ctx.db(package).delete_row(table, int(key))


SOURCES: dict[str, RecordSource] = {"table": TableSource()}


def register_source(name: str, source: RecordSource) -> None:
    SOURCES[name] = source


def source(name: str) -> RecordSource:
    return SOURCES[name]


def find_record(
    ctx: DataContext, package: str, source_name: str, table: str, key: str | None
) -> Record | None:
    """One record by key, or None (no key, or deleted meanwhile)."""
    return None if key is None else SOURCES[source_name].get(ctx, package, table, key)
