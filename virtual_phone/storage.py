"""The phone's files: /sdcard (alias /storage/emulated/0) and /data/local/tmp, writable by shell and push.

Files live in the phone's state, so snapshots carry them.
"""

from __future__ import annotations

import posixpath
import threading
from collections.abc import Callable

from virtual_phone.state import PhoneState

WRITABLE_ROOTS = ("/sdcard", "/data/local/tmp")
# Files right in these folders are no app's records (the Files app lists the folders of /sdcard): tools write
# their UI dumps there at every observation, which must not re-render the screen.
QUIET_DIRS = frozenset(WRITABLE_ROOTS)


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

    def __init__(
        self,
        state: Callable[[], PhoneState],
        lock: threading.RLock,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self._state = state
        self.lock = lock
        # Called when a folder, or a file outside QUIET_DIRS, is written, appears, goes or moves: a screen
        # that lists files or shows a note must re-render.
        self._on_change = on_change or (lambda: None)

    def _changed(self, path: str, is_dir: bool = False) -> None:
        if is_dir or posixpath.dirname(path) not in QUIET_DIRS:
            self._on_change()

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
            files = self._state().files
            files[p] = (files.get(p, b"") if append else b"") + data
            self._changed(p)

    def make_dirs(self, path: str, parents: bool = True) -> None:
        """`mkdir -p` (parents: missing parents are made, an existing folder is fine) or plain `mkdir`."""
        p = normpath(path)
        with self.lock:
            if not parents and (p in self._state().dirs or p in self._state().files):
                raise PhoneError(f"{path}: File exists")
            if not parents and posixpath.dirname(p) not in self._state().dirs:
                raise PhoneError(f"{path}: No such file or directory")
            if not self.writable(p):
                raise PhoneError(f"{p}: Read-only file system")
            made = p not in self._state().dirs
            while p not in self._state().dirs:
                self._state().dirs.add(p)
                p = posixpath.dirname(p)
            if made:
                self._changed(p, is_dir=True)

    def remove(self, path: str) -> bool:
        p = normpath(path)
        with self.lock:
            if p in self._state().files:
                del self._state().files[p]
                self._changed(p)
                return True
            return False

    def remove_dir(self, path: str) -> bool:
        """Removes a folder and everything in it (`rm -r`); False if there is no such folder."""
        p = normpath(path)
        with self.lock:
            st = self._state()
            if p not in st.dirs:
                return False
            if not self.writable(p) or p in ("/sdcard", "/data/local/tmp"):
                raise PhoneError(f"{p}: Permission denied")
            inside = p + "/"
            for f in [f for f in st.files if f.startswith(inside)]:
                del st.files[f]
            st.dirs -= {d for d in st.dirs if d == p or d.startswith(inside)}
            self._changed(p, is_dir=True)
            return True

    def move(self, src: str, dst: str) -> None:
        """Renames a file or folder (`mv`); into `dst` when it is a folder. PhoneError says what failed."""
        s, d = normpath(src), normpath(dst)
        with self.lock:
            st = self._state()
            if s not in st.files and s not in st.dirs:
                raise PhoneError(f"{src}: No such file or directory")
            if d in st.dirs:
                d = posixpath.join(d, posixpath.basename(s))
            if not self.writable(s) or not self.writable(d):
                raise PhoneError(f"{dst}: Read-only file system")
            if posixpath.dirname(d) not in st.dirs:
                raise PhoneError(f"{dst}: No such file or directory")
            if s in st.files:
                st.files[d] = st.files.pop(s)
                self._changed(s)
                self._changed(d)
                return
            if d == s or d.startswith(s + "/"):
                raise PhoneError(f"{dst}: Invalid argument")
            for f in [f for f in st.files if f.startswith(s + "/")]:
                st.files[d + f[len(s) :]] = st.files.pop(f)
            for old in [x for x in st.dirs if x == s or x.startswith(s + "/")]:
                st.dirs.discard(old)
                st.dirs.add(d + old[len(s) :])
            self._changed(d, is_dir=True)

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
