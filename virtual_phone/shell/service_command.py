"""`service` on the virtual phone: Android's raw binder client (AOSP frameworks/native
cmds/service/service.cpp), for the one service scripts call with it: AlarmManager, to set the clock and the
time zone.

`service call alarm 2 i64 MS` is IAlarmManager.setTime(long) and `service call alarm 3 s16 ZONE` its
setTimeZone(String) (transactions 1, 2, 3 = set, setTime, setTimeZone in the AIDL's order:
frameworks/base apex/jobscheduler/framework/java/android/app/IAlarmManager.aidl). The reply is printed as
Parcel's text form: its 32-bit words in hex, then its bytes as characters (`.` for the unprintable); a void
method's reply is one word (no exception), a boolean's two. Other services and codes answer an empty reply.
"""

from __future__ import annotations

import struct

from virtual_phone.shell.program import Caller, Output, command_table
from virtual_phone.state.phone_clock import known_zone

USAGE = (
    "Usage: service [-h|-?]\n"
    "       service list\n"
    "       service check SERVICE\n"
    "       service call SERVICE CODE [i32 N | i64 N | f N | d N | s16 STR ] ...\n"
    "Options:\n"
    "   i32: Write the 32-bit integer N into the send parcel.\n"
    "   i64: Write the 64-bit integer N into the send parcel.\n"
    "   f:   Write the 32-bit single-precision number N into the send parcel.\n"
    "   d:   Write the 64-bit double-precision number N into the send parcel.\n"
    "   s16: Write the UTF-16 string STR into the send parcel.\n"
)
# A few of an API 34 image's services with their interfaces (`service list` lists these).
SERVICES = {
    "activity": "android.app.IActivityManager",
    "alarm": "android.app.IAlarmManager",
    "input": "android.hardware.input.IInputManager",
    "package": "android.content.pm.IPackageManager",
    "settings": "",
    "statusbar": "com.android.internal.statusbar.IStatusBarService",
    "window": "android.view.IWindowManager",
}
SET_TIME, SET_TIME_ZONE = 2, 3
KINDS = {"i32": 1, "i64": 1, "f": 1, "d": 1, "s16": 1, "null": 0}


def parcel_text(data: bytes) -> str:
    """How service prints a reply parcel of up to 16 bytes: `Parcel(00000000    '....')`."""
    words = [f"{w:08x}" for (w,) in struct.iter_unpack("<I", data)]
    chars = "".join(chr(b) if 32 <= b < 127 else "." for b in data)
    return f"Parcel({' '.join(words)}{' ' * max(1, 5 - len(words))}'{chars}')"


def _arguments(args: list[str], io: Output) -> list[str] | None:
    """The call's argument values, or None after printing what is wrong (service's own messages)."""
    values, i = [], 0
    while i < len(args):
        kind = args[i]
        if kind not in KINDS:
            io.err(f"service: unknown option {kind}\n")
            return None
        if KINDS[kind] and i + 1 >= len(args):
            what = {"i32": "integer", "i64": "integer", "s16": "string"}.get(kind, "number")
            io.err(f"service: no {what} supplied for '{kind}'\n")
            return None
        values.append(args[i + 1] if KINDS[kind] else "")
        i += 1 + KINDS[kind]
    return values


def _call(sh: Caller, args: list[str], io: Output) -> int:
    if len(args) < 2:
        io.err(
            "service: No service specified for call\n" if args else "service: No code specified for call\n"
        )
        io.out(USAGE)
        return 10
    name, code = args[0], int(args[1]) if args[1].lstrip("-").isdigit() else 0
    if name not in SERVICES or not SERVICES[name]:
        io.err(f"service: Service {name} does not exist\n")
        return 10
    values = _arguments(args[2:], io)
    if values is None:
        io.out(USAGE)
        return 10
    reply = struct.pack("<i", 0)
    if name == "alarm" and code == SET_TIME and values:
        ms = int(values[0]) if values[0].lstrip("-").isdigit() else 0
        sh.phone.clock.set(ms)
        reply += struct.pack("<i", 1)  # true
    elif name == "alarm" and code == SET_TIME_ZONE and values and known_zone(values[0]):
        sh.phone.clock.set(sh.phone.clock.now_ms(), values[0])
    io.out(f"Result: {parcel_text(reply)}\n")
    return 0


def _service(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    if not args or args[0] in ("-h", "-?"):
        io.out(USAGE)
        return 0
    if args[0] == "list":
        io.out(f"Found {len(SERVICES)} services:\n")
        io.out("".join(f"{n}\t{name}: [{iface}]\n" for n, (name, iface) in enumerate(SERVICES.items())))
        return 0
    if args[0] == "check":
        if len(args) < 2:
            io.err("service: No service specified for check\n")
            io.out(USAGE)
            return 10
        io.out(f"Service {args[1]}: {'found' if args[1] in SERVICES else 'not found'}\n")
        return 0
    if args[0] == "call":
        return _call(sh, args[1:], io)
    io.err(f"service: Unknown command {args[0]}\n")
    io.out(USAGE)
    return 10


COMMANDS = command_table(_service)
