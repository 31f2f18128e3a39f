"""Conformance: `adb shell CMD` through the real adb binary, byte for byte against what an Android 14 emulator
prints (stdout, stderr, exit code), one case per Android command the phone provides and for the shell and
toybox. Each case names the source of its expected output: an AOSP file (Android 14 branch paths) or toybox's.

Outputs that hold a changing value (a hash, a time) are tested for their shape in test_phone_android14.py;
differences from a device that remain are listed in docs/virtual_phone.md (sqlite3's version, SELinux
contexts, GNU stand-ins for applets Debian's toybox lacks).
"""

from __future__ import annotations

import pytest
from _phones import adb, one_phone

from virtual_phone.state.owners import can_own

BASE = 6420
fleet, serial = one_phone(BASE)

SETTINGS = "frameworks/base/packages/SettingsProvider/src/com/android/providers/settings/SettingsService.java"
AM = "frameworks/base/services/core/java/com/android/server/am/ActivityManagerShellCommand.java"
PM = "frameworks/base/services/core/java/com/android/server/pm/PackageManagerShellCommand.java"
WM = "frameworks/base/services/core/java/com/android/server/wm/WindowManagerShellCommand.java"
CASES = [
    # (command, stdout, stderr, exit code, source)
    ("settings get global wifi_on", "1\n", "", 0, f"{SETTINGS}: getForUser prints the value"),
    ("settings get global no_such_key", "null\n", "", 0, f"{SETTINGS}: a missing key prints null"),
    ("settings put global stay_on_while_plugged_in 0", "", "", 0, f"{SETTINGS}: put prints nothing"),
    ("svc wifi enable", "", "", 0, "frameworks/base/cmds/svc/src/com/android/commands/svc/WifiCommand.java"),
    (
        "cmd statusbar collapse",
        "",
        "",
        0,
        "frameworks/base/services/core/java/com/android/server/statusbar/StatusBarShellCommand.java",
    ),
    (
        "input tap 540 1200",
        "",
        "",
        0,
        "frameworks/base/services/core/java/com/android/server/input/InputShellCommand.java",
    ),
    ("input keyevent KEYCODE_HOME", "", "", 0, "InputShellCommand.java: keyevent prints nothing"),
    (
        "uiautomator dump /sdcard/window_dump.xml",
        "UI hierchary dumped to: /sdcard/window_dump.xml\n",
        "",
        0,
        "frameworks/testing/uiautomator/cmds/uiautomator/src/com/android/commands/uiautomator/DumpCommand.java"
        " (its own spelling, hierchary)",
    ),
    ("wm size", "Physical size: 1080x2400\n", "", 0, f"{WM}: runDisplaySize"),
    ("wm density", "Physical density: 420\n", "", 0, f"{WM}: runDisplayDensity"),
    ("getprop ro.build.version.sdk", "34\n", "", 0, "system/core/toolbox/getprop.cpp: the value, a newline"),
    ("getprop no.such.property", "\n", "", 0, "getprop.cpp: an unset property prints an empty line"),
    ("am force-stop com.android.settings", "", "", 0, f"{AM}: runForceStop prints nothing"),
    (
        "am start -n com.foo/.Bar",
        "Starting: Intent { cmp=com.foo/.Bar }\n",
        "Error type 3\nError: Activity class {com.foo/com.foo.Bar} does not exist.\n",
        0,
        f"{AM}: runAmStart (START_CLASS_NOT_FOUND), Intent.toShortString",
    ),
    ("pm clear com.example.nothere", "", "Failed\n", 1, f"{PM}: runClear, the observer's false: stderr, 1"),
    ("pm path com.example.nothere", "", "", 1, f"{PM}: runPath, no package: nothing, 1"),
    (
        "content query --uri content://com.android.contacts/contacts --projection display_name --where _id=1",
        "Row: 0 display_name=Dana Lee\n",
        "",
        0,
        "frameworks/base/cmds/content/src/com/android/commands/content/Content.java: QueryCommand",
    ),
    ("service check alarm", "Service alarm: found\n", "", 0, "frameworks/native/cmds/service/service.cpp"),
    (
        "service call alarm 3 s16 UTC",
        "Result: Parcel(00000000    '....')\n",
        "",
        0,
        "service.cpp + Parcel's text form; IAlarmManager.aidl: 3 = setTimeZone",
    ),
    ("service call nosuch 1", "", "service: Service nosuch does not exist\n", 10, "service.cpp"),
    ("logcat -c", "", "", 0, "system/logging/logcat/logcat.cpp: -c clears and prints nothing"),
    # The shell (AOSP external/mksh R59) and toybox (external/toybox).
    ("echo $((1+2)); exit 3", "3\n", "", 3, "mksh: arithmetic expansion, exit status"),
    ("nosuch", "", "/system/bin/sh: nosuch: inaccessible or not found\n", 127, "external/mksh src/exec.c"),
    ("date", "Thu Jan  1 12:00:00 UTC 2026\n", "", 0, "toybox toys/posix/date.c: %a %b %e %H:%M:%S %Z %Y"),
    (
        "ls /sdcard/nothere",
        "",
        "ls: /sdcard/nothere: No such file or directory\n",
        1,
        "toybox toys/posix/ls.c",
    ),
    ("cat /sdcard/Download/cat.jpg | wc -c", "17\n", "", 0, "toybox toys/posix/wc.c"),
]
USERS = [
    (
        "id",
        "uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),1011(adb),1015(sdcard_rw),"
        "1028(sdcard_r),1078(ext_data_rw),1079(ext_obb_rw),3001(net_bt_admin),3002(net_bt),3003(inet),"
        "3006(net_bw_stats),3009(readproc),3011(uhid),3012(readtracefs)\n",
        "",
        0,
        "toybox toys/posix/id.c; packages/modules/adb/daemon/main.cpp drop_privileges (no SELinux context)",
    ),
    (
        "ls /data/data",
        "",
        "ls: /data/data: Permission denied\n",
        1,
        "toybox ls.c; /data/data is system:system 0771",
    ),
    ("su 0 id -u", "0\n", "", 0, "system/extras/su/su.cpp"),
    ("su nosuch id", "", "su: invalid uid/gid 'nosuch'\n", 1, "su.cpp: pwtoid"),
]


@pytest.mark.parametrize(("command", "stdout", "stderr", "rc", "source"), CASES, ids=[c[0] for c in CASES])
def test_adb_shell_prints_what_android_14_prints(
    serial: str, command: str, stdout: str, stderr: str, rc: int, source: str
) -> None:
    done = adb(serial, "shell", command)
    assert (done.stdout.decode(), done.stderr.decode(), done.returncode) == (stdout, stderr, rc), source


@pytest.mark.skipif(not can_own(), reason="Android's users need a phone started as root")
@pytest.mark.parametrize(("command", "stdout", "stderr", "rc", "source"), USERS, ids=[c[0] for c in USERS])
def test_adb_shell_runs_as_android_s_shell_user(
    serial: str, command: str, stdout: str, stderr: str, rc: int, source: str
) -> None:
    done = adb(serial, "shell", command)
    assert (done.stdout.decode(), done.stderr.decode(), done.returncode) == (stdout, stderr, rc), source
