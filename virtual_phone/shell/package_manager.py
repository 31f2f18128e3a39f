"""`pm` on the virtual phone: packages of an Android 14 emulator image (data/packages.yaml plus the apps, plus
what `pm install` added: package_install.py), features, libraries, paths, a minimal dump, runtime-permission
grants, `pm clear`. Literals follow PackageManagerShellCommand.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

from virtual_phone.shell.package_install import install, uninstall
from virtual_phone.shell.program import Caller, Output, command_table, exception, object_hash

PACKAGES_FILE = Path(__file__).parent.parent / "data" / "packages.yaml"
FEATURES = (
    "reqGlEsVersion=0x30002",
    "android.hardware.audio.output",
    "android.hardware.bluetooth",
    "android.hardware.bluetooth_le",
    "android.hardware.camera",
    "android.hardware.camera.any",
    "android.hardware.camera.autofocus",
    "android.hardware.camera.front",
    "android.hardware.faketouch",
    "android.hardware.fingerprint",
    "android.hardware.location",
    "android.hardware.location.gps",
    "android.hardware.location.network",
    "android.hardware.microphone",
    "android.hardware.ram.normal",
    "android.hardware.screen.landscape",
    "android.hardware.screen.portrait",
    "android.hardware.sensor.accelerometer",
    "android.hardware.sensor.compass",
    "android.hardware.sensor.gyroscope",
    "android.hardware.sensor.light",
    "android.hardware.sensor.proximity",
    "android.hardware.telephony",
    "android.hardware.telephony.calling",
    "android.hardware.telephony.data",
    "android.hardware.telephony.gsm",
    "android.hardware.telephony.messaging",
    "android.hardware.touchscreen",
    "android.hardware.touchscreen.multitouch",
    "android.hardware.touchscreen.multitouch.distinct",
    "android.hardware.touchscreen.multitouch.jazzhand",
    "android.hardware.usb.accessory",
    "android.hardware.vulkan.level=1",
    "android.hardware.vulkan.version=4206592",
    "android.hardware.wifi",
    "android.hardware.wifi.direct",
    "android.software.activities_on_secondary_displays",
    "android.software.app_widgets",
    "android.software.autofill",
    "android.software.backup",
    "android.software.cant_save_state",
    "android.software.companion_device_setup",
    "android.software.connectionservice",
    "android.software.credentials",
    "android.software.device_admin",
    "android.software.home_screen",
    "android.software.input_methods",
    "android.software.live_wallpaper",
    "android.software.managed_users",
    "android.software.midi",
    "android.software.picture_in_picture",
    "android.software.print",
    "android.software.secure_lock_screen",
    "android.software.verified_boot",
    "android.software.voice_recognizers",
    "android.software.webview",
)
# `pm list libraries`: shared libraries an Android 14 google_apis emulator declares, a subset: the platform's
# (AOSP frameworks/base/data/etc/platform.xml and the mainline modules' permission files), Google's Maps
# library; the image's vendor and native ones are left out.
LIBRARIES = (
    "android.ext.shared",
    "android.hidl.base-V1.0-java",
    "android.hidl.manager-V1.0-java",
    "android.net.ipsec.ike",
    "android.test.base",
    "android.test.mock",
    "android.test.runner",
    "androidx.window.extensions",
    "androidx.window.sidecar",
    "com.android.future.usb.accessory",
    "com.android.location.provider",
    "com.android.media.remotedisplay",
    "com.android.mediadrm.signer",
    "com.google.android.maps",
    "javax.obex",
    "org.apache.http.legacy",
)
# Runtime and development permissions `pm grant` changes; other known ones are install-time only.
GRANTABLE = frozenset(
    "android.permission." + p
    for p in [
        "ACCESS_BACKGROUND_LOCATION",
        "ACCESS_COARSE_LOCATION",
        "ACCESS_FINE_LOCATION",
        "ACTIVITY_RECOGNITION",
        "BLUETOOTH_CONNECT",
        "BLUETOOTH_SCAN",
        "BODY_SENSORS",
        "CALL_PHONE",
        "CAMERA",
        "CHANGE_CONFIGURATION",
        "DUMP",
        "NEARBY_WIFI_DEVICES",
        "PACKAGE_USAGE_STATS",
        "POST_NOTIFICATIONS",
        "READ_CALENDAR",
        "READ_CALL_LOG",
        "READ_CONTACTS",
        "READ_EXTERNAL_STORAGE",
        "READ_LOGS",
        "READ_MEDIA_AUDIO",
        "READ_MEDIA_IMAGES",
        "READ_MEDIA_VIDEO",
        "READ_PHONE_STATE",
        "READ_SMS",
        "RECEIVE_SMS",
        "RECORD_AUDIO",
        "SEND_SMS",
        "SET_ANIMATION_SCALE",
        "WRITE_CALENDAR",
        "WRITE_CONTACTS",
        "WRITE_EXTERNAL_STORAGE",
        "WRITE_SECURE_SETTINGS",
    ]
)
INSTALL_TIME = frozenset(
    "android.permission." + p
    for p in ["ACCESS_NETWORK_STATE", "ACCESS_WIFI_STATE", "BLUETOOTH", "INTERNET", "VIBRATE", "WAKE_LOCK"]
)


@cache
def system_packages() -> dict[str, str]:
    """Package → APK path of the image's system packages."""
    data = yaml.safe_load(PACKAGES_FILE.read_text())
    assert isinstance(data, dict)
    return {str(k): str(v) for k, v in data.items()}


