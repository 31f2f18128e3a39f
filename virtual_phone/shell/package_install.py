"""`pm install` (and `cmd package install`, which `adb install` streams an APK to) and `pm uninstall`.

As PackageManagerShellCommand does it: `install [OPTIONS] [-S SIZE] [PATH]` reads SIZE bytes of stdin
(adb ≥ 30: `exec:cmd package 'install' ... -S SIZE`, the APK on the stream) or the APK at PATH (adb's
push-then-install), stages it as /data/app/vmdlSESSION.tmp/base.apk, and prints `Success` or
`Failure [CODE: message]` on stdout (exit 1). `-r` is accepted and ignored (a reinstall is always allowed);
the other flags change nothing the phone models. The package name and version come from the APK's binary
manifest (apk.py); the APK itself is not kept: the package is listed (`pm list packages [-3]`, `pm path`)
until `pm uninstall` removes it. It has no activities: `am start` and `monkey` know only the phone's apps.
"""

from __future__ import annotations

import base64
import hashlib
import zlib

from virtual_phone.shell.apk import ApkError, read_apk
from virtual_phone.shell.program import Caller, Output, exception

# Options of makeInstallParams that take a value (every other option is a flag).
VALUE_OPTIONS = frozenset(
    [
        "-S",
        "-i",
        "-p",
        "--user",
        "--abi",
        "--install-location",
        "--install-reason",
        "--originating-uri",
        "--referrer",
        "--pkg",
        "--force-uuid",
        "--staged-ready-timeout",
        "--update-ownership",
    ]
)


def _split(args: list[str]) -> tuple[dict[str, str], list[str]] | str:
    """(options with their values, the other words), or the option that lacks its value."""
    options: dict[str, str] = {}
    rest = list(args)
    while rest and rest[0].startswith("-") and rest[0] != "-":
        option = rest.pop(0)
        if option == "--":
            break
        if option in VALUE_OPTIONS:
            if not rest:
                return option
            options[option] = rest.pop(0)
        else:
            options[option] = ""
    return options, rest


def _code_path(package: str, data: bytes) -> str:
    """Where Android 11+ puts an installed APK: /data/app/~~RANDOM==/PACKAGE-RANDOM==/base.apk (here the
    random parts come from the APK's bytes, so one APK always lands at the same path)."""
    digest = hashlib.sha256(package.encode() + data).digest()
    outer, inner = (
        base64.urlsafe_b64encode(part).decode().rstrip("=") for part in (digest[:16], digest[16:])
    )
    return f"/data/app/~~{outer}==/{package}-{inner}==/base.apk"


def _apk_bytes(sh: Caller, options: dict[str, str], rest: list[str], io: Output) -> bytes | int:
    """The APK's bytes from stdin (-S) or the file named; an exit code after Android's error instead."""
    if "-S" in options:
        size = options["-S"]
        if not size.isdigit():
            return exception(io, "install", "java.lang.NumberFormatException", f'For input string: "{size}"')
        return sh.read_stdin(int(size))
    if not rest:
        io.err("Error: must either specify a package size or an APK file\n")
        return 1
    host = sh.phone.tree.host(rest[0] if rest[0].startswith("/") else f"{sh.cwd}/{rest[0]}")
    if host is None or not host.is_file():
        io.err(f"Error: Can't open file: {rest[0]}\n")
        return exception(
            io, "install", "java.lang.IllegalArgumentException", f"Error: Can't open file: {rest[0]}"
        )
    return host.read_bytes()


def install(sh: Caller, args: list[str], io: Output, system: dict[str, str]) -> int:
    """`pm install`; `system`: the image's packages (an APK of the same name cannot replace them)."""
    split = _split(args)
    if isinstance(split, str):
        return exception(
            io, "install", "java.lang.IllegalArgumentException", f'Argument expected after "{split}"'
        )
    options, rest = split
    data = _apk_bytes(sh, options, rest, io)
    if isinstance(data, int):
        return data
    session = 100_000_000 + zlib.crc32(data) % 900_000_000
    try:
        apk = read_apk(data, f"/data/app/vmdl{session}.tmp/base.apk")
    except ApkError as bad:
        io.out(f"Failure [{bad.code}: {bad.message}]\n")
        return 1
    if apk.package in system:
        io.out(
            f"Failure [INSTALL_FAILED_UPDATE_INCOMPATIBLE: Package {apk.package} signatures do not match "
            "previously installed version; ignoring!]\n"
        )
        return 1
    with sh.phone.lock:
        sh.phone.state.installed[apk.package] = _code_path(apk.package, data)
    io.out("Success\n")
    return 0


def uninstall(sh: Caller, args: list[str], io: Output) -> int:
    """`pm uninstall [-k] [--user N] [--versionCode V] PACKAGE`: only what `pm install` put there goes; the
    image's packages and unknown names fail as Android answers them for all users."""
    rest = list(args)
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("--user", "--versionCode") else rest[1:]
    if not rest:
        io.err("Error: package name not specified\n")
        return 1
    package = rest[0]
    with sh.phone.lock:
        removed = sh.phone.state.installed.pop(package, None)
        sh.phone.state.grants = {g for g in sh.phone.state.grants if not g.startswith(package + " ")}
    if removed is None:
        io.out("Failure [DELETE_FAILED_INTERNAL_ERROR]\n")
        return 1
    io.out("Success\n")
    return 0
