"""Files (DocumentsUI): records that are the phone's files on /sdcard rather than rows, keyed by path: a
folder's files and the folders of /sdcard. Deleting one removes its file; Files renames and moves files.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from virtual_phone.records.app_behaviour import AppContext, DataOnly, register_behaviour
from virtual_phone.records.record_source import DataContext, Record, register_source
from virtual_phone.schema.appdata_schema import Value
from virtual_phone.schema.screen_data import RecordList
from virtual_phone.state.storage import PhoneError

SDCARD = "/sdcard"
FILES = "com.google.android.documentsui"


def _entry(ctx: DataContext, path: str) -> Record:
    data = ctx.storage.read(path)
    is_dir = ctx.storage.is_dir(path)
    count = len(ctx.storage.listdir(path)) if is_dir else 0
    return {
        "_id": path,
        "name": posixpath.basename(path),
        "path": path,
        "size": len(data or b""),
        "is_dir": int(is_dir),
        "count": count,
    }


class FolderSource:
    """The entries of a folder: the screen's record (a folder) or, without one, the list's `table` path;
    `folders_only` lists the folders of that path (Files' first screen, the Move to choices)."""

    def __init__(self, folders_only: bool) -> None:
        self.folders_only = folders_only

    def columns(self, ctx: DataContext, package: str, table: str) -> set[str]:
        return {"_id", "name", "path", "size", "is_dir", "count"}

    def rows(
        self, ctx: DataContext, package: str, spec: RecordList, parent: Mapping[str, object]
    ) -> list[Record]:
        folder = str(parent.get("path") or spec.table or SDCARD)
        out = []
        for name in ctx.storage.listdir(folder):
            path = posixpath.join(folder, name)
            if ctx.storage.is_dir(path) == self.folders_only and not name.startswith("."):
                out.append(_entry(ctx, path))
        return out

    def get(self, ctx: DataContext, package: str, table: str, key: str) -> Record | None:
        if ctx.storage.read(key) is None and not ctx.storage.is_dir(key):
            return None
        return _entry(ctx, key)

    def insert(self, ctx: DataContext, package: str, table: str, values: Mapping[str, Value]) -> str:
        path = posixpath.join(table, str(values.get("name") or "untitled"))
        ctx.storage.write(path, b"")
        return path

    def update(
        self, ctx: DataContext, package: str, table: str, key: str, values: Mapping[str, Value]
    ) -> None:
        return None

    def delete(self, ctx: DataContext, package: str, table: str, key: str) -> None:
        ctx.storage.remove(key)


def move(ctx: DataContext, path: str, target: str) -> None:
    """Moves a file to `target` (a new path), as `mv` does; an existing file there is replaced."""
    data = ctx.storage.read(path)
    if data is None or target == path:
        return
    ctx.storage.write(target, data)
    ctx.storage.remove(path)


class Files(DataOnly):
    """Rename (the typed name, in the same folder) and Move to (the chosen folder)."""

    def action(self, app: AppContext, name: str, key: str | None, text: str) -> None:
        if key is None or not text.strip():
            return
        folder = posixpath.dirname(key)
        try:
            if name == "rename":
                move(app.data, key, posixpath.join(folder, posixpath.basename(text.strip())))
            elif name == "move":
                move(app.data, key, posixpath.join(text, posixpath.basename(key)))
            else:
                super().action(app, name, key, text)
        except PhoneError:
            return  # Files shows a toast and leaves the file where it was


register_source("folders", FolderSource(folders_only=True))
register_source("files", FolderSource(folders_only=False))
register_behaviour(FILES, Files())