def image_packages(sh: Caller) -> dict[str, str]:
    """Package → APK path of what the image holds: its system packages and the phone's apps."""
    paths = dict(system_packages())
    for pkg in sh.phone.catalog.apps:
        paths.setdefault(pkg, f"/product/app/{pkg}/{pkg}.apk")
    return paths


def packages(sh: Caller) -> dict[str, str]:
    """Every package: the image's and those `pm install` added."""
    with sh.phone.lock:
        return image_packages(sh) | sh.phone.state.installed


def _list_packages(sh: Caller, args: list[str], io: Output) -> int:
    """`pm list packages [-f] [-3|-s] [FILTER]`: `package:NAME` (or `package:PATH=NAME`) per line; -3 the
    installed (third-party) ones only, -s the image's only."""
    flt = next((a for a in args if not a.startswith("-")), "")
    with sh.phone.lock:
        installed = dict(sh.phone.state.installed)
    chosen = installed if "-3" in args else image_packages(sh) if "-s" in args else packages(sh)
    show_path = "-f" in args
    for pkg, path in sorted(chosen.items()):
        if flt in pkg:
            io.out(f"package:{path + '=' if show_path else ''}{pkg}\n")
    return 0


def _list(sh: Caller, args: list[str], io: Output) -> int:
    what = args[0] if args else ""
    if what == "packages":
        return _list_packages(sh, args[1:], io)
    if what == "features":
        io.out("".join(f"feature:{f}\n" for f in FEATURES))
        return 0
    if what == "libraries":  # runListLibraries: sorted, one `library:NAME` a line
        io.out("".join(f"library:{name}\n" for name in sorted(LIBRARIES)))
        return 0
    io.err(f"Error: unknown list type '{what}'\n")
    return 255


def _path(sh: Caller, args: list[str], io: Output) -> int:
    path = packages(sh).get(args[0]) if args else None
    if path is None:
        return 1  # Android 14 prints nothing for an unknown package and exits 1
    io.out(f"package:{path}\n")
    return 0


