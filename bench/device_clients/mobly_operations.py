"""Mobly's AndroidDevice on one phone: the operations its controller offers every test, each through Mobly.

Runs in the clients' venv with `adb` on PATH and ANDROID_ADB_SERVER_PORT set, as a Mobly user has them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from checks import Checks, client_arguments, require
from mobly.controllers import android_device
from mobly.controllers.android_device_lib import adb

Operation = Callable[[Any, Path], str | None]
BUILD_INFO_UNSET_ON_ANDROID_14 = {"build_version_sdk_full"}  # ro.build.version.sdk_full is Android 16's


def build_info(ad: Any, _work: Path) -> str:
    info = ad.build_info
    empty = sorted(k for k, v in info.items() if not v and k not in BUILD_INFO_UNSET_ON_ANDROID_14)
    require(not empty, f"build_info has no value for {empty} (getprop lacks their properties)")
    require(info["build_version_sdk"] == "34", f"build_version_sdk {info['build_version_sdk']!r}")
    return f"{info['product_name']} sdk {info['build_version_sdk']} {info['build_type']}"


def device_info(ad: Any, _work: Path) -> str:
    info = android_device.get_info([ad])[0]
    require(info["model"] == "sdk_gphone64_x86_64", f"model {info['model']!r}")
    require(ad.is_emulator, "is_emulator is False")
    return f"model {info['model']}"


def shell(ad: Any, _work: Path) -> None:
    out = ad.adb.shell(["echo", "hello", "world"])
    require(out == b"hello world\n", f"echo printed {out!r}")
    try:
        ad.adb.shell("exit 3")
    except adb.AdbError as failure:
        require(failure.ret_code == 3, f"`exit 3` gave ret_code {failure.ret_code}")
    else:
        raise AssertionError("`adb shell exit 3` raised no AdbError: the exit code was lost")


def getprop(ad: Any, _work: Path) -> None:
    sdk = ad.adb.getprop("ro.build.version.sdk")
    require(sdk == "34", f"getprop ro.build.version.sdk gave {sdk!r}")


def current_user(ad: Any, _work: Path) -> None:
    user = ad.adb.current_user_id
    require(user == 0, f"current_user_id {user!r}")


def shell_command_check(ad: Any, _work: Path) -> None:
    require(ad.adb.has_shell_command("ls"), "has_shell_command('ls') is False")
    require(not ad.adb.has_shell_command("no_such_program"), "has_shell_command('no_such_program') is True")


def push_pull(ad: Any, work: Path) -> None:
    sent, back, remote = work / "push.bin", work / "pulled.bin", "/sdcard/Download/mobly-push.bin"
    sent.write_bytes(os.urandom(200_000))
    ad.adb.push([str(sent), remote])
    ad.adb.pull([remote, str(back)])
    ad.adb.shell(["rm", remote])
    require(back.read_bytes() == sent.read_bytes(), "the pulled file differs from the pushed one")


def logcat_dump(ad: Any, _work: Path) -> str:
    out = ad.adb.logcat("-d")
    return f"{len(out.splitlines())} lines"


def logcat_service(ad: Any, _work: Path) -> str:
    """The service `create` started: alive, paused and resumed, stopped, started again (for reboot)."""
    service = ad.services.logcat
    require(service.is_alive, "the logcat service `create` started is not alive")
    service.pause()
    service.resume()
    service.stop()
    require(not service.is_alive, "still alive after stop()")
    service.start()
    require(service.is_alive, "not alive after start()")
    path = Path(ad.adb_logcat_file_path)
    require(path.exists(), f"no logcat file at {path}")
    return f"logcat file {path.stat().st_size} bytes"


def screenshot(ad: Any, work: Path) -> str:
    path = Path(ad.take_screenshot(str(work / "screenshots")))
    data = path.read_bytes()
    require(data[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG: {data[:16]!r}")
    left = ad.adb.shell(f"ls /storage/emulated/0/{path.name} 2>/dev/null || true").decode().strip()
    require(not left, f"the screenshot was not removed from the phone: {left!r}")
    return f"{len(data)} bytes"


def unroot_root(ad: Any, _work: Path) -> None:
    ad.adb.unroot()
    ad.adb.wait_for_device(timeout=60)
    require(not ad.is_adb_root, "`id -u` is 0 after adb unroot")
    ad.root_adb()
    require(ad.is_adb_root, "`id -u` is not 0 after adb root")


def boot_completed(ad: Any, _work: Path) -> None:
    require(ad.is_boot_completed(), "is_boot_completed() is False")
    ad.wait_for_boot_completion(timeout=60)


def reboot(ad: Any, _work: Path) -> None:
    ad.reboot()
    require(ad.is_boot_completed(), "not boot-completed after reboot")
    require(ad.is_adb_root, "Mobly's reboot re-roots a debuggable device; `id -u` is not 0")
    require(ad.services.logcat.is_alive, "the logcat service did not come back after the reboot")


def bug_report(ad: Any, work: Path) -> str:
    path = Path(ad.take_bug_report(destination=str(work / "bugreports"), timeout=120))
    require(path.exists() and path.stat().st_size > 0, f"bug report {path} is missing or empty")
    return f"{path.name}, {path.stat().st_size} bytes"


def forward(ad: Any, _work: Path) -> str:
    port = ad.adb.forward(["tcp:0", "tcp:8080"]).decode().strip()
    require(port.isdigit(), f"adb forward tcp:0 printed {port!r}")
    ad.adb.forward(["--remove", f"tcp:{port}"])
    return f"host port {port}"


OPERATIONS: dict[str, Operation] = {
    "build_info (adb shell getprop)": build_info,
    "device_info / model / is_emulator": device_info,
    "adb.shell (output, exit code)": shell,
    "adb.getprop": getprop,
    "adb.current_user_id (am get-current-user)": current_user,
    "adb.has_shell_command (command -v)": shell_command_check,
    "adb.push / adb.pull": push_pull,
    "adb logcat -d": logcat_dump,
    "logcat service pause/resume/stop/start": logcat_service,
    "take_screenshot": screenshot,
    "adb unroot / root_adb / is_adb_root": unroot_root,
    "is_boot_completed / wait_for_boot_completion": boot_completed,
    "reboot (handle_reboot)": reboot,
    "take_bug_report": bug_report,
    "adb.forward": forward,
}


def main() -> None:
    args = client_arguments(__doc__.splitlines()[0])
    logging.log_path = str(args.work / "mobly")  # type: ignore[attr-defined]  # where AndroidDevice logs
    checks = Checks(args.out)
    ads: list[Any] = []
    checks(
        "android_device.create (devices, root, logcat service)",
        lambda: ads.extend(android_device.create([{"serial": args.serial}])),
    )
    if not ads:  # the rest can still be measured on a device object without Mobly's services
        ads.append(android_device.AndroidDevice(args.serial))
    for name, operation in OPERATIONS.items():
        checks(name, partial(operation, ads[0], args.work))
    checks("android_device.destroy (stops services)", lambda: android_device.destroy(ads))


if __name__ == "__main__":
    main()
