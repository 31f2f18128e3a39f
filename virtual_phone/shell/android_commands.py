"""Android's device-control commands on the virtual phone: input, screencap, uiautomator, settings, svc, cmd.

Outputs and exit codes follow an API 34 emulator; system-service commands are in system_commands.py.
"""

from __future__ import annotations

import io
import struct

from PIL import Image

from virtual_phone.schema.app_schema import SETTINGS_NAMESPACES
from virtual_phone.shell.keys import KEYCODES
from virtual_phone.shell.package_manager import pm
from virtual_phone.shell.program import Caller, Output, command_table, exception
from virtual_phone.state.storage import PhoneError


def _ints(io: Output, sub: str, vals: list[str]) -> list[int] | None:
    bad = [v for v in vals if not _is_number(v)]
    if bad:
        exception(io, sub, "java.lang.NumberFormatException", f'For input string: "{bad[0]}"')
        return None
    return [round(float(v)) for v in vals]


def _is_number(v: str) -> bool:
    try:
        float(v)
        return True
    except ValueError:
        return False


_INPUT_SOURCES = {
    "touchscreen",
    "touchpad",
    "keyboard",
    "mouse",
    "dpad",
    "gamepad",
    "stylus",
    "trackball",
    "joystick",
    "touchnavigation",
    "rotaryencoder",
}


def decode_text(text: str) -> str:
    """InputShellCommand.sendText's escape: `%s` is a space (the `%` goes, the `s` becomes ' ')."""
    buff = list(text)
    escape = False
    i = 0
    while i < len(buff):
        if escape:
            escape = False
            if buff[i] == "s":
                buff[i] = " "
                del buff[i - 1]
                i -= 1
        if buff[i] == "%":
            escape = True
        i += 1
    return "".join(buff)


def _send_text(sh: Caller, text: str, io: Output) -> bool:
    """Types `input text` into the focused field; Enter for a newline. The virtual keyboard's key map has
    no key for other characters (non-ASCII): Android then fails on a null event array, typing nothing."""
    chars = decode_text(text)
    if any(not (" " <= c <= "~" or c in "\n\t") for c in chars):
        exception(io, "text", "java.lang.NullPointerException", "Attempt to get length of null array")
        return False
    for n, line in enumerate(chars.split("\n")):
        if n:
            sh.phone.keyevent(KEYCODES["ENTER"])
        if line:
            sh.phone.text(line)
    return True