def _dump(sh: Caller, args: list[str], io: Output) -> int:
    """`pm dump PKG` (minimal): the Packages section of `dumpsys package` for one package."""
    if not args:
        io.err("Error: no package specified\n")
        return 1
    pkg = args[0]
    path = packages(sh).get(pkg)
    io.out("DUMP OF SERVICE package:\n")
    if path is None:
        return 0
    code = path.rsplit("/", 1)[0]
    with sh.phone.lock:
        granted = sorted(g.split(" ", 1)[1] for g in sh.phone.state.grants if g.startswith(pkg + " "))
    io.out(
        f"Packages:\n  Package [{pkg}] ({object_hash(pkg)}):\n    userId=1000\n"
        f"    pkg=Package{{{object_hash(path)} {pkg}}}\n    codePath={code}\n"
        f"    resourcePath={code}\n    versionCode=34 minSdk=34 targetSdk=34\n    versionName=14\n"
        "    flags=[ SYSTEM HAS_CODE ALLOW_CLEAR_USER_DATA ]\n    User 0: ceDataInode=0 installed=true "
        "hidden=false suspended=false distractionFlags=0 stopped=false notLaunched=false enabled=0\n"
        "      runtime permissions:\n"
        + "".join(f"        {p}: granted=true, flags=[ USER_SET ]\n" for p in granted)
    )
    return 0


def _grant(sh: Caller, verb: str, args: list[str], io: Output) -> int:
    """`pm grant|revoke [--user N] PACKAGE PERMISSION`."""
    while args[:1] == ["--user"]:
        args = args[2:]
    if not args:
        io.err("Error: no package specified\n")
        return 1
    if len(args) < 2:
        io.err("Error: no permission specified\n")
        return 1
    pkg, perm = args[0], args[1]
    if pkg not in packages(sh):
        return exception(io, verb, "java.lang.IllegalArgumentException", f"Unknown package: {pkg}")
    if perm in INSTALL_TIME:
        return exception(
            io,
            verb,
            "java.lang.SecurityException",
            f"Permission {perm} requested by {pkg} is not a changeable permission type",
        )
    if perm not in GRANTABLE:
        return exception(io, verb, "java.lang.IllegalArgumentException", f"Unknown permission: {perm}")
    with sh.phone.lock:
        if verb == "grant":
            sh.phone.state.grants.add(f"{pkg} {perm}")
        else:
            sh.phone.state.grants.discard(f"{pkg} {perm}")
    return 0


def _clear(sh: Caller, args: list[str], io: Output) -> int:
    """`pm clear [--user N] PKG`: stops the app and deletes its data (its database; shared files stay).

    As PackageManagerShellCommand.runClear reads its arguments: one option at most, of which only `--user`
    means anything (with its value); another (`-f USER`, as android_env sends it) is skipped alone, so the
    word after it is taken for the package, which then is not installed: `Failed`, as on a device."""
    rest = list(args)
    if rest and rest[0].startswith("-"):
        option = rest.pop(0)
        if option == "--user" and rest:
            rest.pop(0)
        elif option == "--user":
            return exception(
                io, "clear", "java.lang.IllegalArgumentException", 'Argument expected after "--user"'
            )
        elif len(option) > 2 and option[1] != "-":
            rest.insert(0, option[2:])  # `-fX`: X is the option's value, read as the next argument
    if not rest:
        io.err("Error: no package specified\n")
        return 1
    pkg = rest[0]
    if pkg not in packages(sh):
        io.err("Failed\n")  # the clear observer reports false for a package that is not installed
        return 1
    sh.phone.force_stop(pkg)
    sh.phone.data.clear(pkg)
    sh.phone.prerender_soon()
    io.out("Success\n")
    return 0


def pm(sh: Caller, args: list[str], stdin: bytes, io: Output) -> int:
    """`pm ARGS`, which is `cmd package ARGS` on Android."""
    sub, rest = (args[0], args[1:]) if args else ("", [])
    if sub == "list":
        return _list(sh, rest, io)
    if sub == "path":
        return _path(sh, rest, io)
    if sub == "dump":
        return _dump(sh, rest, io)
    if sub in ("grant", "revoke"):
        return _grant(sh, sub, rest, io)
    if sub == "clear":
        return _clear(sh, rest, io)
    if sub == "install":
        return install(sh, rest, io, image_packages(sh))
    if sub == "uninstall":
        return uninstall(sh, rest, io)
    io.err(f"Unknown command: {sub}\n")
    return 255


COMMANDS = command_table(pm)
