"""The `data:` section of an app's YAML: its database (file name, owner, tables, typed columns, default rows)
and the files it puts on shared storage. Checked on load so a typo fails at phone start, naming the field.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ColumnType = Literal["integer", "text", "real", "blob"]
Value = int | float | str | bytes | None
# Table and column names go into SQL text (values never do): only plain identifiers are allowed.
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SQL_TYPES: dict[str, str] = {"integer": "INTEGER", "text": "TEXT", "real": "REAL", "blob": "BLOB"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Column(_Strict):
    """One column: its SQLite type and the value a row gets when an insert leaves it out."""

    type: ColumnType
    default: int | float | str | None = None


def _fits(ctype: str, value: object) -> bool:
    """Whether a YAML value may be stored in a column of this type (bool is no integer here)."""
    if value is None:
        return True
    if ctype == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if ctype == "real":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, str)


class Table(_Strict):
    """A table: columns by name (a type, or a type with a default) and the rows a fresh phone holds.

    Every table also has `_id INTEGER PRIMARY KEY AUTOINCREMENT`, as Android's tables do; a default row may
    give its `_id`.
    """

    columns: dict[str, ColumnType | Column]
    rows: list[dict[str, int | float | str | None]] = []
    # A provider's table whose rows come back after `pm clear` of the provider (an account's calendar, made
    # again by the app that owns the account); the others' rows are the user's, and a clear leaves them empty.
    recreated: bool = False

    def column(self, name: str) -> Column:
        spec = self.columns[name]
        return spec if isinstance(spec, Column) else Column(type=spec)

    @model_validator(mode="after")
    def _check(self) -> Table:
        for name in self.columns:
            if not IDENTIFIER.match(name) or name == "_id":
                raise ValueError(f"column {name!r}: use a plain identifier other than _id")
        for n, row in enumerate(self.rows):
            for key, value in row.items():
                if key == "_id":
                    if not isinstance(value, int) or isinstance(value, bool):
                        raise ValueError(f"rows[{n}]._id must be an integer, got {value!r}")
                    continue
                if key not in self.columns:
                    raise ValueError(f"rows[{n}] has unknown column {key!r}; columns: {sorted(self.columns)}")
                ctype = self.column(key).type
                if not _fits(ctype, value):
                    raise ValueError(f"rows[{n}].{key} = {value!r} is not a {ctype}")
        return self


class AppData(_Strict):
    """An app's records: one SQLite database (as the real app or its provider names it) and shared files."""

    database: str | None = Field(None, description="database file name, e.g. contacts2.db")
    owner: str | None = Field(
        None, description="package whose data directory holds the database (a provider); default: the app"
    )
    device_protected: bool = Field(
        False, description="the database lives in /data/user_de/0 (direct-boot aware apps) not /data/data"
    )
    tables: dict[str, Table] = {}
    triggers: list[str] = Field(
        [], description="CREATE TRIGGER statements run after the tables, before their rows (derived tables)"
    )
    files: dict[str, str] = Field({}, description="files on /sdcard a fresh phone holds: path → text")

    @model_validator(mode="after")
    def _check(self) -> AppData:
        if self.tables and self.database is None:
            raise ValueError("`tables` need a `database` file name")
        if self.database is not None and not re.match(r"^[\w.-]+\.db$", self.database):
            raise ValueError(f"database {self.database!r}: a file name ending in .db")
        for name in self.tables:
            if not IDENTIFIER.match(name):
                raise ValueError(f"table {name!r}: use a plain identifier")
        for path in self.files:
            if not path.startswith("/sdcard/"):
                raise ValueError(f"file {path!r}: default files live under /sdcard/")
        return self

    def db_path(self, package: str) -> str | None:
        """Where Android keeps the database file, e.g. /data/data/PKG/databases/NAME."""
        if self.database is None:
            return None
        base = "/data/user_de/0" if self.device_protected else "/data/data"
        return f"{base}/{self.owner or package}/databases/{self.database}"
