"""What Mobly's AndroidDevice and android_env's AdbController send besides the observation commands, answered
as Android 14 (a userdebug emulator) answers them; the sources in AOSP are named at each test.

In-process: the phone's shell run directly (the `phone` fixture). Through adb (`serial`): what needs adbd's
services (an APK streamed to `cmd package install`, a logcat stream that stays open, a pulled bug report).
"""

from __future__ import annotations

import io
import os
import re
import struct
import subprocess
import time
import zipfile
from pathlib import Path

from _phones import ADB, adb, one_phone

from virtual_phone.phone import Phone
from virtual_phone.shell.command_line import Shell

BASE = 5690
fleet, serial = one_phone(BASE)
NO_INDEX = 0xFFFFFFFF


def run(phone: Phone, line: str) -> tuple[str, str, int]:
    out, rc = Shell(phone).run(line)
    return out.stdout().decode(), out.stderr().decode(), rc


def binary_manifest(package: str, version_code: int) -> bytes:
    """A compiled AndroidManifest.xml holding only <manifest package=... android:versionCode=...>, laid out
    as aapt2 writes one (libs/androidfw ResourceTypes.h: string pool, then a start-element chunk)."""
    strings = ["versionCode", "package", "manifest", package, "http://schemas.android.com/apk/res/android"]
    data, offsets = b"", b""
    for s in strings:
        offsets += struct.pack("<I", len(data))
        data += struct.pack("<H", len(s)) + s.encode("utf-16-le") + b"\0\0"
    data += b"\0" * (-len(data) % 4)
    start = 28 + len(offsets)
    pool = (
        struct.pack("<HHIIIIII", 0x0001, 28, start + len(data), len(strings), 0, 0, start, 0) + offsets + data
    )
    attributes = struct.pack("<IIIHBBI", 4, 0, NO_INDEX, 8, 0, 0x10, version_code) + struct.pack(
        "<IIIHBBI", NO_INDEX, 1, 3, 8, 0, 0x03, 3
    )
    body = struct.pack("<IIHHHHHH", NO_INDEX, 2, 20, 20, 2, 0, 0, 0) + attributes
    element = struct.pack("<HHIII", 0x0102, 16, 16 + len(body), 1, NO_INDEX) + body
    return struct.pack("<HHI", 0x0003, 8, 8 + len(pool) + len(element)) + pool + element


def apk(package: str) -> bytes:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("AndroidManifest.xml", binary_manifest(package, 7))
        archive.writestr("classes.dex", b"dex\n035\0")
    return data.getvalue()


# ---- am, pm: frameworks/base services/core/java/com/android/server/am/ActivityManagerShellCommand.java,
# ---- .../server/pm/PackageManagerShellCommand.java
def test_am_get_current_user_is_the_system_user(phone: Phone) -> None:
    assert run(phone, "am get-current-user") == ("0\n", "", 0)


def test_pm_list_libraries_prints_library_lines_sorted(phone: Phone) -> None:
    out, _, rc = run(phone, "pm list libraries")
    names = [line.removeprefix("library:") for line in out.splitlines()]
    assert rc == 0 and all(line.startswith("library:") for line in out.splitlines())
    assert names == sorted(names) and {"android.test.runner", "org.apache.http.legacy"} <= set(names)


def test_pm_clear_reads_one_option_as_run_clear_does(phone: Phone) -> None:
    clock = "com.google.android.deskclock"
    assert run(phone, f"pm clear {clock}") == ("Success\n", "", 0)
    assert run(phone, f"pm clear --user 0 {clock}") == ("Success\n", "", 0)
    # runClear skips an option other than --user alone: `-f 0 PKG` (android_env's) asks to clear "0".
    assert run(phone, f"pm clear -f 0 {clock}") == ("", "Failed\n", 1)
    assert run(phone, "pm clear com.example.absent") == ("", "Failed\n", 1)
    assert run(phone, "pm clear") == ("", "Error: no package specified\n", 1)


def test_pm_install_reads_the_package_from_the_apk_s_manifest(phone: Phone) -> None:
    run(phone, "true")  # the shell's tree is ready
    host = phone.tree.host("/data/local/tmp/app.apk")
    assert host is not None
    host.write_bytes(apk("com.example.bench"))
    assert run(phone, "pm install -r -t -g /data/local/tmp/app.apk") == ("Success\n", "", 0)
    assert run(phone, "pm list packages -3") == ("package:com.example.bench\n", "", 0)
    path = run(phone, "pm path com.example.bench")[0]
    assert re.fullmatch(r"package:/data/app/~~[\w-]{22}==/com\.example\.bench-[\w-]{22}==/base\.apk\n", path)
    assert run(phone, "pm uninstall com.example.bench") == ("Success\n", "", 0)
    assert run(phone, "pm list packages -3") == ("", "", 0)
    assert run(phone, "pm uninstall com.example.bench") == ("Failure [DELETE_FAILED_INTERNAL_ERROR]\n", "", 1)


