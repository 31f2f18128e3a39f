"""The shell's file commands on /sdcard and /data/local/tmp: ls, stat, rm, mv, cp, mkdir, touch.

Outputs and error texts follow Android 14's toybox (ls.c, stat.c, rm.c, cp.c, mkdir.c, touch.c).
"""

from __future__ import annotations

import posixpath
import re
import time
import zlib

from virtual_phone.shell import Output, Shell, command_table
from virtual_phone.storage import PhoneError, normpath

MTIME = 1767225600  # 2026-01-01 00:00 UTC: every file carries this time (snapshots compare equal)
OWNER = ("root", 0, "sdcard_rw", 1015)  # user, uid, group, gid shown for shared-storage files
DEVICE = 0x3B


def _flags(args: list[str]) -> tuple[set[str], list[str]]:
    """Single-letter flags (`-rf` → r, f) and the operands; `--` ends the flags."""
    flags: set[str] = set()
    rest: list[str] = []
    it = iter(args)
    for a in it:
        if a == "--":
            rest.extend(it)
        elif a.startswith("-") and len(a) > 1:
            flags.update(a[1:])
        else:
            rest.append(a)
    return flags, rest


def _blocks(size: int, is_dir: bool) -> int:
    """512-byte blocks as the file system allocates them (4 KiB at a time)."""
    return 8 if is_dir else 8 * -(-size // 4096)


def _mode(is_dir: bool) -> tuple[str, str]:
    return ("771", "drwxrwx--x") if is_dir else ("660", "-rw-rw----")


def _when() -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(MTIME))


def _ls_line(sh: Shell, path: str, name: str) -> str:
    is_dir = sh.phone.storage.is_dir(path)
    size = 3488 if is_dir else len(sh.phone.storage.read(path) or b"")
    user, _, group, _ = OWNER
    links = 2 if is_dir else 1
    return f"{_mode(is_dir)[1]} {links} {user} {group} {size} {_when()} {name}"


