"""The phone's userland: Android's shell (mksh R59c) and toybox (0.8.9) over the phone's own file tree.

Expected outputs are what those programs print (mksh is Android's /system/bin/sh, toybox its userland since
6.0: AOSP external/mksh and external/toybox), in the phone's tree and on its clock. The commands are the
ones public automation libraries and agent benchmarks send (see the issue that brought this userland).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from virtual_phone.phone import Phone
from virtual_phone.shell.command_line import Shell


def run(phone: Phone, line: str) -> tuple[str, str, int]:
    out, rc = Shell(phone).run(line)
    return out.stdout().decode(), out.stderr().decode(), rc


@pytest.mark.parametrize(
    ("line", "stdout", "stderr", "rc"),
    [
        ('if [ -d "/sdcard/Download" ]; then echo Exists; else echo "Does not exist"; fi', "Exists\n", "", 0),
        (
            "if [ -d /sdcard/Nope ]; then echo Exists; else echo 'Does not exist'; fi",
            "Does not exist\n",
            "",
            0,
        ),
        ("[ -f /sdcard/Download/cat.jpg ] && echo file", "file\n", "", 0),
        ("echo $((1+2))", "3\n", "", 0),
        ("for f in a b; do echo $f; done", "a\nb\n", "", 0),
        ("cd /sdcard && pwd", "/sdcard\n", "", 0),
        ("export A=1; sh -c 'echo $A'", "1\n", "", 0),
        ("echo $(echo inner) `echo old`", "inner old\n", "", 0),
        (
            "ls /sdcard/Download/*.pdf",
            "/sdcard/Download/boarding_pass.pdf\n/sdcard/Download/receipt_2025-12-18.pdf\n",
            "",
            0,
        ),
        # The phone's clock (2026-01-01 12:00 UTC), not the host's.
        ("date", "Thu Jan  1 12:00:00 UTC 2026\n", "", 0),
        ("date +%s", "1767268800\n", "", 0),
        # /sdcard is a symlink: find does not descend into it without the trailing slash, as on a device.
        ("find /sdcard -name cat.jpg", "", "", 0),
        ("find /sdcard/ -name cat.jpg", "/sdcard/Download/cat.jpg\n", "", 0),
        (
            "ls -ll /sdcard/Download/cat.jpg | cut -d ' ' -f 1,2,5-",
            "-rw-rw---- 1 17 2026-01-01 12:00:00.000000000 +0000 /sdcard/Download/cat.jpg\n",
            "",
            0,
        ),
        # Shared storage ignores mode changes (MediaProvider's FuseDaemon.cpp pf_setattr); /data/local/tmp
        # does not.
        ("chmod 777 /sdcard/Download/cat.jpg && stat -c %a /sdcard/Download/cat.jpg", "660\n", "", 0),
        (
            "touch /data/local/tmp/m && chmod 700 /data/local/tmp/m && stat -c %a /data/local/tmp/m",
            "700\n",
            "",
            0,
        ),
        ("export ANDROID_LOG_TAGS=\"''\"; exec logcat -d", "", "", 0),  # what `adb logcat -d` sends
        # mksh's diagnostics as AOSP's R59 prints them (external/mksh src/main.c error_prefix: the shell's
        # name, no `E: ` as Debian's build adds), and its exit codes (127 not found, 1 syntax, 2 cd).
        ("nosuch", "", "/system/bin/sh: nosuch: inaccessible or not found\n", 127),
        ("if true; then", "", "/system/bin/sh: syntax error: unmatched 'if'\n", 1),
        ("cd /nonexist", "", "/system/bin/sh: cd: /nonexist: No such file or directory\n", 2),
        ("cat /sdcard/none", "", "cat: /sdcard/none: No such file or directory\n", 1),
        ("kill -9 $$", "", "", 137),
    ],
)
def test_shell_and_toybox_as_on_a_device(phone: Phone, line: str, stdout: str, stderr: str, rc: int) -> None:
    assert run(phone, line) == (stdout, stderr, rc)


def test_rm_r_of_a_glob_and_mkdir_p(phone: Phone) -> None:
    assert run(phone, "mkdir -p /sdcard/T/a && touch /sdcard/T/a/x /sdcard/T/b && rm -r /sdcard/T/*")[2] == 0
    assert run(phone, "ls -A /sdcard/T") == ("", "", 0)
    assert run(phone, "find /sdcard/T/ -type f -o -type d") == ("/sdcard/T/\n", "", 0)


def test_the_phones_programs_read_and_write_the_same_state_through_pipes(phone: Phone) -> None:
    assert run(phone, "settings put global wifi_on 0 && settings get global wifi_on | sed s/0/X/") == (
        "X\n",
        "",
        0,
    )
    assert phone.get_setting("global", "wifi_on") == "0"
    out, _, rc = run(phone, "uiautomator dump > /dev/null && grep -o '<node' /sdcard/window_dump.xml | wc -l")
    assert rc == 0 and int(out) > 5
    assert run(phone, "screencap -p | head -c 4 | od -A n -t x1") == (" 89 50 4e 47\n", "", 0)
    assert run(phone, "dumpsys window | head -1 > /data/local/tmp/w; cat /data/local/tmp/w")[0] == (
        "WINDOW MANAGER WINDOWS (dumpsys window windows)\n"
    )


@pytest.mark.parametrize(
    "line",
    ["settings get global wifi_on", "getprop ro.build.version.sdk", "dumpsys window", "am", "pm path x"],
)
def test_a_plain_program_line_prints_the_same_without_the_shell(phone: Phone, line: str) -> None:
    # A plain word list runs without mksh (it would only exec the program); `;` sends it through mksh.
    assert run(phone, line) == run(phone, line + ";")


def test_su_runs_the_database_cli_as_root(phone: Phone) -> None:
    db = "/data/user_de/0/com.google.android.deskclock/databases/alarms.db"
    sql = "SELECT count(*) FROM alarm_templates;"
    assert run(phone, f"sqlite3 {db} '{sql}'")[2] == 1  # the shell user cannot open an app's database
    assert run(phone, f"su 0 sqlite3 {db} '{sql}'") == ("4\n", "", 0)
    assert run(phone, f"echo '{sql}' | su root sqlite3 {db}") == ("4\n", "", 0)
    assert run(phone, "su nosuchuser id") == ("", "su: invalid uid/gid 'nosuchuser'\n", 1)


def test_nothing_leaves_the_tree(phone: Phone) -> None:
    assert run(phone, "echo x > /etc/passwd") == (
        "",
        "/system/bin/sh: /etc/passwd: create: Read-only file system\n",
        1,
    )
    assert run(phone, "rm /sdcard; mkdir /x")[1] == (
        "rm: /sdcard: Read-only file system\nmkdir: '/x': Read-only file system\n"
    )
    assert run(phone, "ls -d /sdcard") == ("/sdcard\n", "", 0)
    # A symlink made in the shell points into the sandbox; the phone's own reads (adb pull) never follow it
    # out of the tree to the host's file of that name.
    assert run(phone, "ln -s /etc/passwd /sdcard/p && head -1 /sdcard/p") == (
        "root:x:0:0::/:/system/bin/sh\n",
        "",
        0,
    )
    assert phone.storage.read("/sdcard/p") is None


def test_snapshots_restore_what_the_shell_changed(phone: Phone) -> None:
    phone.save_snapshot("base", 0.0)
    before = phone.tree.copy()
    run(
        phone,
        "rm -r /sdcard/Download/*; mkdir -p /sdcard/New/a; echo x > /data/local/tmp/t; chmod 500 /sdcard/New",
    )
    assert phone.tree.copy() != before
    assert phone.load_snapshot("base")
    assert phone.tree.copy() == before
    assert run(phone, "ls /sdcard/Download | wc -l; ls /sdcard/New /data/local/tmp/t 2>&1 | wc -l") == (
        "4\n2\n",
        "",
        0,
    )


def test_files_the_shell_changes_re_render_the_screen_but_dumps_do_not(phone: Phone) -> None:
    version = phone.version
    run(phone, "uiautomator dump; echo x > /data/local/tmp/y")
    assert phone.version == version  # files right in /sdcard and /data/local/tmp are no app's records
    run(phone, "touch /sdcard/Download/new.txt")
    assert phone.version > version


CHILD = """
import sys, time
from virtual_phone.phone import Phone
from virtual_phone.shell.command_line import Shell
phone = Phone("emulator-5554")
print(phone.tree.root, flush=True)
Shell(phone).run("sleep 31.4159 > /dev/null 2>&1 & sleep 31.4159")
"""


def _sleepers() -> list[int]:
    pids = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().startswith(b"sleep\x0031.4159"):
                    pids.append(int(pid))
        except (OSError, ValueError):
            continue
    return pids


def test_killing_a_phone_mid_command_leaves_no_process_behind() -> None:
    assert _sleepers() == []
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        child.stdout.readline()
        deadline = time.monotonic() + 10
        while len(_sleepers()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_sleepers()) == 2, "both sleeps run in the phone's sandbox"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    deadline = time.monotonic() + 5
    while _sleepers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sleepers() == []