def test_pm_install_refuses_what_is_no_apk(phone: Phone) -> None:
    run(phone, "echo 'not an apk' > /data/local/tmp/bad.apk")
    out, _, rc = run(phone, "pm install /data/local/tmp/bad.apk")
    # ApkLiteParseUtils: NOT_APK when ApkAssets cannot open the file ("Failed to load asset path").
    assert rc == 1 and re.fullmatch(
        r"Failure \[INSTALL_PARSE_FAILED_NOT_APK: Failed to parse (/data/app/vmdl\d+\.tmp/base\.apk): "
        r"Failed to load asset path \1\]\n",
        out,
    )
    assert run(phone, "pm install /data/local/tmp/none.apk")[1].startswith(
        "Error: Can't open file: /data/local/tmp/none.apk\n"
    )


# ---- dumpsys (frameworks/native/cmds/dumpsys/dumpsys.cpp)
def test_dumpsys_priority_dumps_that_priority_s_services_with_headers(phone: Phone) -> None:
    out, _, rc = run(phone, "dumpsys --priority CRITICAL")
    heads = re.findall(r"^DUMP OF SERVICE (.*):$", out, re.M)
    assert rc == 0 and out.startswith("Currently running services:\n  SurfaceFlinger\n")
    assert heads == [
        f"CRITICAL {s}" for s in ("SurfaceFlinger", "activity", "cpuinfo", "input", "notification")
    ] + ["CRITICAL window"]
    assert "\n" + "-" * 79 + "\nDUMP OF SERVICE CRITICAL window:\n" in out and "mCurrentFocus=" in out
    assert re.search(
        r"^--------- \d+\.\d{3}s was the duration of dumpsys window, ending at: 2026-01-01 ", out, re.M
    )
    normal = re.findall(r"^DUMP OF SERVICE (\S+):$", run(phone, "dumpsys --priority NORMAL")[0], re.M)
    assert "activity" in normal and "package" in normal and "window" not in normal  # no "NORMAL " in heads


def test_dumpsys_skip_takes_every_word_after_the_options(phone: Phone) -> None:
    out, _, rc = run(phone, "dumpsys --skip window input")
    assert rc == 0 and "  window (skipped)\n" in out and "  input (skipped)\n" in out
    heads = re.findall(r"^DUMP OF SERVICE (\S+):$", out, re.M)
    assert "window" not in heads and "input" not in heads and "activity" in heads
    # --skip takes no value: `window,input` is one name that no service has, so nothing is skipped.
    assert "DUMP OF SERVICE window:" in run(phone, "dumpsys --skip window,input")[0]


def test_dumpsys_options_and_refusals(phone: Phone) -> None:
    assert run(phone, "dumpsys --pri HIGH -l") == (
        "Currently running services:\n  connectivity\n  meminfo\n",
        "",
        0,
    )
    assert run(phone, "dumpsys --pid window") == ("542\n", "", 0)
    assert run(phone, "dumpsys -T 500 window")[0].startswith("WINDOW MANAGER WINDOWS")
    out, err, rc = run(phone, "dumpsys --priority LOW")
    assert (out, rc) == ("", 255) and err.startswith("\nusage: dumpsys\n")
    assert run(phone, "dumpsys -t x window") == ("", "Error: invalid timeout(seconds) number: 'x'\n", 255)
    assert run(phone, "dumpsys -l window")[2] == 255  # -l takes no service


# ---- log, logcat (external/toybox toys/android/log.c; system/logging/logcat/logcat.cpp, liblog logprint.cpp)
def test_log_writes_to_the_main_buffer_and_logcat_dumps_it(phone: Phone) -> None:
    assert run(phone, "log -t Bench -p w 'reward: 7' && log plain") == ("", "", 0)
    out, _, rc = run(phone, "logcat -d")
    lines = out.splitlines()
    assert rc == 0 and lines[0] == "--------- beginning of main"
    line = re.compile(r"^01-01 12:00:00\.\d{3} +(\d+) +(\d+) ([VDIWEF]) (.{8}): (.*)$")
    first, second = (line.match(s) for s in lines[1:])
    assert first is not None and first.groups()[2:] == ("W", "Bench   ", "reward: 7")
    assert second is not None and second.groups()[2:] == ("I", "log     ", "plain")
    assert first.group(1) == first.group(2)  # the pid is the tid: one thread


def test_logcat_formats_filters_and_buffers(phone: Phone) -> None:
    run(phone, "log -t Bench -p e boom; log -t Other hello")
    assert (
        run(phone, "logcat -d -v epoch Bench:V '*:S'")[0].splitlines()[1].startswith("         1767268800.")
    )
    brief = run(phone, "logcat -d -v brief -s Other")[0].splitlines()
    assert re.fullmatch(r"I/Other   \( *\d+\): hello", brief[1]) and len(brief) == 2
    assert run(phone, "logcat -d -v raw Bench:E '*:S'")[0] == "--------- beginning of main\nboom\n"
    assert run(phone, "logcat -d -t 1 -v tag")[0] == "--------- beginning of main\nI/Other   : hello\n"
    assert run(phone, "logcat -d -b events") == ("", "", 0)
    assert run(phone, "logcat -d -b nosuch") == ("", "logcat: Unknown buffer 'nosuch' listed for -b.\n", 1)
    assert run(phone, "logcat -b all -c") == ("", "", 0)
    assert run(phone, "logcat -d") == ("", "", 0)


