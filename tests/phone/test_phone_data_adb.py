"""App data through the real adb server: content queries, files, root's sqlite3, pull/push of a database file,
and a snapshot load that puts every app's data back."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from _phones import adb, one_phone

BASE = 6484  # clear of test_phone_fleet.py (5660..5681)
fleet, serial = one_phone(BASE)
CONTACTS = "content://com.android.contacts"
ALARMS = "/data/user_de/0/com.google.android.deskclock/databases/alarms.db"

PHONES_OUT = (
    "Row: 0 display_name=Dana Lee, data1=+1 555-0142\n"
    "Row: 1 display_name=Sam Carter, data1=+1 555-0187\n"
    "Row: 2 display_name=Bob Nguyen, data1=+1 555-0113\n"
    "Row: 3 display_name=Bob Nguyen, data1=+1 555-0199\n"
    "Row: 4 display_name=Alice Moreau, data1=+33 6 12 34 56 78\n"
    "Row: 5 display_name=Daniel Levy, data1=+1 555-0164\n"
)


def shell(serial: str, command: str) -> tuple[bytes, bytes, int]:
    p = adb(serial, "shell", command)
    return p.stdout, p.stderr, p.returncode


def test_content_and_ls_answer_in_androids_format_before_and_after_a_change(serial: str) -> None:
    query = "content query --uri content://com.android.contacts/data/phones --projection display_name:data1"
    assert shell(serial, query) == (PHONES_OUT.encode(), b"", 0)
    out, err, rc = shell(serial, "content query --uri content://sms/sent")
    assert (err, rc) == (b"", 0)
    assert out.startswith(b"Row: 0 _id=6, thread_id=4, address=+15550176, person=NULL, date=1767256200000, ")
    assert out.count(b"\n") == 2 and b"body=Yes, 12:30 at the usual place., " in out
    assert shell(serial, "ls /sdcard/Download")[0] == (
        b"boarding_pass.pdf\ncat.jpg\nnotes_old.txt\nreceipt_2025-12-18.pdf\n"
    )
    # What an agent (or a task's setup) changes is what the next query reads.
    assert (
        shell(
            serial,
            "content insert --uri content://sms/sent --bind address:s:+15550142 --bind 'body:s:On my way'",
        )[2]
        == 0
    )
    out, _, _ = shell(
        serial, "content query --uri content://sms/sent --projection address:body --sort '_id DESC LIMIT 1'"
    )
    assert out == b"Row: 0 address=+15550142, body=On my way\n"
    assert shell(serial, "rm /sdcard/Download/cat.jpg && ls /sdcard/Download | wc -l")[0] == b"3\n"
    # A bad URI: Android's text on stderr (exit status 0, as Content.java returns normally).
    _, err, rc = shell(serial, "content query --uri content://com.example.nope/x")
    assert rc == 0 and err.startswith(
        b"Error while accessing provider:com.example.nope\n"
        b"java.lang.IllegalStateException: Could not find provider: com.example.nope\n"
    )


def test_root_sqlite3_and_database_pull_push(serial: str, tmp_path: Path) -> None:
    sql = "SELECT hour, minutes, label FROM alarm_templates WHERE enabled = 1 ORDER BY hour"
    _, err, rc = shell(serial, f"sqlite3 {ALARMS} '{sql}'")
    assert rc == 1 and b"unable to open database" in err
    assert adb(serial, "pull", ALARMS, str(tmp_path / "denied.db")).returncode != 0
    root = adb(serial, "root", timeout=60)
    assert root.returncode == 0 and root.stdout == b"restarting adbd as root\n", root
    deadline = time.monotonic() + 30
    while shell(serial, "id")[0][:12] != b"uid=0(root) " and time.monotonic() < deadline:
        time.sleep(0.2)
    assert shell(serial, f"sqlite3 {ALARMS} '{sql}'") == (b"6|0|Work\n18|15|Gym\n", b"", 0)
    # adb pull gets a real SQLite file; a pushed one replaces the app's database (AndroidWorld's way).
    local = tmp_path / "alarms.db"
    assert adb(serial, "pull", ALARMS, str(local)).returncode == 0
    with sqlite3.connect(local) as conn:
        assert conn.execute("SELECT count(*) FROM alarm_templates").fetchone() == (4,)
        conn.execute("INSERT INTO alarm_templates (hour, minutes, label) VALUES (9, 45, 'Dentist')")
    conn.close()
    assert adb(serial, "push", str(local), ALARMS).returncode == 0
    assert (
        shell(
            serial, f"sqlite3 {ALARMS} \"SELECT hour, minutes FROM alarm_templates WHERE label = 'Dentist'\""
        )[0]
        == b"9|45\n"
    )
    assert adb(serial, "root").stdout == b"adbd is already running as root\n"


def test_snapshot_load_restores_every_apps_data(serial: str) -> None:
    before = {
        uri: shell(serial, f"content query --uri {uri}")[0]
        for uri in (
            "content://com.android.contacts/data",
            "content://sms",
            "content://com.android.calendar/events",
        )
    }
    files = shell(serial, "ls -l /sdcard/Download /sdcard/Documents/Markor")[0]
    shell(
        serial,
        f"content delete --uri {CONTACTS}/contacts --where \"display_name='Sam Carter'\"",
    )
    shell(serial, "content delete --uri content://sms/inbox")
    shell(serial, "content update --uri content://com.android.calendar/events --bind title:s:Moved")
    shell(serial, "rm /sdcard/Download/boarding_pass.pdf; echo '# new' > /sdcard/Documents/Markor/new.md")
    after = {uri: shell(serial, f"content query --uri {uri}")[0] for uri in before}
    assert all(after[uri] != before[uri] for uri in before)
    out = adb(serial, "emu", "avd", "snapshot", "load", "default_boot").stdout.decode()
    assert "KO" not in out
    assert {uri: shell(serial, f"content query --uri {uri}")[0] for uri in before} == before
    assert shell(serial, "ls -l /sdcard/Download /sdcard/Documents/Markor")[0] == files


def test_push_and_pull_in_shared_storage_folders(serial: str, tmp_path: Path) -> None:
    local = tmp_path / "ticket.pdf"
    local.write_bytes(b"%PDF-1.4 ticket\n" * 5000)  # larger than one sync DATA chunk
    assert adb(serial, "push", str(local), "/sdcard/Download/ticket.pdf").returncode == 0
    assert b"ticket.pdf\n" in shell(serial, "ls /sdcard/Download")[0]
    assert shell(serial, "stat -c %s /sdcard/Download/ticket.pdf")[0] == b"80000\n"
    back = tmp_path / "back.pdf"
    assert adb(serial, "pull", "/storage/emulated/0/Download/ticket.pdf", str(back)).returncode == 0
    assert back.read_bytes() == local.read_bytes()
    # A folder a task's setup pushes into appears with it, as adb push creates folders.
    assert adb(serial, "push", str(local), "/sdcard/Documents/Trips/ticket.pdf").returncode == 0
    assert shell(serial, "ls /sdcard/Documents/Trips")[0] == b"ticket.pdf\n"
