"""Android's users on the phone: the uids its shell runs as, the names `ls -l` and `id` print for them, and
the owners and modes of the phone's files, as an Android 14 emulator has them.

Real owners need a host that can hand out uids: the phone started as root. Started as another user, every
file is that user's (root in the sandbox's user namespace) and nothing here changes owners (see
shell/sandbox.py).

Sources (AOSP): the ids are bionic's android_ids
(`system/core/libcutils/include/private/android_filesystem_config.h`); adbd's groups are the ones
`drop_privileges` gives its shell, root or not (`packages/modules/adb/daemon/main.cpp`); an app's uid is
10000 + N, printed `u0_aN` (bionic's `getpwuid`); shared storage shows the lower file system's owners through
MediaProvider's FUSE daemon (`packages/providers/MediaProvider/jni/FuseDaemon.cpp`: `pf_getattr` answers
`lstat` of the file under /data/media/0), where the daemon, an app of its own, creates every file in folders
of group media_rw.
"""

from __future__ import annotations

import os
import stat
import struct
from collections.abc import Iterable
from pathlib import Path

from virtual_phone.state.tree import SDCARD

IDS = {
    "root": 0,
    "system": 1000,
    "input": 1004,
    "log": 1007,
    "adb": 1011,
    "sdcard_rw": 1015,
    "media_rw": 1023,
    "sdcard_r": 1028,
    "ext_data_rw": 1078,
    "ext_obb_rw": 1079,
    "shell": 2000,
    "net_bt_admin": 3001,
    "net_bt": 3002,
    "inet": 3003,
    "net_bw_stats": 3006,
    "readproc": 3009,
    "uhid": 3011,
    "readtracefs": 3012,
    "nobody": 9999,
}
ROOT, SYSTEM, SHELL = 0, 1000, 2000
# What adbd's shell (and, after `adb root`, its root shell) carries besides its own group.
ADBD_GROUPS = tuple(
    IDS[n]
    for n in (
        *("adb", "log", "input", "inet", "net_bt", "net_bt_admin", "sdcard_r", "sdcard_rw"),
        *("net_bw_stats", "readproc", "uhid", "ext_data_rw", "ext_obb_rw", "readtracefs"),
    )
)
FIRST_APP_UID = 10000
MEDIA_PROVIDER = "com.google.android.providers.media.module"  # owns shared storage's files (FUSE daemon)
# Folders of a fresh emulator: path → (owner, group, mode). /data/data and /data/user_de/0 hold the apps'.
DIRS = {
    "/data": (SYSTEM, SYSTEM, 0o771),
    "/data/data": (SYSTEM, SYSTEM, 0o771),
    "/data/user": (SYSTEM, SYSTEM, 0o711),
    "/data/user_de": (SYSTEM, SYSTEM, 0o711),
    "/data/user_de/0": (SYSTEM, SYSTEM, 0o771),
    "/data/local": (ROOT, ROOT, 0o751),
    "/data/local/tmp": (SHELL, SHELL, 0o771),
    "/storage": (ROOT, SYSTEM, 0o755),
    "/storage/emulated": (ROOT, IDS["sdcard_rw"], 0o711),
}


def can_own() -> bool:
    """Whether this process can give files to other users (it runs as root)."""
    return os.geteuid() == 0


def uid_name(uid: int) -> str:
    return f"u0_a{uid - FIRST_APP_UID}"


class Users:
    """The phone's users: Android's ids and one uid per package (10000 + its place among them, sorted, as a
    fresh image installs them one after another)."""

    def __init__(self, packages: Iterable[str]) -> None:
        self.app_uids = {pkg: FIRST_APP_UID + 1 + n for n, pkg in enumerate(sorted(set(packages)))}

    def passwd(self) -> str:
        names = dict(IDS) | {uid_name(u): u for u in self.app_uids.values()}
        return "".join(f"{n}:x:{u}:{u}::/:/system/bin/sh\n" for n, u in names.items())

    def group(self) -> str:
        return self.passwd().replace("::/:/system/bin/sh", ":")  # name:x:gid: per id

    @property
    def media(self) -> int:
        return self.app_uids[MEDIA_PROVIDER]

    def new_file_owner(self, android_path: str) -> tuple[int, int]:
        """Who owns a file the phone itself makes at `android_path` (a push, a screenshot, an app's file)."""
        if android_path == SDCARD or android_path.startswith(SDCARD + "/"):
            return self.media, IDS["media_rw"]
        return SHELL, SHELL  # /data/local/tmp: adbd's shell user

    def apply(self, root: Path) -> None:
        """Gives the tree under `root` Android's owners and modes (once, when the phone's shell starts)."""
        for path, (uid, gid, mode) in DIRS.items():
            _own(root / path.lstrip("/"), uid, gid, mode)
        for base in ("data/data", "data/user_de/0"):
            for app_dir in (root / base).iterdir():
                app_uid = self.app_uids.get(app_dir.name)
                if app_uid is not None and not app_dir.is_symlink():
                    _own_app(app_dir, app_uid)
        _own_shared(root / SDCARD.lstrip("/"), self.media)


def _own(path: Path, uid: int, gid: int, mode: int) -> None:
    os.chown(path, uid, gid, follow_symlinks=False)
    if not path.is_symlink():
        os.chmod(path, mode)


def _own_app(app_dir: Path, uid: int) -> None:
    """An app's private folder: its own, closed to others; its databases folder open to traversal."""
    _own(app_dir, uid, uid, 0o700)
    for dirpath, dirnames, filenames in os.walk(app_dir):
        for name in dirnames:
            _own(Path(dirpath, name), uid, uid, 0o771)
        for name in filenames:
            _own(Path(dirpath, name), uid, uid, 0o660)


def shared_acl(is_dir: bool) -> list[tuple[str, bytes]]:
    """POSIX ACLs letting group sdcard_rw (adbd's shell) in where only media_rw may go, as the FUSE daemon
    lets the shell in whatever the lower file system's modes say: `ls -l` shows the modes alone."""
    rw = 7 if is_dir else 6
    entries = [(0x01, rw, -1), (0x04, rw, -1), (0x08, rw, IDS["sdcard_rw"]), (0x10, rw, -1), (0x20, 0, -1)]
    blob = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i & 0xFFFFFFFF) for t, p, i in entries)
    names = ["system.posix_acl_access", "system.posix_acl_default"] if is_dir else ["system.posix_acl_access"]
    return [(n, blob) for n in names]


def _own_shared(top: Path, media: int) -> None:
    for dirpath, dirnames, filenames in os.walk(top):
        own_shared(Path(dirpath), media)
        for name in filenames:
            own_shared(Path(dirpath, name), media)
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]


def own_shared(path: Path, media: int) -> None:
    """A file or folder on shared storage: the media provider's, group media_rw, rw for them (folders
    setgid, as /data/media's are), open to sdcard_rw through the ACL."""
    is_dir = stat.S_ISDIR(os.lstat(path).st_mode)
    os.chown(path, media, IDS["media_rw"], follow_symlinks=False)
    os.chmod(path, 0o2770 if is_dir else 0o660)
    for name, blob in shared_acl(is_dir):
        os.setxattr(path, name, blob, follow_symlinks=False)
