"""Each app's records: one SQLite database file per app with data, where Android keeps it in the phone's tree
(/data/data/PKG/databases/NAME), built from its YAML `data:` section.

Reads and writes hold the phone's lock; snapshots carry every database as bytes (`Connection.serialize`). The
shell's `sqlite3` opens the same files; `check_outside_writes` notices what it changed.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from virtual_phone.schema.appdata_schema import IDENTIFIER, SQL_TYPES, AppData, Table, Value
from virtual_phone.state.phone_clock import Clock

Row = dict[str, Value]


class DataError(Exception):
    """A request the app's database refuses (unknown table or column, bad SQL), with SQLite's reason."""


def _create_sql(name: str, table: Table) -> str:
    cols = ["_id INTEGER PRIMARY KEY AUTOINCREMENT"]
    for cname in table.columns:
        col = table.column(cname)
        default = "" if col.default is None else f" DEFAULT {_literal(col.default)}"
        cols.append(f"{cname} {SQL_TYPES[col.type]}{default}")
    return f"CREATE TABLE {name} ({', '.join(cols)})"


def _no_files(action: int, *_: str | None) -> int:
    """SQLite authorizer: no ATTACH (nor VACUUM INTO, which attaches): SQL from the shell never touches the
    host's files; everything else is allowed."""
    return (
        sqlite3.SQLITE_DENY if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH) else sqlite3.SQLITE_OK
    )


def _connect(file: Path | None = None, data: bytes | None = None) -> sqlite3.Connection:
    """The database in `file` (in memory without one, holding `data`, a SQLite file's bytes, if given),
    refusing ATTACH."""
    conn = sqlite3.connect(str(file or ":memory:"), check_same_thread=False, isolation_level=None)
    if data is not None:
        conn.deserialize(data)  # before the authorizer: deserializing is an attach inside SQLite
    if file is not None:
        conn.execute("PRAGMA synchronous = OFF")  # the phone's files need not survive a host crash
    conn.set_authorizer(_no_files)
    return conn


def _literal(value: int | float | str) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


