"""`bugreportz` and `bugreport` on the virtual phone: a zipped bug report of the phone's own state.

bugreportz follows AOSP frameworks/native/cmds/bugreportz (main.cpp, bugreportz.cpp): `-v` prints its
version (1.2) on stderr, `-h` its usage; without options it prints `OK:PATH` of the zip it made; `-p` adds
`BEGIN:PATH` and `PROGRESS:N/M` lines first; `-s` writes the zip to stdout instead. The zip is laid out as
dumpstate makes it (cmds/dumpstate, bugreport-format.md): `bugreport-PRODUCT-BUILD-DATE.txt` (the main
entry), `main_entry.txt` naming it and `version.txt` (2.0), in /bugreports. Its text is the phone's: build
properties, the log buffers, and `dumpsys` by priority, each section headed as dumpstate heads them. Since
Android 11 `bugreport` only prints that flat reports are gone (cmds/bugreport/bugreport.cpp).
"""

from __future__ import annotations

import datetime as dt
import io as bytes_io
import os
import time
import zipfile
from pathlib import Path
from zoneinfo import ZoneInfo

from virtual_phone.shell import dumpsys, logcat
from virtual_phone.shell.program import Caller, Command, Output, command_table
from virtual_phone.shell.system_commands import PROPS
from virtual_phone.state.owners import SHELL, can_own
from virtual_phone.state.tree import BUGREPORTS

LOGCAT, DUMPSYS = logcat.COMMANDS["logcat"], dumpsys.COMMANDS["dumpsys"]
VERSION = "1.2"
FORMAT_VERSION = "2.0"
USAGE = (
    "usage: bugreportz [-hpsv]\n"
    "  -h: to display this help message\n"
    "  -p: display progress\n"
    "  -s: stream zipped data\n"
    "  -v: to display the version\n"
    "  or no arguments to generate a zipped bugreport\n"
)
FLAT_GONE = (
    "=============================================================================\n"
    "WARNING: Flat (text file, non-zipped) bugreports are deprecated.\n"
    "WARNING: Please generate zipped bugreports instead.\n"
    "WARNING: On the host use: adb bugreport filename.zip\n"
    "WARNING: On the device use: bugreportz\n"
    "WARNING: bugreportz will output the filename to use with adb pull.\n"
    "=============================================================================\n\n\n"
)
# The sections of the main entry: (title, the command dumpstate names, the phone's command and args).
SECTIONS: tuple[tuple[str, str, Command, list[str]], ...] = (
    ("SYSTEM LOG", "logcat -v threadtime -v printable -v uid -d *:v", LOGCAT, ["-v", "uid", "-d"]),
    ("EVENT LOG", "logcat -b events -v threadtime -v printable -v uid -d *:v", LOGCAT,
     ["-b", "events", "-v", "uid", "-d"]),
    ("DUMPSYS CRITICAL", "/system/bin/dumpsys", DUMPSYS, ["--priority", "CRITICAL"]),
    ("DUMPSYS HIGH", "/system/bin/dumpsys", DUMPSYS, ["--priority", "HIGH"]),
    ("DUMPSYS", "/system/bin/dumpsys", DUMPSYS, ["--priority", "NORMAL"]),
)  # fmt: skip


def _now(sh: Caller) -> dt.datetime:
    return dt.datetime.fromtimestamp(sh.phone.clock.now_ms() / 1000, tz=ZoneInfo(sh.phone.clock.zone))


def _section(sh: Caller, title: str, shown: str, command: Command, args: list[str]) -> str:
    started = time.perf_counter()
    out = Output()
    command(Caller(sh.phone, root=sh.root, uid=sh.uid), args, b"", out)
    took = time.perf_counter() - started
    text = out.stdout().decode(errors="replace")
    return f"------ {title} ({shown}) ------\n{text}------ {took:.3f}s was the duration of '{title}' ------\n"


def report_text(sh: Caller, when: dt.datetime, progress: list[str]) -> str:
    """The main entry: dumpstate's header, the properties, then each section (a PROGRESS line each)."""
    parts = [
        "========================================================\n"
        f"== dumpstate: {when:%Y-%m-%d %H:%M:%S}\n"
        "========================================================\n\n"
        f"Build: {PROPS['ro.build.display.id']}\nBuild fingerprint: '{PROPS['ro.build.fingerprint']}'\n"
        f"Bugreport format version: {FORMAT_VERSION}\n\n"
        "------ SYSTEM PROPERTIES (getprop) ------\n"
        + "".join(f"[{k}]: [{v}]\n" for k, v in sorted(PROPS.items()))
    ]
    for n, (title, shown, command, args) in enumerate(SECTIONS, start=1):
        parts.append(_section(sh, title, shown, command, args))
        progress.append(f"PROGRESS:{n}/{len(SECTIONS)}\n")
    return "".join(parts)


def make_report(sh: Caller, progress: list[str]) -> tuple[str, bytes]:
    """(the zip's file name, its bytes), its entries dated on the phone's clock."""
    when = _now(sh)
    base = f"bugreport-{PROPS['ro.product.name']}-{PROPS['ro.build.id']}-{when:%Y-%m-%d-%H-%M-%S}"
    data = bytes_io.BytesIO()
    stamp = (when.year, when.month, when.day, when.hour, when.minute, when.second)
    with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in (
            (f"{base}.txt", report_text(sh, when, progress)),
            ("main_entry.txt", f"{base}.txt"),
            ("version.txt", FORMAT_VERSION),
        ):
            archive.writestr(zipfile.ZipInfo(name, stamp), text, zipfile.ZIP_DEFLATED)
    return f"{base}.zip", data.getvalue()


def _save(sh: Caller, name: str, data: bytes) -> str:
    """Writes the zip where dumpstate leaves it (the shell's to pull and remove); its /bugreports path."""
    folder = sh.phone.tree.host(BUGREPORTS)
    assert folder is not None
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    stamp = sh.phone.clock.now_ms() * 10**6
    for made in (path, folder):
        if can_own():
            os.chown(made, SHELL, SHELL)
        os.utime(made, ns=(stamp, stamp))
    _own_parents(folder, Path(sh.phone.tree.root))
    return f"/bugreports/{name}"


def _own_parents(folder: Path, root: Path) -> None:
    """The Shell app's folders down to the reports: the shell user's, as com.android.shell runs as it."""
    if not can_own():
        return
    for parent in (folder.parent, folder.parent.parent):
        if parent.is_relative_to(root / "data/user_de/0"):
            os.chown(parent, SHELL, SHELL)
            parent.chmod(0o771)


def _bugreportz(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    letters = "".join(a[1:] for a in args if a.startswith("-") and len(a) > 1)
    if any(not a.startswith("-") or a == "-" for a in args) or any(c not in "hpsv" for c in letters):
        io.err(USAGE)
        return 1
    for letter in letters:  # getopt's order: the first -h or -v ends it
        if letter in "hv":
            io.err(USAGE if letter == "h" else f"{VERSION}\n")
            return 0
    progress: list[str] = []
    name, data = make_report(sh, progress)
    if "s" in letters:
        io.out(data)
        return 0
    path = _save(sh, name, data)
    if "p" in letters:
        io.out(f"BEGIN:{path}\n" + "".join(progress))
    io.out(f"OK:{path}\n")
    return 0


def _bugreport(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    io.err(FLAT_GONE)
    return 0


COMMANDS = command_table(_bugreportz, _bugreport)
