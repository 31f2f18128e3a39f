"""The phone's file tree: a host directory the phone owns, laid out as Android's (/storage/emulated/0 with
/sdcard and /storage/self/primary pointing at it, /data/local/tmp, /system/bin), where its shell runs.

The tree lives as long as the phone. Snapshots copy its writable parts (shared storage and /data/local/tmp)
as bytes with their times, so a snapshot load puts back exactly the files that were there.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SDCARD = "/storage/emulated/0"
# Android names of shared storage: /sdcard → /storage/self/primary → /storage/emulated/0 on Android 14.
SDCARD_ALIASES = ("/sdcard", "/storage/self/primary", "/mnt/sdcard")
WRITABLE_ROOTS = (SDCARD, "/data/local/tmp")
# Where dumpstate leaves bug reports (the Shell app's files, the shell user's); /bugreports points here.
BUGREPORTS = "/data/user_de/0/com.android.shell/files/bugreports"
# Folders a fresh emulator has; files may be pushed into them.
DEFAULT_DIRS = (
    "/data/local/tmp",
    "/data/data",
    "/data/user_de/0",
    "/system/bin",
    "/system/etc",
    *(f"{SDCARD}/{d}" for d in ("Alarms", "DCIM", "Download", "Documents", "Movies", "Music", "Pictures")),
)
# A fixed time for the files a phone starts with, so two phones (and two runs) list the same times.
BOOT_MTIME_NS = 1_767_268_800 * 10**9  # 2026-01-01 12:00 UTC, the phone's clock


def android_path(path: str) -> str:
    """The canonical Android path: absolute, normalised, shared storage under /storage/emulated/0."""
    p = posixpath.normpath("/" + path.lstrip("/")) if path else "/"
    for alias in SDCARD_ALIASES:
        if p == alias or p.startswith(alias + "/"):
            return SDCARD + p[len(alias) :]
    if p == "/bugreports" or p.startswith("/bugreports/"):
        return BUGREPORTS + p[len("/bugreports") :]
    return p


@dataclass
class TreeCopy:
    """The writable parts of a tree: files (bytes, mode, mtime_ns, (uid, gid)) and folders (mode, mtime_ns,
    (uid, gid)) by path."""

    files: dict[str, tuple[bytes, int, int, tuple[int, int]]] = field(default_factory=dict)
    dirs: dict[str, tuple[int, int, tuple[int, int]]] = field(default_factory=dict)


class PhoneTree:
    """A phone's root directory on the host. `host(path)` maps an Android path into it, refusing any path
    that leads out of the tree (a symlink made in the shell points at the sandbox's root, not the host's)."""

    def __init__(self, root: Path | None = None) -> None:
        # In memory when the host has /dev/shm: a snapshot load rewrites folders, which a journaling disk
        # makes cost milliseconds each.
        shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        self.root = Path(root or owned_temp_dir("virtual-phone", shm)).resolve()
        for d in DEFAULT_DIRS:
            (self.root / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
        # As on Android: /sdcard → /storage/self/primary → /storage/emulated/0 (seen inside the sandbox).
        self._symlink("/storage/self/primary", SDCARD)
        self._symlink("/sdcard", "/storage/self/primary")
        self._symlink("/data/user/0", "/data/data")
        for d in (SDCARD, *DEFAULT_DIRS):
            (self.root / d.lstrip("/")).chmod(0o771)
            os.utime(self.root / d.lstrip("/"), ns=(BOOT_MTIME_NS, BOOT_MTIME_NS))

    def _symlink(self, path: str, target: str) -> None:
        link = self.root / path.lstrip("/")
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.is_symlink():
            link.symlink_to(target)
            os.utime(link, ns=(BOOT_MTIME_NS, BOOT_MTIME_NS), follow_symlinks=False)

    def host(self, path: str) -> Path | None:
        """The host path of an Android path, or None if it would leave the tree."""
        p = android_path(path)
        host = self.root / p.lstrip("/")
        real = os.path.realpath(host)
        if real != str(self.root) and not real.startswith(str(self.root) + os.sep):
            return None
        return Path(real)

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # ---- snapshots --------------------------------------------------------------------------------------
    def copy(self) -> TreeCopy:
        out = TreeCopy()
        for top in WRITABLE_ROOTS:
            base = self.root / top.lstrip("/")
            for dirpath, dirnames, filenames in os.walk(base):
                rel = "/" + os.path.relpath(dirpath, self.root)
                st = os.lstat(dirpath)
                out.dirs[rel] = (stat.S_IMODE(st.st_mode), st.st_mtime_ns, (st.st_uid, st.st_gid))
                for name in filenames:
                    full = os.path.join(dirpath, name)
                    st = os.lstat(full)
                    if stat.S_ISREG(st.st_mode):  # symlinks, fifos and sockets made in the shell are not kept
                        data = Path(full).read_bytes()
                        owner = (st.st_uid, st.st_gid)
                        out.files[f"{rel}/{name}"] = (data, stat.S_IMODE(st.st_mode), st.st_mtime_ns, owner)
                # A symlink to a folder is listed in dirnames; os.walk does not follow it, nor do we.
                dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        return out

    def restore(self, saved: TreeCopy) -> None:
        """Puts the writable parts back as `saved` holds them; files not in it go. Only what differs is
        touched: removing and making folders costs milliseconds each on a journaling disk."""
        now = self._entries()
        for path, kind in sorted(now.items(), reverse=True):  # children before their folders
            if (kind == "dir" and path not in saved.dirs) or (kind != "dir" and path not in saved.files):
                host = self.root / path.lstrip("/")
                if kind == "dir":
                    _make_writable(host)
                    shutil.rmtree(host)
                else:
                    host.unlink()
        for d, (mode, _, owner) in sorted(saved.dirs.items()):
            host = self.root / d.lstrip("/")
            if now.get(d) != "dir":
                host.mkdir(mode=0o700)
            _chown(host, owner)
            if stat.S_IMODE(host.stat().st_mode) != mode | 0o700:
                os.chmod(host, mode | 0o700)  # writable until its files are back
        for path, (data, mode, mtime, owner) in saved.files.items():
            host = self.root / path.lstrip("/")
            st = host.stat() if now.get(path) == "file" else None
            if st is None or st.st_size != len(data) or host.read_bytes() != data:
                if st is not None and not st.st_mode & stat.S_IWUSR:
                    os.chmod(host, 0o600)
                host.write_bytes(data)
                st = None
            if st is None or (st.st_uid, st.st_gid) != owner:
                _chown(host, owner)
                st = None
            if st is None or stat.S_IMODE(st.st_mode) != mode:
                os.chmod(host, mode)
            if st is None or st.st_mtime_ns != mtime:
                os.utime(host, ns=(mtime, mtime))
        # Folder modes and times last: writing a file into a folder moves its mtime.
        for d, (mode, mtime, _) in sorted(saved.dirs.items(), reverse=True):
            host = self.root / d.lstrip("/")
            os.chmod(host, mode)
            os.utime(host, ns=(mtime, mtime))

    def _entries(self) -> dict[str, str]:
        """Every entry under the writable roots: path → "dir", "file" or "other" (symlinks, fifos, ...)."""
        out: dict[str, str] = {}
        for top in WRITABLE_ROOTS:
            base = self.root / top.lstrip("/")
            for dirpath, dirnames, filenames in os.walk(base):
                rel = "/" + os.path.relpath(dirpath, self.root)
                out[rel] = "dir"
                for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                    full = os.path.join(dirpath, name)
                    out[f"{rel}/{name}"] = "file" if stat.S_ISREG(os.lstat(full).st_mode) else "other"
                dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        return out


def _chown(host: Path, owner: tuple[int, int]) -> None:
    """Gives a file back its owner (a phone not started as root has one owner for everything)."""
    st = host.lstat()
    if (st.st_uid, st.st_gid) != owner and os.geteuid() == 0:
        os.chown(host, *owner, follow_symlinks=False)


def owned_temp_dir(name: str, parent: str | None = None) -> str:
    """A new temp folder NAME-PID-…; first removes the ones of processes that are gone (a phone killed
    with SIGKILL cannot remove its own)."""
    base = Path(parent or tempfile.gettempdir())
    for old in base.glob(f"{name}-*-*"):
        pid = old.name[len(name) + 1 :].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _make_writable(old)
            shutil.rmtree(old, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{name}-{os.getpid()}-", dir=parent)


def _make_writable(base: Path) -> None:
    """A folder the shell made read-only (chmod 555) must still be removable by a snapshot load."""
    for dirpath, dirnames, _ in os.walk(base):
        os.chmod(dirpath, 0o700 | stat.S_IMODE(os.lstat(dirpath).st_mode))
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
