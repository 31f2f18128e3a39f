"""The phone's files as its apps and `adb push/pull` see them: real files in the phone's tree (tree.py).

Paths are Android's (/sdcard, /storage/emulated/0, /data/local/tmp); only shared storage and /data/local/tmp
are writable from here, as for adb's shell user. The shell changes the same files directly in its sandbox;
`changed_since` tells the phone when it did, so a screen listing files re-renders.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

from virtual_phone.state.owners import Users, can_own
from virtual_phone.state.tree import BUGREPORTS, SDCARD, WRITABLE_ROOTS, PhoneTree, android_path

# Files right in these folders are no app's records (the Files app lists the folders of /sdcard): tools write
# their UI dumps there at every observation, which must not re-render the screen.
QUIET_DIRS = frozenset(WRITABLE_ROOTS)


class PhoneError(Exception):
    """A request the phone refuses, with the message Android would print."""


def normpath(path: str) -> str:
    """An Android path as the phone's apps name it: shared storage as /sdcard/…"""
    p = android_path(path)
    return "/sdcard" + p[len(SDCARD) :] if p == SDCARD or p.startswith(SDCARD + "/") else p


class Storage:
    """Files in the phone's tree, guarded by `lock`."""

    def __init__(
        self,
        tree: PhoneTree,
        lock: threading.RLock,
        on_change: Callable[[], None] | None = None,
        users: Users | None = None,
        now_ms: Callable[[], int] | None = None,
    ) -> None:
        self.tree = tree
        # The phone's clock: what the phone writes (a screenshot, a UI dump, an app's file) carries its
        # time, as on a device, not the host's (None: the kernel's time stays).
        self._now_ms = now_ms
        self._users = users if can_own() else None  # who owns what the phone makes (None: no owners)
        self.lock = lock
        # Called when a folder, or a file outside QUIET_DIRS, is written, appears, goes or moves: a screen
        # that lists files or shows a note must re-render.
        self._on_change = on_change or (lambda: None)
        self._signature = self.signature()

    def _changed(self, path: str, is_dir: bool = False) -> None:
        if is_dir or posixpath.dirname(android_path(path)) not in QUIET_DIRS:
            self._on_change()

    def _own(self, path: str, host: Path) -> None:
        """What the phone makes is made as on Android: by the media provider on shared storage (its ACL
        comes from the folder's default ACL), by adbd's shell user in /data/local/tmp."""
        if self._users is not None:
            uid, gid = self._users.new_file_owner(android_path(path))
            os.chown(host, uid, gid)

    def _host(self, path: str) -> Path | None:
        return self.tree.host(path)

    def writable(self, path: str) -> bool:
        p = android_path(path)
        return any(p == root or p.startswith(root + "/") for root in WRITABLE_ROOTS)

    def readable(self, path: str) -> bool:
        """What adb's shell user may read: not the apps' private data under /data (but /data/local/tmp, and
        the bug reports, which are the shell user's own)."""
        p = android_path(path)
        own = p == BUGREPORTS or p.startswith(BUGREPORTS + "/")
        return own or self.writable(p) or not (p == "/data" or p.startswith("/data/"))

    def stat(self, path: str, as_root: bool = False) -> tuple[int, int, int] | None:
        """(mode, size, mtime in s) of a file or folder, None if there is none the caller may see."""
        host = self._host(path)
        if host is None or not (as_root or self.readable(path)):
            return None
        try:
            st = host.stat()
        except OSError:
            return None
        return st.st_mode, st.st_size, int(st.st_mtime)

    def read(self, path: str) -> bytes | None:
        if not self.readable(path):
            return None
        host = self._host(path)
        with self.lock:
            try:
                return host.read_bytes() if host is not None and host.is_file() else None
            except OSError:
                return None

    def _stamp(self, hosts: list[Path], mtime_s: int | None = None) -> None:
        """Sets the times of what was just written: `mtime_s` (a push keeps the client's), else now on
        the phone's clock."""
        ns = mtime_s * 10**9 if mtime_s is not None else None
        if ns is None and self._now_ms is not None:
            ns = self._now_ms() * 10**6
        if ns is not None:
            for host in hosts:
                os.utime(host, ns=(ns, ns))

    def write(self, path: str, data: bytes, append: bool = False, mtime_s: int | None = None) -> None:
        """Writes a file as the phone does; `mtime_s`: the time it gets instead of the phone's now."""
        p = normpath(path)
        if p == "/dev/null":
            return
        host = self._host(path)
        with self.lock:
            if not self.writable(p) or host is None:
                raise PhoneError(f"{p}: Read-only file system")
            if host.is_dir():
                raise PhoneError(f"{p}: Is a directory")
            if not host.parent.is_dir():
                raise PhoneError(f"{p}: No such file or directory")
            new = not host.exists()
            with open(host, "ab" if append else "wb") as f:
                f.write(data)
            if new:
                host.chmod(0o660)  # as files on shared storage show on Android (and as the shell makes them)
                self._own(p, host)
            self._stamp([host], mtime_s)
            if new:
                self._stamp([host.parent])  # the folder changed now; the file keeps any time it was given
            self._changed(p)

    def make_dirs(self, path: str, parents: bool = True) -> None:
        """`mkdir -p` (parents: missing parents are made, an existing folder is fine) or plain `mkdir`."""
        p = normpath(path)
        host = self._host(path)
        with self.lock:
            if not self.writable(p) or host is None:
                if host is not None and host.is_dir() and parents:
                    return
                raise PhoneError(f"{p}: Read-only file system")
            if not parents and host.exists():
                raise PhoneError(f"{path}: File exists")
            if not parents and not host.parent.is_dir():
                raise PhoneError(f"{path}: No such file or directory")
            missing = [host, *[d for d in host.parents if d.is_relative_to(self.tree.root)]]
            missing = [d for d in missing if not d.exists()]
            try:
                host.mkdir(mode=0o771, parents=True, exist_ok=True)
            except (FileExistsError, NotADirectoryError) as e:
                raise PhoneError(f"{path}: Not a directory") from e
            for d in missing:
                self._own(str(d.relative_to(self.tree.root)), d)
            if missing:
                self._stamp([*missing, missing[-1].parent])
                self._changed(p, is_dir=True)

    def remove(self, path: str) -> bool:
        host = self._host(path)
        with self.lock:
            if host is None or not host.is_file() or not self.writable(path):
                return False
            host.unlink()
            self._changed(path)
            return True

    def remove_dir(self, path: str) -> bool:
        """Removes a folder and everything in it (`rm -r`); False if there is no such folder."""
        p = normpath(path)
        host = self._host(path)
        with self.lock:
            if host is None or not host.is_dir():
                return False
            if not self.writable(p) or android_path(p) in WRITABLE_ROOTS:
                raise PhoneError(f"{p}: Permission denied")
            shutil.rmtree(host)
            self._changed(p, is_dir=True)
            return True

    def move(self, src: str, dst: str) -> None:
        """Renames a file or folder (`mv`); into `dst` when it is a folder. PhoneError says what failed."""
        s, d = self._host(src), self._host(dst)
        with self.lock:
            if s is None or not s.exists():
                raise PhoneError(f"{src}: No such file or directory")
            if d is not None and d.is_dir():
                d = self._host(posixpath.join(android_path(dst), s.name))
            if d is None or not self.writable(src) or not self.writable(dst):
                raise PhoneError(f"{dst}: Read-only file system")
            if not d.parent.is_dir():
                raise PhoneError(f"{dst}: No such file or directory")
            if s.is_dir() and (d == s or s in d.parents):
                raise PhoneError(f"{dst}: Invalid argument")
            os.replace(s, d)
            self._changed(src, is_dir=d.is_dir())
            self._changed(dst, is_dir=d.is_dir())

    def is_dir(self, path: str) -> bool:
        host = self._host(path)
        return host is not None and host.is_dir()

    def listdir(self, path: str) -> list[str]:
        host = self._host(path)
        with self.lock:
            try:
                return sorted(os.listdir(host)) if host is not None and host.is_dir() else []
            except OSError:
                return []

    # ---- changes made by the shell ------------------------------------------------------------------------
    def signature(self) -> tuple[tuple[str, int, int], ...]:
        """What the apps can see of shared storage: every folder and file (outside QUIET_DIRS) with its
        mtime and size. Cheap enough to take after every shell command on a phone's few dozen files."""
        base = self.tree.root / SDCARD.lstrip("/")
        quiet = {str(self.tree.root / q.lstrip("/")) for q in QUIET_DIRS}
        out: list[tuple[str, int, int]] = []
        for dirpath, dirnames, filenames in os.walk(base):
            st = os.lstat(dirpath)
            out.append((dirpath, st.st_mtime_ns if dirpath not in quiet else 0, 0))
            if dirpath in quiet:
                # Its own mtime moves with every quiet file; its folders are what the Files app shows.
                out.extend((os.path.join(dirpath, d), 0, 0) for d in dirnames)
                continue
            for name in filenames:
                try:
                    st = os.lstat(os.path.join(dirpath, name))
                except OSError:
                    continue
                out.append((os.path.join(dirpath, name), st.st_mtime_ns, st.st_size))
        return tuple(sorted(out))

    def changed_since_last_look(self) -> bool:
        """True (once) if the shell changed what the apps can see since the last call."""
        sig = self.signature()
        if sig == self._signature:
            return False
        self._signature = sig
        return True
