"""Users and root as on a userdebug emulator: adbd's shell runs as shell (2000), as root after `adb root`,
`su` runs a command as another user, files have Android's owners and the kernel refuses the shell what
Android's refuses it. Needs a phone started as root (the only way to hand out uids); elsewhere these skip.

Expected outputs and their sources:
- `id`: toybox `toys/posix/id.c` (`uid=N(name) gid=N(name) groups=` the primary group, then the others but
  the effective one, in the kernel's sorted order); the groups are adbd's (`packages/modules/adb/daemon/
  main.cpp`, `drop_privileges`: the same minijail groups for the shell and for root). A device adds
  ` context=u:r:shell:s0` (SELinux); Debian's toybox has no SELinux, so the line ends before it.
- `su`: AOSP `system/extras/su/su.cpp` (WHO by name or number, groups kept, `invalid uid/gid`, `failed to
  exec`).
- `ls`: toybox `toys/posix/ls.c` (`ls: PATH: Permission denied`, exit 1).
"""

from __future__ import annotations

import threading
import time

import pytest

from virtual_phone.phone import Phone
from virtual_phone.shell.command_line import Shell
from virtual_phone.state.owners import can_own, uid_name

pytestmark = pytest.mark.skipif(not can_own(), reason="Android's users need a phone started as root")

GROUPS = (
    "1004(input),1007(log),1011(adb),1015(sdcard_rw),1028(sdcard_r),1078(ext_data_rw),1079(ext_obb_rw),"
    "3001(net_bt_admin),3002(net_bt),3003(inet),3006(net_bw_stats),3009(readproc),3011(uhid),3012(readtracefs)"
)
CONTACTS_DB = "/data/data/com.android.providers.contacts/databases/contacts2.db"


def run(phone: Phone, line: str) -> tuple[str, str, int]:
    out, rc = Shell(phone).run(line)
    return out.stdout().decode(), out.stderr().decode(), rc


def test_adbd_runs_the_shell_as_shell_and_as_root_after_adb_root(phone: Phone) -> None:
    shell = f"uid=2000(shell) gid=2000(shell) groups=2000(shell),{GROUPS}\n"
    root = f"uid=0(root) gid=0(root) groups=0(root),{GROUPS}\n"
    assert run(phone, "id") == (shell, "", 0)
    assert run(phone, "whoami; echo $USER") == ("shell\nshell\n", "", 0)
    phone.root = True  # what `adb root` does (adb/adbd_services.py restarts the transport around it)
    assert run(phone, "id") == (root, "", 0)
    phone.root = False
    assert run(phone, "id -u") == ("2000\n", "", 0)


def test_su_runs_a_command_as_the_user_it_names(phone: Phone) -> None:
    root = f"uid=0(root) gid=0(root) groups=0(root),{GROUPS}\n"
    assert run(phone, "su 0 id") == (root, "", 0)
    assert run(phone, "su root id") == (root, "", 0)
    assert run(phone, "su 0 su shell id -u") == ("2000\n", "", 0)
    assert run(phone, "cd /sdcard/Download && su 0 ls cat.jpg") == ("cat.jpg\n", "", 0)  # the folder is kept
    assert run(phone, "su 0 sh -c 'exit 3'")[2] == 3
    assert run(phone, "su nosuchuser id") == ("", "su: invalid uid/gid 'nosuchuser'\n", 1)
    assert run(phone, "su 0 nosuch") == ("", "su: failed to exec nosuch: No such file or directory\n", 1)
    assert run(phone, "echo 'id -u' | su")[0] == "0\n"  # no command: a shell, reading stdin


def test_app_data_is_refused_to_the_shell_user_and_open_to_root(phone: Phone) -> None:
    assert run(phone, "ls /data/data") == ("", "ls: /data/data: Permission denied\n", 1)
    assert run(phone, f"cat {CONTACTS_DB} > /dev/null") == (
        "",
        f"cat: {CONTACTS_DB}: Permission denied\n",
        1,
    )
    app = uid_name(phone.users.app_uids["com.android.providers.contacts"])
    out, _, rc = run(phone, "su 0 ls -l /data/data/com.android.providers.contacts/databases")
    assert rc == 0 and out.splitlines()[1].startswith(f"-rw-rw---- 1 {app} {app} ")
    out, _, _ = run(phone, "su 0 ls -ld /data/data/com.android.providers.contacts /data/local/tmp")
    assert [line.split()[:4] for line in out.splitlines()] == [
        ["drwx------", "3", app, app],
        ["drwxrwx--x", "2", "shell", "shell"],
    ]
    assert run(phone, f"su 0 sqlite3 {CONTACTS_DB} 'SELECT count(*) FROM raw_contacts'") == ("6\n", "", 0)