def _ls_dir(sh: Shell, path: str, flags: set[str], io: Output) -> None:
    storage = sh.phone.storage
    names = storage.listdir(path)
    if "a" in flags:
        names = [".", "..", *names]
    full = {n: posixpath.join(path, n) if n not in (".", "..") else path for n in names}
    if "l" in flags:
        total = sum(_blocks(len(storage.read(p) or b""), storage.is_dir(p)) // 2 for p in full.values())
        io.out(f"total {total}\n")
        io.out("".join(_ls_line(sh, full[n], n) + "\n" for n in names))
    else:
        io.out("".join(n + "\n" for n in names))


def _ls(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    """`ls [-1adl] [PATH...]`: one name per line (not a terminal), `-l` as toybox prints it."""
    flags, paths = _flags(args)
    paths = paths or ["."]
    storage = sh.phone.storage
    rc = 0
    dirs: list[str] = []
    for p in [p if p != "." else "/" for p in paths]:
        if storage.is_dir(p) and "d" not in flags:
            dirs.append(p)
        elif storage.is_dir(p) or storage.read(p) is not None:
            io.out((_ls_line(sh, p, p) if "l" in flags else p) + "\n")
        else:
            io.err(f"ls: {p}: No such file or directory\n")
            rc = 1
    for n, d in enumerate(dirs):
        if len(paths) > 1:
            io.out(("\n" if n or len(dirs) < len(paths) else "") + f"{d}:\n")
        _ls_dir(sh, d, flags, io)
    return rc


def _stat_field(sh: Shell, path: str, kind: str, width: str) -> str:
    storage = sh.phone.storage
    is_dir = storage.is_dir(path)
    size = 3488 if is_dir else len(storage.read(path) or b"")
    user, uid, group, gid = OWNER
    octal, flags = _mode(is_dir)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(MTIME)) + ".000000000"
    kinds = "directory" if is_dir else ("regular file" if size else "regular empty file")
    values: dict[str, object] = {
        "a": octal, "A": flags, "b": _blocks(size, is_dir), "B": 512, "d": DEVICE, "D": f"{DEVICE:x}",
        "f": f"{(0o40771 if is_dir else 0o100660):x}", "F": kinds, "g": gid, "G": group,
        "h": 2 if is_dir else 1, "i": zlib.crc32(normpath(path).encode()) & 0xFFFFFF, "n": path,
        "N": f"`{path}'", "o": 4096, "s": size, "t": 0, "T": 0, "u": uid, "U": user,
        "x": stamp, "X": MTIME, "y": stamp, "Y": MTIME, "z": stamp, "Z": MTIME, "m": "/storage/emulated",
    }  # fmt: skip
    text = str(values.get(kind, "?"))
    size_ = int(width.lstrip("-") or 0)
    return text.ljust(size_) if width.startswith("-") else text.rjust(size_)


def _stat_text(sh: Shell, path: str, fmt: str) -> str:
    def field(m: re.Match[str]) -> str:
        return "%" if m.group(2) == "%" else _stat_field(sh, path, m.group(2), m.group(1))

    return re.sub(r"%(-?\d*)([a-zA-Z%])", field, fmt)


STAT_FORMAT = (
    "  File: %N\n  Size: %s\t Blocks: %b\t IO Blocks: %B\t%F\n"
    "Device: %Dh/%dd\t Inode: %i\t Links: %h\n"
    "Access: (%a/%A)\tUid: (%5u/%8U)\tGid: (%5g/%8G)\n"
    "Access: %x\nModify: %y\nChange: %z"
)


def _stat(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    """`stat [-c FORMAT] FILE...`; `-t` the terse line."""
    fmt = STAT_FORMAT
    rest: list[str] = []
    it = iter(args)
    for a in it:
        if a == "-c":
            fmt = next(it, "")
        elif a == "-t":
            fmt = "%n %s %b %f %u %g %D %i %h %t %T %X %Y %Z %o"
        elif not a.startswith("-"):
            rest.append(a)
    if not rest:
        io.err("stat: Needs 1 argument\n")
        return 1
    rc = 0
    for path in rest:
        storage = sh.phone.storage
        if not storage.is_dir(path) and storage.read(path) is None:
            io.err(f"stat: '{path}': No such file or directory\n")
            rc = 1
            continue
        io.out(_stat_text(sh, path, fmt) + "\n")
    return rc


def _rm(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    flags, paths = _flags(args)
    storage = sh.phone.storage
    rc = 0
    for p in paths:
        try:
            if storage.is_dir(p):
                if not flags & {"r", "R"}:
                    io.err(f"rm: {p}: Is a directory\n")
                    rc = 1
                    continue
                storage.remove_dir(p)
            elif not storage.remove(p) and "f" not in flags:
                io.err(f"rm: {p}: No such file or directory\n")
                rc = 1
        except PhoneError as e:
            io.err(f"rm: {e}\n")
            rc = 1
    if not paths and "f" not in flags:
        io.err("rm: Needs 1 argument\n")
        return 1
    return rc


def _mv_or_cp(sh: Shell, args: list[str], io: Output, prog: str) -> int:
    flags, paths = _flags(args)
    if len(paths) < 2:
        io.err(f"{prog}: Needs 2 arguments\n")
        return 1
    *sources, dest = paths
    storage = sh.phone.storage
    if len(sources) > 1 and not storage.is_dir(dest):
        io.err(f"{prog}: '{dest}' not directory\n")
        return 1
    rc = 0
    for src in sources:
        try:
            if prog == "mv":
                storage.move(src, dest)
            else:
                _copy(sh, src, dest, "r" in flags or "R" in flags or "a" in flags)
        except PhoneError as e:
            io.err(f"{prog}: bad '{src}': {str(e).split(': ', 1)[-1]}\n")
            rc = 1
    return rc


def _copy(sh: Shell, src: str, dest: str, recursive: bool) -> None:
    storage = sh.phone.storage
    target = posixpath.join(dest, posixpath.basename(normpath(src))) if storage.is_dir(dest) else dest
    data = storage.read(src)
    if data is not None:
        storage.write(target, data)
        return
    if not storage.is_dir(src):
        raise PhoneError(f"{src}: No such file or directory")
    if not recursive:
        raise PhoneError(f"{src}: Is a directory")
    storage.make_dirs(target)
    for name in storage.listdir(src):
        _copy(sh, posixpath.join(src, name), target, True)


def _mv(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    return _mv_or_cp(sh, args, io, "mv")


def _cp(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    return _mv_or_cp(sh, args, io, "cp")


def _mkdir(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    flags, paths = _flags(args)
    rc = 0
    for p in paths:
        try:
            sh.phone.storage.make_dirs(p, parents="p" in flags)
        except PhoneError as e:
            io.err(f"mkdir: '{p}': {str(e).split(': ', 1)[-1]}\n")
            rc = 1
    return rc


def _touch(sh: Shell, args: list[str], stdin: bytes, io: Output) -> int:
    _, paths = _flags(args)
    rc = 0
    for p in paths:
        if sh.phone.storage.is_dir(p):
            continue
        try:
            sh.phone.storage.write(p, b"", append=True)
        except PhoneError as e:
            io.err(f"touch: '{p}': {str(e).split(': ', 1)[-1]}\n")
            rc = 1
    return rc


COMMANDS = command_table(_ls, _stat, _rm, _mv, _cp, _mkdir, _touch)