def _input(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    if args and args[0] in _INPUT_SOURCES:
        args = args[1:]
    if args and args[0] == "-d":
        args = args[2:]
    if not args:
        io.err("Usage: input [<source>] [-d DISPLAY_ID] <command> [<arg>...]\n")
        return 1
    sub, rest = args[0], args[1:]
    phone = sh.phone
    if sub == "tap":
        nums = _ints(io, sub, rest[:2]) if len(rest) >= 2 else None
        if len(rest) < 2:
            return exception(
                io, sub, "java.lang.IllegalArgumentException", "Error: Invalid arguments for command: tap"
            )
        if nums is None:
            return 255
        phone.tap(nums[0], nums[1])
    elif sub in ("swipe", "draganddrop"):
        if len(rest) < 4:
            return exception(
                io, sub, "java.lang.IllegalArgumentException", f"Error: Invalid arguments for command: {sub}"
            )
        nums = _ints(io, sub, rest[:5])
        if nums is None:
            return 255
        phone.swipe(*nums[:4], *(nums[4:5] or [300]))
    elif sub == "text":
        if not rest:
            return exception(
                io, sub, "java.lang.IllegalArgumentException", "Error: Invalid arguments for command: text"
            )
        if not _send_text(sh, rest[0], io):  # only the next argument is typed, as InputShellCommand does
            return 255
    elif sub in ("keyevent", "keycombination", "press"):
        keys = [a for a in rest if a not in ("--longpress", "--doubletap", "-t")] or (
            ["23"] if sub == "press" else []
        )
        if not keys:
            return exception(
                io, sub, "java.lang.IllegalArgumentException", f"Error: Invalid arguments for command: {sub}"
            )
        for k in keys:
            name = k.upper().removeprefix("KEYCODE_")
            code = int(k) if k.isdigit() else KEYCODES.get(name, 0)
            phone.keyevent(code)
    else:
        io.err(f"Error: Unknown command: {sub}\n")
        return 1
    phone.prerender_soon()
    return 0


def _screencap(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    png = "-p" in args
    files = [a for a in args if not a.startswith("-")]
    if "-d" in args:
        i = args.index("-d")
        files = [a for a in files if a != (args[i + 1] if i + 1 < len(args) else "")]
    sh.phone.faults.note_restless("screencap")
    if files:
        png = png or files[0].endswith(".png")
    data = sh.phone.screenshot_png() if png else _raw(sh)
    if files:
        try:
            sh.phone.storage.write(files[0], data)
        except PhoneError as e:
            io.err(f"Error opening file: {files[0]} ({e})\n")
            return 1
    else:
        io.out(data)
    return 0


def _raw(sh: Caller) -> bytes:
    """`screencap` without -p: width, height, format (1 = RGBA_8888), colour space, then the pixels."""
    img = Image.open(io.BytesIO(sh.phone.screenshot_png())).convert("RGBA")
    return struct.pack("<4I", img.width, img.height, 1, 0) + img.tobytes()


# What `uiautomator dump` prints besides the XML (Phone.dump: views/uiautomator_xml.py).
DUMP_OK = "UI hierchary dumped to: {path}\n"  # sic: AOSP's spelling
DUMP_IDLE_ERROR = "ERROR: could not get idle state.\n"


def _uiautomator(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    if not args or args[0] != "dump":
        io.err(
            "Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\n"
            "help: displays help message\n\nruntest: executes UI automation tests\n\n"
            "dump: creates an XML dump of current UI hierarchy\n\nevents: prints out accessibility events\n"
        )
        return 1 if args else 0
    rest = [a for a in args[1:] if not a.startswith("--")]
    path = rest[0] if rest else "/sdcard/window_dump.xml"
    line = "uiautomator " + " ".join(args)
    sh.phone.faults.note_restless(line)
    if sh.phone.faults.dump_fails(line):
        io.err(DUMP_IDLE_ERROR)
        return 0
    xml = sh.phone.dump()
    if path == "/dev/tty":
        io.out(xml)
    else:
        try:
            sh.phone.storage.write(path, xml.encode())
        except PhoneError:
            io.err(
                f"java.io.FileNotFoundException: {path}: open failed: ENOENT (No such file or directory)\n"
            )
            return 0
    io.out(DUMP_OK.format(path=path))
    return 0


def _settings(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    while args[:1] == ["--user"]:
        args = args[2:]
    usage = (
        "usage:  settings [--user <USER_ID> | current] get namespace key\n"
        "        settings [--user <USER_ID> | current] put namespace key value\n"
        "        settings [--user <USER_ID> | current] delete namespace key\n"
        "        settings [--user <USER_ID> | current] list namespace\n\n"
        "'namespace' is one of {system, secure, global}, case-insensitive\n"
    )
    if len(args) < 2 or args[0] not in ("get", "put", "delete", "list", "reset"):
        io.err(usage)
        return 255 if args else 0
    verb, ns = args[0], args[1].lower()
    if ns not in SETTINGS_NAMESPACES:
        io.err(f"Invalid namespace '{args[1]}'\n" + usage)
        return 255
    phone = sh.phone
    if verb == "list":
        with phone.lock:
            items = sorted(phone.state.settings.get(ns, {}).items())
        io.out("".join(f"{k}={v}\n" for k, v in items))
        return 0
    if verb == "reset":
        return _settings_reset(sh, ns, args[2:], io, usage)
    if len(args) < 3 or (verb == "put" and len(args) < 4):
        io.err(usage)
        return 255
    key = args[2]
    if verb == "get":
        v = phone.get_setting(ns, key)
        io.out(f"{'null' if v is None else v}\n")
    elif verb == "put":
        phone.put_setting(ns, key, args[3], untrusted=True)
        phone.prerender_soon()
    elif verb == "delete":
        io.out(f"Deleted {1 if phone.delete_setting(ns, key) else 0} rows\n")
        phone.prerender_soon()
    return 0


RESET_MODES = ("untrusted_defaults", "untrusted_clear", "trusted_defaults")


def _settings_reset(sh: Caller, ns: str, rest: list[str], io: Output, usage: str) -> int:
    """`settings reset NAMESPACE {PACKAGE_NAME | RESET_MODE}` as SettingsService does it."""
    if not rest:
        io.err(usage)
        return 255
    if ns == "system":
        io.err("Invalid table; no reset performed\n")
        return 0
    mode = rest[0].lower()
    # A package name resets what that package set; only the shell writes settings here.
    sh.phone.reset_settings(ns, mode if mode in RESET_MODES else "untrusted_defaults")
    sh.phone.prerender_soon()
    return 0


_SVC = {
    "wifi": ("global", "wifi_on"),
    "bluetooth": ("global", "bluetooth_on"),
    "data": ("global", "mobile_data"),
}


def _svc(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    if len(args) >= 2 and args[0] in _SVC and args[1] in ("enable", "disable"):
        ns, key = _SVC[args[0]]
        sh.phone.put_setting(ns, key, "1" if args[1] == "enable" else "0")
        sh.phone.prerender_soon()
        return 0
    if args[:1] == ["power"]:
        return 0
    io.out(
        "Available commands:\n    help     Show information about the subcommands\n"
        "    power    Control the power manager\n    data     Control mobile data connectivity\n"
        "    wifi     Control the Wi-Fi manager\n    bluetooth Control Bluetooth service\n"
    )
    return 0


def _cmd(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    phone = sh.phone
    if not args:
        io.err(
            "cmd: No service specified; use -l to list all running services. Use -w to start and wait for a "
            "service.\n"
        )
        return 20
    svc, rest = args[0], args[1:]
    if svc == "package":  # /system/bin/pm is `cmd package "$@"`
        return pm(sh, rest, stdin, io)
    if svc == "wifi":
        if rest[:1] == ["status"]:
            on = phone.get_setting("global", "wifi_on") not in (None, "0")
            if on:
                io.out(
                    "Wifi is enabled\nWifi scanning is always available\n"
                    "==== Primary ClientModeManager instance "
                    '====\nWifi is connected to "AndroidWifi"\n'
                )
            else:
                io.out("Wifi is disabled\nWifi scanning is always available\n")
            return 0
        if rest[:1] == ["set-wifi-enabled"] and len(rest) > 1 and rest[1] in ("enabled", "disabled"):
            phone.put_setting("global", "wifi_on", "1" if rest[1] == "enabled" else "0")
            phone.prerender_soon()
            return 0
    elif svc == "bluetooth_manager" and rest[:1] in (["enable"], ["disable"]):
        phone.put_setting("global", "bluetooth_on", "1" if rest[0] == "enable" else "0")
        phone.prerender_soon()
        return 0
    elif svc == "connectivity" and rest[:1] == ["airplane-mode"]:
        if len(rest) == 1:
            io.out(
                ("enabled" if phone.get_setting("global", "airplane_mode_on") == "1" else "disabled") + "\n"
            )
            return 0
        if rest[1] in ("enable", "disable"):
            phone.put_setting("global", "airplane_mode_on", "1" if rest[1] == "enable" else "0")
            phone.prerender_soon()
            return 0
    elif svc == "uimode" and rest[:1] == ["night"]:
        names = {"1": "no", "2": "yes", "0": "auto"}
        if len(rest) > 1:
            value = {v: k for k, v in names.items()}.get(rest[1])
            if value is None:
                io.err("Error: mode must be 'yes', 'no', or 'auto'\n")
                return 255
            phone.put_setting("secure", "ui_night_mode", value)
            phone.prerender_soon()
        io.out(f"Night mode: {names.get(phone.get_setting('secure', 'ui_night_mode') or '1', 'no')}\n")
        return 0
    elif svc == "statusbar" and rest[:1] in (["collapse"], ["expand-notifications"], ["expand-settings"]):
        phone.set_shade(rest[0] != "collapse")  # the notifications shade shows the quick settings too
        phone.prerender_soon()
        return 0
    io.err(f"Unknown command: {' '.join(args)}\n")
    return 255


COMMANDS = command_table(_input, _screencap, _uiautomator, _settings, _svc, _cmd)
