"""Goal predicates that read an app's data as a real Android 14 device answers over adb: `content_query` (a
content provider), `file` (a file under /sdcard), `sqlite` (an app database without a provider)."""

from __future__ import annotations

import re
import shlex
from typing import ClassVar

from pydantic import Field, field_validator, model_validator

from agent_eval.errors import TaskError
from agent_eval.task.goal_kinds import _as_text, _check_regex, _text_matches
from agent_eval.task.registry import GoalPredicate, Probe, register_predicate
from agent_eval.task.strict import Strict

_COLUMN = r"[A-Za-z_][A-Za-z0-9_]*"
_ROW = re.compile(r"^Row: \d+ (.*)$")
# A row's `col=value` pairs are joined by ", "; a value may hold ", " too, so split only before `col=`.
_PAIR_SPLIT = re.compile(rf", (?={_COLUMN}=)")
_PROVIDER_ERRORS = ("Error while accessing provider", "[ERROR]")  # `content` exits 0 even then


def parse_content_rows(output: str) -> list[dict[str, str]]:
    """`content query` output as rows (`Row: 0 a=1, b=x` lines; `No result found.` is none); TaskError when
    the provider reported an error (Android's `content` exits 0 on errors, so the text is what says so)."""
    text = output.strip()
    if any(marker in text for marker in _PROVIDER_ERRORS):
        raise TaskError(f"the content provider refused the query: {text.splitlines()[0]}")
    if not text or text == "No result found.":
        return []
    rows: list[dict[str, str]] = []
    for line in text.splitlines():
        match = _ROW.match(line)
        if match is None:
            if rows:  # a value with a newline in it continues the previous row's last value
                last = list(rows[-1])[-1]
                rows[-1][last] += "\n" + line
                continue
            raise TaskError(f"not `content query` output: {line!r}")
        pairs = _PAIR_SPLIT.split(match.group(1)) if match.group(1) else []
        rows.append(dict(pair.partition("=")[::2] for pair in pairs))
    return rows


def _exactly_one(check: Strict, names: tuple[str, ...]) -> Strict:
    """`check` when exactly one of the expectations `names` is given; else ValueError naming them."""
    if sum(getattr(check, name) is not None for name in names) != 1:
        raise ValueError(f"give exactly one of: {', '.join(names)}")
    return check


class ContentQueryCheck(Strict):
    """Rows of `content query --uri URI [--projection a:b] [--where W]`: some exist, none exist, a count, or a
    row whose `field` equals (or matches) a value."""

    uri: str = Field(pattern=r"^content://[\w.\-]+(/[\w.\-]*)*$", description="e.g. content://sms/sent")
    projection: list[str] | None = Field(None, description="Columns asked for (Android's --projection a:b).")
    where: str | None = Field(None, description="A SQL selection, e.g. \"address='+15550100'\".")
    exists: bool | None = Field(None, description="true: some row matches; false: none does.")
    count: int | None = Field(None, ge=0, description="Exactly this many rows.")
    field: str | None = Field(None, pattern=rf"^{_COLUMN}$", description="With equals/matches: some row's.")
    equals: str | None = None
    matches: str | None = None

    _text = field_validator("equals", mode="before")(_as_text)
    _regex = field_validator("matches")(_check_regex)

    @field_validator("projection")
    @classmethod
    def _columns(cls, value: list[str] | None) -> list[str] | None:
        for column in value or []:
            if not re.fullmatch(_COLUMN, column):
                raise ValueError(f"{column!r} is not a column name")
        return value

    @model_validator(mode="after")
    def _one_expectation(self) -> ContentQueryCheck:
        given = [self.exists is not None, self.count is not None, self.field is not None]
        if sum(given) != 1:
            raise ValueError("give exactly one of: exists, count, or field with equals/matches")
        if (self.field is not None) != (self.equals is not None or self.matches is not None):
            raise ValueError("'field' goes with 'equals' or 'matches' (and they with it)")
        if self.equals is not None and self.matches is not None:
            raise ValueError("give 'equals' or 'matches', not both")
        return self

    def command(self) -> str:
        words = ["content", "query", "--uri", self.uri]
        if self.projection:
            words += ["--projection", ":".join(self.projection)]
        if self.where is not None:
            words += ["--where", self.where]
        return shlex.join(words)


