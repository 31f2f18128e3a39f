"""Markor: a note is a Markdown or text file in its notebook folder (the list's `table`); its title is the
file name without the suffix, its body the text. A new note is saved as TITLE.md; a new title renames it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping

from virtual_phone.app_modules.files import move
from virtual_phone.records.record_source import DataContext, Record, register_source
from virtual_phone.schema.appdata_schema import Value
from virtual_phone.schema.screen_data import RecordList

NOTE_SUFFIXES = (".md", ".txt")


def note_file(title: str) -> str:
    """A note's file name for its title: Markor names a new note after it, with `.md`."""
    stem = re.sub(r"[\\/:*?\"<>|]", "_", title.strip()) or "untitled"
    return stem if stem.endswith(NOTE_SUFFIXES) else stem + ".md"


class NotesSource:
    """Markor's notes: the text files of its folder (the list's `table`), with title (the file name without
    its suffix) and body (the text)."""

    def columns(self, ctx: DataContext, package: str, table: str) -> set[str]:
        return {"_id", "name", "title", "body"}

    def _note(self, ctx: DataContext, path: str) -> Record:
        name = posixpath.basename(path)
        body = (ctx.storage.read(path) or b"").decode("utf-8", "replace")
        return {"_id": path, "name": name, "title": posixpath.splitext(name)[0], "body": body}

    def rows(
        self, ctx: DataContext, package: str, spec: RecordList, parent: Mapping[str, object]
    ) -> list[Record]:
        names = [n for n in ctx.storage.listdir(spec.table) if n.endswith(NOTE_SUFFIXES)]
        return [self._note(ctx, posixpath.join(spec.table, n)) for n in names]

    def get(self, ctx: DataContext, package: str, table: str, key: str) -> Record | None:
        return self._note(ctx, key) if ctx.storage.read(key) is not None else None

    def insert(self, ctx: DataContext, package: str, table: str, values: Mapping[str, Value]) -> str:
        ctx.storage.make_dirs(table)
        path = posixpath.join(table, note_file(str(values.get("title") or "")))
        ctx.storage.write(path, str(values.get("body") or "").encode())
        return path

    def update(
        self, ctx: DataContext, package: str, table: str, key: str, values: Mapping[str, Value]
    ) -> None:
        path = key
        title = str(values.get("title") or "")
        if title and title != posixpath.splitext(posixpath.basename(key))[0]:
            path = posixpath.join(posixpath.dirname(key), note_file(title))
            move(ctx, key, path)
        if "body" in values:
            ctx.storage.write(path, str(values["body"] or "").encode())

    def delete(self, ctx: DataContext, package: str, table: str, key: str) -> None:
        ctx.storage.remove(key)


register_source("notes", NotesSource())