class AppDatabase:
    """One app's database. Every method holds `lock`; `on_change` runs after each write (re-render)."""

    def __init__(
        self,
        package: str,
        spec: AppData,
        lock: threading.RLock,
        on_change: Callable[[], None],
        file: Path | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.package = package
        self.clock = clock or Clock()  # the phone's: the time records made now get
        self.spec = spec
        self.lock = lock
        self._on_change = on_change
        self.file = file  # the database file on the host (None: in memory only)
        self.version = 0  # bumped on every write, so a screen knows to re-read
        self.conn = self._fresh()
        self._outside_version = self._data_version()

    # ---- lifecycle ------------------------------------------------------------------------------------
    def _fresh(self, cleared: bool = False) -> sqlite3.Connection:
        """A new database with the default rows (`cleared`: a provider's after `pm clear`, holding only its
        `recreated` tables' rows)."""
        if self.file is not None:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            for leftover in (self.file, self.file.with_name(self.file.name + "-journal")):
                leftover.unlink(missing_ok=True)
        conn = _connect(self.file)
        if self.file is not None and os.geteuid() == 0:  # a new file is the app's, as its folder is
            folder = self.file.parent.stat()
            os.chown(self.file, folder.st_uid, folder.st_gid)
            self.file.chmod(0o660)
        for name, table in self.spec.tables.items():
            conn.execute(_create_sql(name, table))
        for trigger in self.spec.triggers:
            conn.execute(trigger)
        for name, table in self.spec.tables.items():
            for row in table.rows if table.recreated or not cleared else []:
                cols = list(row)
                marks = ", ".join("?" for _ in cols)
                conn.execute(
                    f"INSERT INTO {name} ({', '.join(cols)}) VALUES ({marks})", [row[c] for c in cols]
                )
        return conn

    @property
    def path(self) -> str | None:
        """The database file's path on a real device (/data/data/OWNER/databases/NAME)."""
        return self.spec.db_path(self.package)

    def _changed(self) -> None:
        self.version += 1
        self._on_change()

    def clear(self) -> None:
        """What `pm clear` does: the records are gone. An app re-creates its defaults on next start; a
        provider's database stays empty (the user's records were all it held)."""
        with self.lock:
            self.conn.close()
            self.conn = self._fresh(cleared=self.spec.owner is not None)
            self._outside_version = self._data_version()
            self._changed()

    def snapshot(self) -> bytes:
        """The database as the bytes of a SQLite file (what `adb pull` of the .db file would get)."""
        with self.lock:
            return self.conn.serialize()

    def restore(self, data: bytes) -> None:
        """Replaces the whole database with a snapshot's bytes (or a pushed .db file)."""
        with self.lock:
            if self.conn.serialize() == data:
                return  # unchanged since the snapshot (a reset after a task that left this app alone)
            try:
                saved = _connect(data=data)
                saved.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except sqlite3.DatabaseError as e:
                raise DataError(f"not a SQLite database: {e}") from e
            if self.file is None:
                self.conn.close()
                self.conn = saved
            else:
                saved.backup(self.conn)  # page by page into the file: the shell's sqlite3 sees it too
                saved.close()
                self._outside_version = self._data_version()
            self._changed()

    def _data_version(self) -> int:
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    def check_outside_writes(self) -> bool:
        """True (and screens re-read) if another program (the shell's sqlite3) changed the file since the
        last look; SQLite's data_version moves only for other connections' commits."""
        with self.lock:
            version = self._data_version()
            if version == self._outside_version:
                return False
            self._outside_version = version
            self._changed()
            return True

    # ---- schema -------------------------------------------------------------------------------------
    def tables(self) -> list[str]:
        with self.lock:
            rows = self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            ).fetchall()
        return [str(r[0]) for r in rows]

    def columns(self, table: str) -> list[str]:
        """The table's columns in order, `_id` first; DataError for an unknown table."""
        self._check_name(table)
        with self.lock:
            cols = [str(r[1]) for r in self.conn.execute(f"PRAGMA table_info({table})").fetchall()]
        if not cols:
            raise DataError(f"no such table: {table}")
        return cols

    def _check_name(self, name: str) -> None:
        if not IDENTIFIER.match(name):
            raise DataError(f"not a table or column name: {name!r}")

    def _check_columns(self, table: str, names: Sequence[str]) -> None:
        known = set(self.columns(table))
        bad = [n for n in names if n not in known]
        if bad:
            raise DataError(f"table {table} has no column named {bad[0]}")

    # ---- records ------------------------------------------------------------------------------------
    def rows(
        self,
        table: str,
        where: str | None = None,
        args: Sequence[Value] = (),
        order_by: str | None = None,
        limit: int | None = None,
    ) -> list[Row]:
        """Rows as dicts (column → value). `where`/`order_by` are SQL (`"enabled = ?"`, `"hour, minutes"`)
        with `?` parameters in `args`: values never go into the SQL text."""
        self.columns(table)
        sql = f"SELECT * FROM {table}"
        if where:
            sql += f" WHERE {where}"
        if order_by:
            sql += f" ORDER BY {order_by}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        names, values = self.query(sql, args)
        return [dict(zip(names, row, strict=True)) for row in values]

    def get(self, table: str, row_id: int) -> Row | None:
        found = self.rows(table, "_id = ?", [row_id])
        return found[0] if found else None

    def count(self, table: str, where: str | None = None, args: Sequence[Value] = ()) -> int:
        self.columns(table)
        sql = f"SELECT count(*) FROM {table}" + (f" WHERE {where}" if where else "")
        return int(self.query(sql, args)[1][0][0])  # type: ignore[arg-type]

    def insert(self, table: str, values: Mapping[str, Value]) -> int:
        """Adds a row; returns its new `_id`. Columns left out get their defaults."""
        cols = list(values)
        self._check_columns(table, cols)
        sql = (
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"
            if cols
            else f"INSERT INTO {table} DEFAULT VALUES"
        )
        with self.lock:
            cur = self._execute(sql, [values[c] for c in cols])
            self._changed()
            return int(cur.lastrowid or 0)

    def update(
        self, table: str, values: Mapping[str, Value], where: str | None = None, args: Sequence[Value] = ()
    ) -> int:
        """Sets `values` on the rows `where` selects (all rows without one); returns how many changed."""
        cols = list(values)
        self._check_columns(table, cols)
        if not cols:
            return 0
        sets = ", ".join(f"{c} = ?" for c in cols)
        sql = f"UPDATE {table} SET {sets}" + (f" WHERE {where}" if where else "")
        with self.lock:
            cur = self._execute(sql, [*[values[c] for c in cols], *args])
            self._changed()
            return int(cur.rowcount)

    def update_row(self, table: str, row_id: int, values: Mapping[str, Value]) -> bool:
        return self.update(table, values, "_id = ?", [row_id]) > 0

    def delete(self, table: str, where: str | None = None, args: Sequence[Value] = ()) -> int:
        """Deletes the rows `where` selects (all rows without one); returns how many went."""
        self.columns(table)
        sql = f"DELETE FROM {table}" + (f" WHERE {where}" if where else "")
        with self.lock:
            cur = self._execute(sql, args)
            self._changed()
            return int(cur.rowcount)

    def delete_row(self, table: str, row_id: int) -> bool:
        return self.delete(table, "_id = ?", [row_id]) > 0

    # ---- raw SQL (providers, the sqlite3 command) ---------------------------------------------------
    def query(self, sql: str, args: Sequence[Value] = ()) -> tuple[list[str], list[tuple[Value, ...]]]:
        """Runs one SELECT; returns column names and rows. DataError carries SQLite's message."""
        with self.lock:
            cur = self._execute(sql, args)
            names = [d[0] for d in cur.description or ()]
            return names, [tuple(r) for r in cur.fetchall()]

    def execute(self, sql: str, args: Sequence[Value] = ()) -> tuple[list[str], list[tuple[Value, ...]]]:
        """Runs any one statement (a write bumps the version); returns column names and rows."""
        with self.lock:
            before = self.conn.total_changes
            cur = self._execute(sql, args)
            names = [d[0] for d in cur.description or ()]
            rows = [tuple(r) for r in cur.fetchall()]
            if self.conn.total_changes != before or not sql.lstrip().upper().startswith("SELECT"):
                self._changed()
            return names, rows

    def _execute(self, sql: str, args: Sequence[Value]) -> sqlite3.Cursor:
        try:
            return self.conn.execute(sql, list(args))
        except (sqlite3.Error, sqlite3.Warning) as e:
            raise DataError(str(e)) from e


