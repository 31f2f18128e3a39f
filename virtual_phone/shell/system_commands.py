"""Android's system-service commands on the virtual phone: wm, getprop, and setprop, ime, sync (quiet).

Outputs follow an API 34 emulator; activity names come from the apps' data.
"""

from __future__ import annotations

from virtual_phone.shell.program import Caller, Output, command_table

SDK = 34  # Android 14

PROPS = {
    "dev.bootcomplete": "1",
    "init.svc.bootanim": "stopped",
    "ro.boot.qemu": "1",
    "ro.boot.serialno": "EMULATOR34X1X1X0",
    "ro.build.characteristics": "emulator",
    "ro.build.date": "Tue Sep 19 20:27:12 UTC 2023",
    "ro.build.date.utc": "1695155232",
    "ro.build.description": "sdk_gphone64_x86_64-userdebug 14 UE1A.230829.036 10747330 dev-keys",
    "ro.build.display.id": "sdk_gphone64_x86_64-userdebug 14 UE1A.230829.036 10747330 dev-keys",
    "ro.build.flavor": "sdk_gphone64_x86_64-userdebug",
    "ro.build.fingerprint": (
        "google/sdk_gphone64_x86_64/emu64x:14/UE1A.230829.036/10747330:userdebug/dev-keys"
    ),
    "ro.build.host": "abfarm-release-rbe-64-00032",
    "ro.build.id": "UE1A.230829.036",
    "ro.build.product": "emu64x",
    "ro.build.tags": "dev-keys",
    "ro.build.type": "userdebug",
    "ro.build.version.codename": "REL",
    "ro.build.version.incremental": "10747330",
    "ro.build.version.preview_sdk": "0",
    "ro.build.version.release": "14",
    "ro.build.version.release_or_codename": "14",
    "ro.build.version.sdk": str(SDK),
    "ro.build.version.security_patch": "2023-09-05",
    "ro.debuggable": "1",
    "ro.hardware": "ranchu",
    "ro.kernel.qemu": "1",
    "ro.product.board": "goldfish_x86_64",
    "ro.product.brand": "google",
    "ro.product.cpu.abi": "x86_64",
    "ro.product.cpu.abilist": "x86_64,arm64-v8a",
    "ro.product.first_api_level": "34",
    "ro.product.locale": "en-US",
    "ro.product.device": "emu64x",
    "ro.product.manufacturer": "Google",
    "ro.product.model": "sdk_gphone64_x86_64",
    "ro.product.name": "sdk_gphone64_x86_64",
    "ro.secure": "1",
    "ro.serialno": "EMULATOR34X1X1X0",
    "ro.sf.lcd_density": "420",
    "service.bootanim.exit": "1",
    "sys.boot_completed": "1",
}


def _wm(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    phone = sh.phone
    sub = args[0] if args else ""
    if sub == "size":
        if len(args) == 1:
            dw, dh = phone.default_size
            io.out(f"Physical size: {dw}x{dh}\n")
            if (phone.state.width, phone.state.height) != (dw, dh):
                io.out(f"Override size: {phone.state.width}x{phone.state.height}\n")
            return 0
        if args[1] == "reset":
            phone.set_size(None)
            return 0
        try:
            w, h = (int(v) for v in args[1].lower().split("x"))
            if not (100 <= w <= 8000 and 100 <= h <= 8000):
                raise ValueError
        except ValueError:
            io.err(f"Error: bad size {args[1]}\n")
            return 255
        phone.set_size((w, h))
        return 0
    if sub == "density":
        if len(args) == 1:
            io.out("Physical density: 420\n")
            if phone.state.density != 420:
                io.out(f"Override density: {phone.state.density}\n")
            return 0
        if args[1] == "reset":
            phone.set_density(None)
            return 0
        if not args[1].isdigit() or not 72 <= int(args[1]) <= 960:
            io.err(f"Error: bad number {args[1]}\n")
            return 255
        phone.set_density(int(args[1]))
        return 0
    io.err(f"Unknown command: {sub}\n")
    return 255


def _getprop(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    if not args:
        props = PROPS | {"persist.sys.timezone": sh.phone.clock.zone}
        io.out("".join(f"[{k}]: [{v}]\n" for k, v in sorted(props.items())))
        return 0
    props = PROPS | {"persist.sys.timezone": sh.phone.clock.zone}  # what setTimeZone set
    io.out(props.get(args[0], args[1] if len(args) > 1 else "") + "\n")
    return 0


def _quiet(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    return 0


COMMANDS = command_table(_wm, _getprop, setprop=_quiet, ime=_quiet, sync=_quiet)