def test_log_refuses_a_bad_priority(phone: Phone) -> None:
    assert run(phone, "log -p x hi") == ("", "log: bad -p 'x'\n", 1)


# ---- bugreportz (frameworks/native/cmds/bugreportz/main.cpp; cmds/dumpstate)
def test_bugreportz_version_progress_and_the_zip(phone: Phone) -> None:
    assert run(phone, "bugreportz -v") == ("", "1.2\n", 0)
    run(phone, "log -t Bench in-the-report")
    out, _, rc = run(phone, "bugreportz -p")
    lines = out.splitlines()
    name = "bugreport-sdk_gphone64_x86_64-UE1A.230829.036-2026-01-01-12-00-00.zip"
    assert rc == 0 and lines[0] == f"BEGIN:/bugreports/{name}" and lines[-1] == f"OK:/bugreports/{name}"
    assert all(re.fullmatch(r"PROGRESS:\d+/\d+", line) for line in lines[1:-1])
    host = phone.tree.host(f"/bugreports/{name}")
    assert host is not None
    with zipfile.ZipFile(host) as report:
        main = report.read("main_entry.txt").decode()
        text = report.read(main).decode()
        assert report.read("version.txt") == b"2.0" and main == name.replace(".zip", ".txt")
    assert text.startswith(
        "========================================================\n== dumpstate: 2026-01-01 12:00:00\n"
    )
    assert "in-the-report" in text and "DUMP OF SERVICE CRITICAL window:" in text
    assert run(phone, f"rm /bugreports/{name} && ls /bugreports/") == ("", "", 0)  # as Mobly cleans up
    assert run(phone, "bugreport")[1].startswith(
        "=" * 77 + "\nWARNING: Flat (text file, non-zipped) bugreports"
    )


# ---- file times (the phone's clock, state/phone_clock.py)
def test_files_the_phone_writes_carry_the_phone_s_clock(phone: Phone) -> None:
    out, _, _ = run(
        phone,
        "screencap -p /sdcard/Pictures/s.png && uiautomator dump /sdcard/d.xml >/dev/null && "
        "ls -l /sdcard/Pictures/s.png /sdcard/d.xml",
    )
    assert [line.split()[5:7] for line in out.splitlines()] == [["2026-01-01", "12:00"]] * 2


# ---- through adb
def test_adb_install_streams_the_apk_to_cmd_package_install(serial: str, tmp_path: Path) -> None:
    good, bad = tmp_path / "good.apk", tmp_path / "bad.apk"
    good.write_bytes(apk("com.example.streamed"))
    bad.write_bytes(b"not an apk")
    done = adb(serial, "install", "-r", "-t", "-g", str(good))
    assert done.returncode == 0 and done.stdout.decode() == "Performing Streamed Install\nSuccess\n"
    assert "package:com.example.streamed" in adb(serial, "shell", "pm list packages -3").stdout.decode()
    refused = adb(serial, "install", str(bad))
    assert (
        refused.returncode == 1
        and b"Failure [INSTALL_PARSE_FAILED_NOT_APK: Failed to parse " in refused.stderr
    )
    assert adb(serial, "uninstall", "com.example.streamed").stdout == b"Success\n"


def test_adb_logcat_stays_open_and_carries_new_lines(serial: str) -> None:
    adb(serial, "logcat", "-b", "all", "-c")
    stream = subprocess.Popen(
        [ADB, "-s", serial, "logcat", "-v", "epoch", "Bench:V", "*:S"], stdout=subprocess.PIPE, text=True
    )
    try:
        time.sleep(1.0)
        adb(serial, "shell", "log", "-t", "Bench", "reward: 7")
        assert stream.stdout is not None
        assert stream.stdout.readline() == "--------- beginning of main\n"
        assert re.fullmatch(r" +\d+\.\d{3} +\d+ +\d+ I Bench   : reward: 7\n", stream.stdout.readline())
        assert stream.poll() is None  # still following
    finally:
        stream.kill()
        stream.wait()
    # The phone's logcat ended with its client: another command still runs at once.
    assert adb(serial, "shell", "echo", "after").stdout == b"after\n"


def test_adb_bugreport_pulls_the_zip(serial: str, tmp_path: Path) -> None:
    done = adb(serial, "bugreport", str(tmp_path / "report.zip"), timeout=60)
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(tmp_path / "report.zip") as report:
        assert report.read("version.txt") == b"2.0"


def test_adb_push_keeps_the_file_s_time(serial: str, tmp_path: Path) -> None:
    sent = tmp_path / "old.txt"
    sent.write_text("x")
    os.utime(sent, (1_600_000_000, 1_600_000_000))  # 2020-09-13 12:26:40 UTC
    adb(serial, "push", str(sent), "/sdcard/Download/old.txt")
    assert adb(serial, "shell", "stat -c %Y /sdcard/Download/old.txt").stdout == b"1600000000\n"