class ContentQueryPredicate(GoalPredicate):
    kind: ClassVar[str] = "content_query"
    content_query: ContentQueryCheck

    def holds(self, probe: Probe) -> bool:
        c = self.content_query
        rows = parse_content_rows(probe.device.shell(c.command(), idempotent=True).output)
        if c.exists is not None:
            return bool(rows) is c.exists
        if c.count is not None:
            return len(rows) == c.count
        assert c.field is not None
        return any(c.field in r and _text_matches(r[c.field], c.equals, c.matches) for r in rows)


class FileCheck(Strict):
    """A file on the device: it exists, it is absent, or its text contains (or equals) something."""

    path: str = Field(
        pattern=r"^/(sdcard|storage|data/local/tmp)/\S", description="e.g. /sdcard/Download/a.txt"
    )
    exists: bool | None = Field(None, description="true: the path exists; false: it does not.")
    contains: str | None = Field(None, description="The file's text contains this.")
    equals: str | None = Field(None, description="The file's text, stripped, is exactly this.")

    _text = field_validator("contains", "equals", mode="before")(_as_text)

    _one = model_validator(mode="after")(lambda self: _exactly_one(self, ("exists", "contains", "equals")))


class FilePredicate(GoalPredicate):
    kind: ClassVar[str] = "file"
    file: FileCheck

    def holds(self, probe: Probe) -> bool:
        f, path = self.file, shlex.quote(self.file.path)
        if f.exists is not None:
            found = probe.device.shell(f"ls -d {path}", idempotent=True).exit_code == 0
            return bool(found == f.exists)
        result = probe.device.shell(f"cat {path}", idempotent=True)
        if result.exit_code != 0:
            return False  # no such file: it holds no text
        if f.contains is not None:
            return bool(f.contains in result.output)
        return bool(result.output.strip() == f.equals)


class SqliteCheck(Strict):
    """`sqlite3 DATABASE "QUERY"` as root (`su 0`), for app data no provider serves (alarms, notes): its
    output (one `a|b` line per row), stripped, equals or matches a text, or has this many rows."""

    database: str = Field(pattern=r"^/data/(data|user/0|user_de/0)/[\w.]+/databases/[\w.\-]+$")
    query: str = Field(min_length=1, description="One SQL statement, e.g. SELECT hour, minutes FROM ...")
    equals: str | None = None
    matches: str | None = None
    rows: int | None = Field(None, ge=0, description="Exactly this many result rows.")

    _text = field_validator("equals", mode="before")(_as_text)
    _regex = field_validator("matches")(_check_regex)

    _one = model_validator(mode="after")(lambda self: _exactly_one(self, ("equals", "matches", "rows")))


class SqlitePredicate(GoalPredicate):
    kind: ClassVar[str] = "sqlite"
    sqlite: SqliteCheck

    def holds(self, probe: Probe) -> bool:
        s = self.sqlite
        command = shlex.join(["su", "0", "sqlite3", s.database, s.query])
        result = probe.device.shell(command, idempotent=True)
        output = result.output.strip()
        if result.exit_code != 0 or output.startswith(("Error:", "Parse error", "Runtime error")):
            raise TaskError(f"sqlite3 {s.database}: {output.splitlines()[0] if output else 'failed'}")
        if s.rows is not None:
            return len(output.splitlines()) == s.rows
        return _text_matches(output, s.equals, s.matches)


DATA_CHECKS = (ContentQueryCheck, FileCheck, SqliteCheck)
for _kind in (ContentQueryPredicate, FilePredicate, SqlitePredicate):
    register_predicate(_kind)