class AppStore:
    """Every app's database, by app package (the owner package, e.g. a provider's, finds it too).

    The object stays the same for the phone's lifetime: a snapshot load restores the databases in place.
    """

    def __init__(
        self,
        specs: Mapping[str, AppData],
        lock: threading.RLock,
        on_change: Callable[[], None],
        host_path: Callable[[str], Path | None] = lambda _path: None,
        clock: Clock | None = None,
    ) -> None:
        self.lock = lock
        self.clock = clock or Clock()
        self._on_change = on_change
        self.version = 0  # bumped on a write to any database
        self.databases: dict[str, AppDatabase] = {}
        for pkg, spec in specs.items():
            path = spec.db_path(pkg)
            if path is not None:
                self.databases[pkg] = AppDatabase(pkg, spec, lock, self._changed, host_path(path), self.clock)
        self._owners = {spec.owner: pkg for pkg, spec in specs.items() if spec.owner is not None}

    def _changed(self) -> None:
        self.version += 1
        self._on_change()

    def db(self, package: str) -> AppDatabase:
        """The database of an app (or of the provider package that owns it); DataError if it has none."""
        found = self.find(package)
        if found is None:
            raise DataError(f"package {package} has no database")
        return found

    def find(self, package: str) -> AppDatabase | None:
        return self.databases.get(package) or self.databases.get(self._owners.get(package, ""))

    def by_path(self, path: str) -> AppDatabase | None:
        """The database whose file is at `path` on a real device (for adb pull and push as root)."""
        if path.startswith("/data/user/0/"):  # a symlink to /data/data on Android
            path = "/data/data/" + path[len("/data/user/0/") :]
        return next((d for d in self.databases.values() if d.path == path), None)

    def clear(self, package: str) -> bool:
        """`pm clear PKG` for the data of PKG (an app, or the provider that owns the database)."""
        with self.lock:
            target = self.databases.get(package) or next(
                (d for d in self.databases.values() if d.spec.owner == package), None
            )
            if target is None or (target.spec.owner is not None and target.spec.owner != package):
                return False
            target.clear()
            return True

    def check_outside_writes(self) -> None:
        for db in self.databases.values():
            db.check_outside_writes()

    def snapshot(self) -> dict[str, bytes]:
        with self.lock:
            return {pkg: db.snapshot() for pkg, db in self.databases.items()}

    def restore(self, saved: Mapping[str, bytes]) -> None:
        """Every database back to the snapshot (one missing from it goes back to its defaults)."""
        with self.lock:
            for pkg, db in self.databases.items():
                if pkg in saved:
                    db.restore(saved[pkg])
                else:
                    db.clear()
