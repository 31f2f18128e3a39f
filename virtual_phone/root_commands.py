"""Root's view of app databases: `sqlite3 DBFILE SQL` over the apps' in-memory databases.

An emulator image is a userdebug build: `adb root` and `su` work, and app databases are readable only as root.
"""

from __future__ import annotations

import sqlite3

from virtual_phone.appdata import AppDatabase, DataError
from virtual_phone.appdata_schema import Value
from virtual_phone.program import Caller, Output, command_table


def db_path(path: str) -> str:
    """/data/user/0/PKG is /data/data/PKG (a symlink on Android)."""
    return "/data/data/" + path[len("/data/user/0/") :] if path.startswith("/data/user/0/") else path


def find_database(sh: Caller, path: str) -> AppDatabase | None:
    return sh.phone.data.by_path(db_path(path))


def statements(sql: str) -> list[str]:
    """Splits SQL text into complete statements, as the sqlite3 shell runs them one by one."""
    out: list[str] = []
    cur = ""
    for part in sql.split(";"):
        cur += part + ";"
        if sqlite3.complete_statement(cur):
            if cur.strip(" \t\n;"):
                out.append(cur.strip())
            cur = ""
    if cur.strip(" \t\n;"):
        out.append(cur.rstrip(";").strip())
    return out


def cli_value(value: Value) -> str:
    """A value as the sqlite3 shell's list mode prints it (NULL empty, REAL as %!.15g)."""
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, float):
        text = f"{value:.15g}"
        if "e" in text:
            mantissa, exp = text.split("e")
            return (mantissa if "." in mantissa else mantissa + ".0") + "e" + exp
        return text if "." in text or "n" in text else text + ".0"
    return str(value)


def _options(args: list[str]) -> tuple[dict[str, str], list[str]]:
    opts = {"separator": "|", "header": "off"}
    rest: list[str] = []
    it = iter(args)
    for a in it:
        if a in ("-header", "-noheader"):
            opts["header"] = "on" if a == "-header" else "off"
        elif a == "-separator":
            opts["separator"] = next(it, "|")
        elif a == "-csv":
            opts["separator"] = ","
        elif a.startswith("-") and len(rest) == 0:
            continue  # -list, -batch, -bail: list mode is what we print anyway
        else:
            rest.append(a)
    return opts, rest


def _sqlite3(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    """`sqlite3 [-header] [-separator S] DBFILE [SQL...]` (SQL from stdin when none is given)."""
    opts, rest = _options(args)
    if not rest:
        io.err("Error: no database file given (this sqlite3 opens app databases only)\n")
        return 1
    path, sql_args = rest[0], rest[1:]
    db = find_database(sh, path) if sh.root else None
    if db is None:
        io.err(f'Error: unable to open database "{path}": unable to open database file\n')
        return 1
    sql = " ".join(sql_args) if sql_args else (stdin or sh.read_stdin()).decode("utf-8", "replace")
    for stmt in statements(sql):
        if stmt.startswith("."):
            word = stmt[1:].split()[0] if stmt[1:].split() else ""
            io.err(f'Error: unknown command or invalid arguments:  "{word}". Enter ".help" for help\n')
            return 1
        try:
            names, rows = db.execute(stmt)
        except DataError as e:
            phase = "stepping" if "constraint" in str(e).lower() else "in prepare"
            io.err(f"Error: {phase}, {e} ({19 if phase == 'stepping' else 1})\n")
            return 1
        sep = opts["separator"]
        if opts["header"] == "on" and names:
            io.out(sep.join(names) + "\n")
        io.out("".join(sep.join(cli_value(v) for v in row) + "\n" for row in rows))
    sh.phone.prerender_soon()
    return 0


COMMANDS = command_table(_sqlite3)
