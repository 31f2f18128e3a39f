"""Shared storage through toybox ls, stat, rm, mv, cp, mkdir, touch; app databases through root sqlite3."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from virtual_phone.errors import PhoneStartError
from virtual_phone.phone import Phone
from virtual_phone.shell import sandbox
from virtual_phone.shell.command_line import Shell
from virtual_phone.state.owners import can_own, uid_name

ALARMS = "/data/user_de/0/com.google.android.deskclock/databases/alarms.db"


def run(phone: Phone, line: str) -> tuple[str, str, int]:
    out, rc = Shell(phone).run(line)
    return out.stdout().decode(), out.stderr().decode(), rc


def test_ls_lists_the_default_files_as_toybox_does(phone: Phone) -> None:
    assert run(phone, "ls /sdcard/Download") == (
        "boarding_pass.pdf\ncat.jpg\nnotes_old.txt\nreceipt_2025-12-18.pdf\n",
        "",
        0,
    )
    out, _, _ = run(phone, "ls -l /storage/emulated/0/Download")
    lines = out.splitlines()
    assert lines[0] == "total 16"
    # toybox's format; shared storage is the media provider's, group media_rw (a phone started as root;
    # otherwise everything is the one user's: root in the sandbox).
    owner = f"{uid_name(phone.users.media)} media_rw" if can_own() else "root root"
    assert lines[2] == f"-rw-rw---- 1 {owner} 17 2026-01-01 12:00 cat.jpg"
    assert run(phone, "ls /sdcard/Download | wc -l")[0] == "4\n"
    assert run(phone, "ls /sdcard/nothere") == ("", "ls: /sdcard/nothere: No such file or directory\n", 1)


def test_stat_prints_toybox_default_format_and_c_format(phone: Phone) -> None:
    out, _, rc = run(phone, "stat /sdcard/Download/cat.jpg")
    lines = out.splitlines()
    assert rc == 0 and lines[0] == "  File: /sdcard/Download/cat.jpg"
    assert lines[1] == "  Size: 17\t Blocks: 8\t IO Blocks: 512\t regular file"
    media = phone.users.media
    uid, gid = (
        (f"{media}/ {uid_name(media)}", " 1023/media_rw")
        if can_own()
        else ("    0/    root", "    0/    root")
    )
    assert lines[3] == f"Access: (0660/-rw-rw----)\tUid: ({uid})\tGid: ({gid})"
    assert lines[5] == "Modify: 2026-01-01 12:00:00.000000000 +0000"
    assert run(phone, "stat -c '%n %s %F' /sdcard/Download/cat.jpg /sdcard/Documents") == (
        "/sdcard/Download/cat.jpg 17 regular file\n/sdcard/Documents "
        + run(phone, "stat -c %s /sdcard/Documents")[0].strip()  # a folder's size is its file system's
        + " directory\n",
        "",
        0,
    )
    assert run(phone, "stat /sdcard/x")[1:] == ("stat: '/sdcard/x': No such file or directory\n", 1)


def test_rm_mv_cp_mkdir_touch_change_the_files_and_say_what_failed(phone: Phone) -> None:
    version = phone.version
    assert run(phone, "mv /sdcard/Download/cat.jpg /sdcard/Pictures")[2] == 0
    assert phone.version > version  # a file list looks different: screens re-render
    assert "cat.jpg" in run(phone, "ls /sdcard/Pictures")[0]
    assert run(phone, "mv /sdcard/Pictures/cat.jpg /sdcard/Pictures/kitten.jpg")[2] == 0
    assert run(phone, "cat /sdcard/Pictures/kitten.jpg")[0] == "JPEG placeholder\n"
    assert run(phone, "mv /sdcard/nope /sdcard/x")[1] == "mv: bad '/sdcard/nope': No such file or directory\n"
    assert run(phone, "mkdir /sdcard/Download")[1] == "mkdir: '/sdcard/Download': File exists\n"
    assert (
        run(phone, "mkdir /sdcard/Trips/2026")[1]
        == "mkdir: '/sdcard/Trips/2026': No such file or directory\n"
    )
    assert run(phone, "mkdir -p /sdcard/Trips/2026 && touch /sdcard/Trips/2026/plan.txt")[2] == 0
    assert run(phone, "cp -r /sdcard/Trips /sdcard/Documents")[2] == 0
    assert run(phone, "ls /sdcard/Documents/Trips/2026")[0] == "plan.txt\n"
    assert run(phone, "rm /sdcard/Trips") == ("", "rm: /sdcard/Trips: Is a directory\n", 1)
    assert (
        run(phone, "rm -r /sdcard/Trips && ls /sdcard/Trips")[1]
        == "ls: /sdcard/Trips: No such file or directory\n"
    )
    assert run(phone, "rm /sdcard/Download/notes_old.txt; ls /sdcard/Download")[0] == (
        "boarding_pass.pdf\nreceipt_2025-12-18.pdf\n"
    )
    assert run(phone, "touch /sdcard/zz/y")[1] == "touch: '/sdcard/zz/y': No such file or directory\n"
    assert run(phone, "mv /sdcard/Documents /system/x")[2] == 1


def test_sqlite3_reads_an_app_database_as_root_only(phone: Phone) -> None:
    sql = "SELECT hour, minutes, label FROM alarm_templates WHERE enabled = 1 ORDER BY hour"
    assert run(phone, f"sqlite3 {ALARMS} '{sql}'") == (
        "",
        f'Error: unable to open database "{ALARMS}": unable to open database file\n',
        1,
    )
    assert run(phone, f"su 0 sqlite3 {ALARMS} '{sql}'") == ("6|0|Work\n18|15|Gym\n", "", 0)
    phone.root = True  # after `adb root`
    assert run(phone, f'sqlite3 {ALARMS} "{sql}"')[0] == "6|0|Work\n18|15|Gym\n"
    out, _, _ = run(
        phone, f"sqlite3 -header -separator , {ALARMS} 'SELECT _id, label FROM alarm_templates LIMIT 1'"
    )
    assert out == "_id,label\n1,Work\n"
    # Writes go to the app's database, which is what the clock screens and snapshots see.
    run(phone, f"sqlite3 {ALARMS} \"UPDATE alarm_templates SET enabled = 0 WHERE label = 'Gym'\"")
    assert (
        phone.data.db("com.google.android.deskclock").rows("alarm_templates", "label = ?", ["Gym"])[0][
            "enabled"
        ]
        == 0
    )
    assert run(phone, f"echo 'SELECT count(*) FROM alarm_templates;' | sqlite3 {ALARMS}")[0] == "4\n"
    # The SQLite CLI's own error for SQL given as an argument (Debian's sqlite3 3.40.1).
    assert run(phone, f"sqlite3 {ALARMS} 'SELECT nope FROM alarm_templates'")[1:] == (
        "Error: in prepare, no such column: nope\n"
        "  SELECT nope FROM alarm_templates\n"
        "         ^--- error here\n",
        1,
    )
    contacts = "/data/user/0/com.android.providers.contacts/databases/contacts2.db"
    assert run(phone, f"sqlite3 {contacts} 'SELECT count(*) FROM raw_contacts'")[0] == "6\n"
    assert run(phone, "id; echo $USER")[0].startswith("uid=0(root) gid=0(root)")
    assert run(phone, "echo $USER") == ("root\n", "", 0)


def test_only_files_a_screen_can_show_re_render_it(phone: Phone) -> None:
    """UI dumps written at every observation (/sdcard, /data/local/tmp) keep the frame; a note's change not"""
    version = phone.version
    run(phone, "uiautomator dump /sdcard/window_dump.xml; rm -f /sdcard/window_dump.xml")
    run(phone, "uiautomator dump /data/local/tmp/d.xml")
    assert phone.version == version
    run(phone, "echo 'milk' >> /sdcard/Documents/Markor/shopping_list.md")
    assert phone.version > version


def test_sql_from_the_shell_cannot_reach_the_hosts_files(phone: Phone, tmp_path: Path) -> None:
    target = tmp_path / "copy.db"
    for sql in (f"VACUUM INTO '{target}'", f"ATTACH '{target}' AS other"):
        # The CLI runs in the sandbox, where the host's folders are not: it cannot create the file.
        _, err, rc = run(phone, f'su 0 sqlite3 {ALARMS} "{sql}"')
        assert rc != 0 and "unable to open database" in err, err
    assert not target.exists()


def test_a_host_without_the_userland_gets_an_error_naming_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_which = shutil.which
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None if name == "bwrap" else real_which(name))
    with pytest.raises(
        PhoneStartError, match=r"needs bwrap on this host: install them \(apt-get install .*bubblewrap"
    ):
        sandbox.require_tools()
