"""Every kind of AdbRequest android_env's AdbCallParser takes, as its components and tasks send them.

Each entry names the request, what a device answers (the status, and what the response must hold), in the
order they run: later ones read what earlier ones changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from android_env.proto import adb_pb2
from checks import require

R = adb_pb2.AdbRequest
S = R.SettingsRequest
PM = R.PackageManagerRequest
D = R.DumpsysRequest
SETTINGS_HOME = "com.android.settings/com.android.settings.homepage.SettingsHomepageActivity"
PUSHED = b"pushed by android_env\n"
PUSH_PATH = "/sdcard/Download/android_env.txt"
KEY = "android_env_bench"  # a settings key of no meaning to Android, put and deleted in each namespace


@dataclass(frozen=True)
class Request:
    name: str
    request: Any  # adb_pb2.AdbRequest
    verify: Callable[[Any], str | None] | None = None
    status: str = "OK"  # the AdbResponse status a device gets
    refusal: bytes = b""  # set: a device refuses the command, adb exits non-zero and prints this


def holds(field: Callable[[Any], bytes], needle: bytes) -> Callable[[Any], str | None]:
    def verify(response: Any) -> str:
        out = field(response)
        require(needle in out, f"output lacks {needle!r}: {out[:300]!r}")
        return f"{len(out)} bytes"

    return verify


def equals(field: Callable[[Any], object], expected: object) -> Callable[[Any], str | None]:
    def verify(response: Any) -> None:
        require(field(response) == expected, f"got {field(response)!r}, a device gives {expected!r}")

    return verify


def not_empty(field: Callable[[Any], Any]) -> Callable[[Any], str | None]:
    def verify(response: Any) -> str:
        value = field(response)
        require(len(value) > 0, "empty")
        return f"{len(value)} items" if not isinstance(value, bytes) else f"{len(value)} bytes"

    return verify


def activity_requests() -> list[Request]:
    start = R.StartActivity
    out = holds(lambda r: r.start_activity.output, b"Status: ok")
    return [
        Request("start_activity (am start -W -n)", R(start_activity=start(full_activity=SETTINGS_HOME)), out),
        Request(
            "start_activity force_stop (am start -S -W -n)",
            R(start_activity=start(full_activity=SETTINGS_HOME, force_stop=True)),
            out,
        ),
        Request(
            "start_activity extra_args (--es)",
            R(start_activity=start(full_activity=SETTINGS_HOME, extra_args=["--es", "from", "bench"])),
            out,
        ),
        Request(
            "start_activity of a missing activity -> INTERNAL_ERROR",
            R(start_activity=start(full_activity="com.android.settings/.NoSuchActivity")),
            status="INTERNAL_ERROR",
        ),
        Request(
            "get_current_activity (am stack list | grep)",
            R(get_current_activity=R.GetCurrentActivity()),
            equals(lambda r: r.get_current_activity.full_activity, SETTINGS_HOME),
        ),
        Request(
            "dumpsys activity PKG PKG (AppScreenChecker's view hierarchy)",
            R(dumpsys=D(service="activity", args=["com.android.settings", "com.android.settings"])),
            holds(lambda r: r.dumpsys.output, b"View Hierarchy:"),
        ),
        Request(
            "start_screen_pinning (am stack list; am task lock N)",
            R(start_screen_pinning=R.StartScreenPinning(full_activity=SETTINGS_HOME)),
        ),
        Request(
            "generic: am task lock stop",
            R(generic=R.GenericRequest(args=["shell", "am", "task", "lock", "stop"])),
            holds(lambda r: r.generic.output, b"not in lockTaskMode"),
        ),
        Request("force_stop (am force-stop)", R(force_stop=R.ForceStop(package_name="com.android.settings"))),
    ]


def input_requests() -> list[Request]:
    button = R.PressButton.Button
    requests = [
        Request(f"press_button {name} (input keyevent)", R(press_button=R.PressButton(button=value)))
        for name, value in (("HOME", button.HOME), ("BACK", button.BACK), ("ENTER", button.ENTER))
    ]
    return [
        *requests,
        Request("tap (input tap)", R(tap=R.Tap(x=540, y=1200))),
        Request("input_text (input text)", R(input_text=R.InputText(text="hello"))),
        Request("send_broadcast (am broadcast -a)", R(send_broadcast=R.SendBroadcast(action="bench.ACTION"))),
        Request(
            "send_broadcast with component (-n)",
            R(
                send_broadcast=R.SendBroadcast(
                    action="bench.ACTION", component="com.android.settings/.Receiver"
                )
            ),
        ),
        Request(
            "get_orientation (dumpsys input)",
            R(get_orientation=R.GetOrientationRequest()),
            equals(lambda r: r.get_orientation.orientation, 0),
        ),
    ]


def file_requests() -> list[Request]:
    return [
        Request("push", R(push=R.Push(content=PUSHED, path=PUSH_PATH))),
        Request("pull", R(pull=R.Pull(path=PUSH_PATH)), equals(lambda r: r.pull.content, PUSHED)),
    ]


def settings_requests() -> list[Request]:
    requests = []
    for space in (S.Namespace.SYSTEM, S.Namespace.SECURE, S.Namespace.GLOBAL):
        name, key = S.Namespace.Name(space).lower(), KEY
        out = lambda r: r.settings.output  # noqa: E731
        requests += [
            Request(f"settings put {name}", R(settings=S(name_space=space, put=S.Put(key=key, value="7")))),
            Request(
                f"settings get {name}",
                R(settings=S(name_space=space, get=S.Get(key=key))),
                equals(out, b"7\n"),
            ),
            Request(
                f"settings list {name}", R(settings=S(name_space=space, list=S.List())), holds(out, b"=7\n")
            ),
            Request(f"settings delete {name}", R(settings=S(name_space=space, delete_key=S.Delete(key=key)))),
        ]
    mode = S.Reset.Mode
    for space, how in (
        (S.Namespace.SECURE, S.Reset(mode=mode.UNTRUSTED_DEFAULTS)),
        (S.Namespace.SECURE, S.Reset(mode=mode.UNTRUSTED_CLEAR)),
        (S.Namespace.GLOBAL, S.Reset(mode=mode.TRUSTED_DEFAULTS)),
        (S.Namespace.GLOBAL, S.Reset(package_name="com.android.settings")),
    ):
        what = how.package_name or mode.Name(how.mode).lower()
        label = f"settings reset {S.Namespace.Name(space).lower()} {what}"
        requests.append(Request(label, R(settings=S(name_space=space, reset=how))))
    return requests


def package_requests() -> list[Request]:
    items = lambda r: r.package_manager.list.items  # noqa: E731
    what = PM.List
    return [
        Request(
            "pm list packages", R(package_manager=PM(list=what(packages=what.Packages()))), not_empty(items)
        ),
        Request(
            "pm list features", R(package_manager=PM(list=what(features=what.Features()))), not_empty(items)
        ),
        Request(
            "pm list libraries",
            R(package_manager=PM(list=what(libraries=what.Libraries()))),
            not_empty(items),
        ),
        Request(
            "pm clear",
            R(package_manager=PM(clear=PM.Clear(package_name="com.google.android.deskclock"))),
            holds(lambda r: r.package_manager.output, b"Success"),
        ),
        Request(
            "pm grant",
            R(
                package_manager=PM(
                    grant=PM.Grant(
                        package_name="com.google.android.contacts",
                        permissions=["android.permission.READ_CONTACTS", "android.permission.WRITE_CONTACTS"],
                    )
                )
            ),
        ),
        Request(
            "install_apk of a file that is no APK (adb install -r -t -g)",
            R(install_apk=R.InstallApk(blob=R.InstallApk.Blob(contents=b"not an apk"))),
            refusal=b"Failure [INSTALL_PARSE_FAILED_NOT_APK",
        ),
        Request(
            "uninstall_package of an absent package (pm list packages only)",
            R(uninstall_package=R.UninstallPackage(package_name="com.example.absent")),
            holds(lambda r: r.error_message.encode(), b"not installed"),
            status="UNDEFINED",  # android_env leaves the status unset when it skips the uninstall
        ),
    ]


def dumpsys_requests() -> list[Request]:
    out = lambda r: r.dumpsys.output  # noqa: E731
    focus, level = holds(out, b"mCurrentFocus"), D.PriorityLevel
    # dumpsys.cpp heads each service of a multi-service dump "DUMP OF SERVICE [PRIORITY ]NAME:"
    each_service = holds(out, b"DUMP OF SERVICE ")
    return [
        Request("dumpsys window", R(dumpsys=D(service="window")), focus),
        Request("dumpsys -l", R(dumpsys=D(list_only=True)), holds(out, b"window")),
        Request("dumpsys -t 10 window", R(dumpsys=D(service="window", timeout_sec=10)), focus),
        Request("dumpsys -T 5000 window", R(dumpsys=D(service="window", timeout_ms=5000)), focus),
        *(
            Request(f"dumpsys --priority {p}", R(dumpsys=D(priority=getattr(level, p))), each_service)
            for p in ("NORMAL", "HIGH", "CRITICAL")
        ),
        Request("dumpsys --skip window,input", R(dumpsys=D(skip_services=["window", "input"])), each_service),
        Request(
            "dumpsys input --proto", R(dumpsys=D(service="input", proto=True)), holds(out, b"INPUT MANAGER")
        ),
    ]


def generic_requests() -> list[Request]:
    out = lambda r: r.generic.output  # noqa: E731
    return [
        Request(
            "generic: shell echo",
            R(generic=R.GenericRequest(args=["shell", "echo", "hi"])),
            equals(out, b"hi\n"),
        ),
        Request(
            "generic: get-state", R(generic=R.GenericRequest(args=["get-state"])), equals(out, b"device\n")
        ),
    ]


def all_requests() -> list[Request]:
    return [
        *activity_requests(),
        *input_requests(),
        *file_requests(),
        *settings_requests(),
        *package_requests(),
        *dumpsys_requests(),
        *generic_requests(),
    ]
