"""The phone's files: /sdcard (alias /storage/emulated/0) and /data/local/tmp, writable by shell and push.

Files live in the phone's state, so snapshots carry them.
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Callable

from agent_eval.virtual_device.state import PhoneState

WRITABLE_ROOTS = ("/sdcard", "/data/local/tmp")


class PhoneError(Exception):
    """A request the phone refuses, with the message Android would print."""


def normpath(path: str) -> str:
    p = posixpath.normpath("/" + path.lstrip("/")) if path else "/"
    for alias in ("/storage/emulated/0", "/storage/self/primary", "/mnt/sdcard"):
        if p == alias or p.startswith(alias + "/"):
            p = "/sdcard" + p[len(alias) :]
    return p


class Storage:
    """Files in the state that `state()` returns (a snapshot load replaces it), guarded by `lock`."""

    def __init__(self, state: Callable[[], PhoneState], lock: threading.RLock) -> None:
        self._state = state
        self.lock = lock

    def writable(self, path: str) -> bool:
        p = normpath(path)
        return any(p == root or p.startswith(root + "/") for root in WRITABLE_ROOTS)

    def read(self, path: str) -> bytes | None:
        with self.lock:
            return self._state().files.get(normpath(path))

    def write(self, path: str, data: bytes, append: bool = False) -> None:
        p = normpath(path)
        if p == "/dev/null":
            return
        with self.lock:
            if not self.writable(p):
                raise PhoneError(f"{p}: Read-only file system")
            if p in self._state().dirs:
                raise PhoneError(f"{p}: Is a directory")
            parent = posixpath.dirname(p)
            if parent not in self._state().dirs:
                raise PhoneError(f"{p}: No such file or directory")
            old = self._state().files.get(p, b"") if append else b""
            self._state().files[p] = old + data

    def make_dirs(self, path: str) -> None:
        p = normpath(path)
        with self.lock:
            if not self.writable(p):
                raise PhoneError(f"{p}: Read-only file system")
            while p not in self._state().dirs:
                self._state().dirs.add(p)
                p = posixpath.dirname(p)

    def remove(self, path: str) -> bool:
        p = normpath(path)
        with self.lock:
            if p in self._state().files:
                del self._state().files[p]
                return True
            return False

    def is_dir(self, path: str) -> bool:
        return normpath(path) in self._state().dirs

    def listdir(self, path: str) -> list[str]:
        p = normpath(path)
        with self.lock:
            names = {
                posixpath.basename(f)
                for f in (*self._state().files, *self._state().dirs)
                if posixpath.dirname(f) == p and f != p
            }
        return sorted(names)