def test_shared_storage_is_the_media_provider_s_and_writable_by_the_shell(phone: Phone) -> None:
    media = uid_name(phone.users.media)
    out, _, _ = run(phone, "ls -ld /sdcard/Download /sdcard/Download/cat.jpg")
    assert [line.split()[:4] for line in out.splitlines()] == [
        ["drwxrws---", "2", media, "media_rw"],
        ["-rw-rw----", "1", media, "media_rw"],
    ]
    out, _, rc = run(
        phone,
        "echo x > /sdcard/Download/mine.txt && mkdir /sdcard/Mine && ls -ld /sdcard/Mine "
        "/sdcard/Download/mine.txt",
    )
    assert rc == 0
    assert [line.split()[:4] for line in out.splitlines()] == [
        ["-rw-rw----", "1", "shell", "media_rw"],
        ["drwxrws---", "2", "shell", "media_rw"],
    ]
    phone.storage.write("/sdcard/Download/pushed.txt", b"p")  # as adb push writes it: through the provider
    assert run(phone, "ls -l /sdcard/Download/pushed.txt")[0].split()[2:4] == [media, "media_rw"]


def test_a_snapshot_load_puts_owners_back(phone: Phone) -> None:
    run(phone, "echo x > /sdcard/Download/mine.txt")
    phone.save_snapshot("s", time.time())
    run(phone, "rm /sdcard/Download/mine.txt")
    phone.load_snapshot("s")
    assert run(phone, "ls -l /sdcard/Download/mine.txt")[0].split()[:4] == [
        "-rw-rw----",
        "1",
        "shell",
        "media_rw",
    ]


def test_root_cannot_reach_the_host_s_kernel_knobs(phone: Phone) -> None:
    assert "Read-only file system" in run(phone, "su 0 sh -c 'echo x > /proc/sys/kernel/hostname'")[1]
    assert run(phone, "su 0 mount -t tmpfs none /data/local/tmp")[1:] == (
        "mount: 'none'->'/data/local/tmp': Operation not permitted\n",
        1,
    )


def test_a_command_su_started_ends_with_its_client(phone: Phone) -> None:
    runs = []
    killer = threading.Thread(target=lambda: (time.sleep(1.0), runs[0].kill()))
    killer.start()
    Shell(phone).run_program(["/system/bin/sh", "-c", "su 0 sleep 60"], started=runs.append)
    killer.join()
    deadline = time.monotonic() + 5
    while "sleep" in run(phone, "su 0 ps -A -o ARGS")[0] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "sleep" not in run(phone, "su 0 ps -A -o ARGS")[0]


def test_without_users_every_process_is_root_and_the_programs_tell_users_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What a phone started by another user than root does (a user namespace maps that one user only).
    from virtual_phone.shell import userland
    from virtual_phone.state import storage

    monkeypatch.setattr(userland, "can_own", lambda: False)
    monkeypatch.setattr(storage, "can_own", lambda: False)
    phone = Phone("emulator-5554")
    try:
        db = "/data/user_de/0/com.google.android.deskclock/databases/alarms.db"
        assert run(phone, "id -u; echo $USER") == ("0\nshell\n", "", 0)
        assert run(phone, f"sqlite3 {db} 'SELECT count(*) FROM alarm_templates'") == (
            "",
            f'Error: unable to open database "{db}": unable to open database file\n',
            1,
        )
        assert run(phone, f"su 0 sqlite3 {db} 'SELECT count(*) FROM alarm_templates'") == ("4\n", "", 0)
        assert run(phone, "ls -l /sdcard/Download/cat.jpg")[0].split()[2:4] == ["root", "root"]
    finally:
        phone.close()
