"""`content query|insert|update|delete` answers as Android 14's Content.java prints: rows, empty results, a
bad URI, a bad column, usage errors; the contacts, SMS and calendar providers over the apps' databases."""

from __future__ import annotations

import pytest

from virtual_phone.phone import Phone
from virtual_phone.shell.command_line import Shell
from virtual_phone.shell.content_command import java_float

PHONES = "content://com.android.contacts/data/phones"
RAW = "content://com.android.contacts/raw_contacts"
EVENTS = "content://com.android.calendar/events"
# The client frames Content.java's printStackTrace adds under every exception (the "at" lines are stand-ins).
TAIL = (
    "\tat com.android.commands.content.Content$Command.execute(Content.java:546)\n"
    "\tat com.android.commands.content.Content.main(Content.java:735)\n"
    "\tat com.android.internal.os.RuntimeInit.nativeFinishInit(Native Method)\n"
    "\tat com.android.internal.os.RuntimeInit.main(RuntimeInit.java:371)\n"
)


@pytest.fixture
def shell() -> Shell:
    return Shell(Phone("emulator-5554"))


def run(shell: Shell, line: str) -> tuple[str, str, int]:
    out, rc = shell.run(line)
    return out.stdout().decode(), out.stderr().decode(), rc


def test_rows_are_printed_as_android_prints_them(shell: Shell) -> None:
    out, err, rc = run(shell, f"content query --uri {PHONES} --projection display_name:data1")
    assert (err, rc) == ("", 0)
    assert out.splitlines()[:3] == [
        "Row: 0 display_name=Dana Lee, data1=+1 555-0142",
        "Row: 1 display_name=Sam Carter, data1=+1 555-0187",
        "Row: 2 display_name=Bob Nguyen, data1=+1 555-0113",
    ]
    assert out.endswith("\n") and len(out.splitlines()) == 6
    # Projection as Content.java splits it (spaces around ':' dropped); NULL for a null column.
    out, _, _ = run(
        shell, "content query --uri content://contacts/phones --projection 'name : label' --where _id=2"
    )
    assert out == "Row: 0 name=Dana Lee, label=NULL\n"


def test_an_empty_result_prints_no_result_found(shell: Shell) -> None:
    assert run(shell, f"content query --uri {PHONES} --where \"display_name='Nobody'\"") == (
        "No result found.\n",
        "",
        0,
    )
    # SmsProvider returns no cursor for a path it does not know: the same line.
    assert run(shell, "content query --uri content://sms/nowhere") == ("No result found.\n", "", 0)


def test_sms_boxes_default_sort_and_row_uris(shell: Shell) -> None:
    out, _, _ = run(shell, "content query --uri content://sms/sent --projection _id:address:type:body")
    assert out == (
        "Row: 0 _id=6, address=+15550176, type=2, body=Happy new year!\n"
        "Row: 1 _id=2, address=+15550142, type=2, body=Yes, 12:30 at the usual place.\n"
    )
    out, _, _ = run(shell, "content query --uri content://sms/inbox --projection _id --sort 'date ASC'")
    assert out == "Row: 0 _id=1\nRow: 1 _id=3\nRow: 2 _id=4\nRow: 3 _id=5\n"
    assert run(shell, "content query --uri content://sms/3 --projection body")[0] == (
        "Row: 0 body=The package arrived, thanks!\n"
    )


def test_a_bad_uri_is_androids_error(shell: Shell) -> None:
    out, err, rc = run(shell, "content query --uri content://com.example.nope/items")
    assert out == ""
    assert err == (
        "Error while accessing provider:com.example.nope\n"
        "java.lang.IllegalStateException: Could not find provider: com.example.nope\n" + TAIL
    )
    # Content.java catches the exception and returns from main: the exit status is 0 on Android, too.
    assert rc == 0
    _, err, _ = run(shell, "content query --uri content://com.android.contacts/nothing")
    first = err.splitlines()[:2]
    assert first == [
        "Error while accessing provider:com.android.contacts",
        "java.lang.IllegalArgumentException: Unknown URL content://com.android.contacts/nothing",
    ]
    assert err.endswith(TAIL)


def test_a_bad_column_is_androids_error(shell: Shell) -> None:
    _, err, rc = run(shell, f"content query --uri {PHONES} --projection display_name:nickname")
    assert rc == 0 and err.splitlines()[:3] == [
        "Error while accessing provider:com.android.contacts",
        "java.lang.IllegalArgumentException: Invalid column nickname",
        "\tat android.database.DatabaseUtils.readExceptionFromParcel(DatabaseUtils.java:172)",
    ]
    _, err, _ = run(shell, "content query --uri content://sms/sent --projection nickname")
    assert err.splitlines()[1] == (
        "android.database.sqlite.SQLiteException: no such column: nickname (code 1 SQLITE_ERROR): , "
        "while compiling: SELECT nickname FROM sms WHERE (type = 2) ORDER BY date DESC"
    )


def test_usage_errors_print_the_usage_then_the_error(shell: Shell) -> None:
    out, err, rc = run(shell, "content query")
    assert err == "" and rc == 0
    assert out.startswith(
        "usage: adb shell content [subcommand] [options]\n\nusage: adb shell content insert"
    )
    assert out.endswith(
        "  adb shell content gettype --uri content://media/internal/audio/media/\n\n\n"
        "[ERROR] Content provider URI not specified. Did you specify --uri argument?\n"
    )
    for line, error in [
        ("content frobnicate", "Unsupported operation: frobnicate"),
        ("content query --uri", "No value for argument: --uri"),
        (f"content query --uri {PHONES} --limit 3", "Unsupported argument: --limit"),
        (f"content insert --uri {PHONES}", "Bindings not specified. Did you specify --bind argument(s)?"),
        ("content insert --uri content://sms --bind body", "Binding not well formed: body"),
        ("content insert --uri content://sms --bind read:i:yes", 'For input string: "yes"'),
        ("content insert --uri content://sms --bind body:x:hi", "Unsupported type: x"),
    ]:
        assert run(shell, line)[0].splitlines()[-1] == f"[ERROR] {error}", line


def test_contacts_are_created_the_way_setup_scripts_do_it(shell: Shell) -> None:
    """raw contact, its id read back with a sort that carries LIMIT, then name and phone data rows."""
    assert run(
        shell,
        "content insert --uri content://com.android.contacts/raw_contacts "
        "--bind account_type:s: --bind account_name:s:",
    ) == ("", "", 0)
    out, _, _ = run(
        shell,
        f"content query --uri {RAW} --projection _id --sort '_id DESC LIMIT 1'",
    )
    assert out == "Row: 0 _id=7\n"
    for bind in (
        "mimetype:s:vnd.android.cursor.item/name --bind 'data1:s:Kevin Zhang'",
        "mimetype:s:vnd.android.cursor.item/phone_v2 --bind 'data1:s:+86 571 8502' --bind data2:i:2",
    ):
        assert (
            run(
                shell,
                f"content insert --uri content://com.android.contacts/data "
                f"--bind raw_contact_id:i:7 --bind {bind}",
            )[2]
            == 0
        )
    out, _, _ = run(
        shell, f"content query --uri {PHONES} --projection display_name:data1:data2 --where raw_contact_id=7"
    )
    assert out == "Row: 0 display_name=Kevin Zhang, data1=+86 571 8502, data2=2\n"
    # Deleting the contact takes its data rows with it.
    run(shell, "content delete --uri content://com.android.contacts/raw_contacts --where _id=7")
    assert run(shell, f"content query --uri {PHONES} --where raw_contact_id=7")[0] == "No result found.\n"


def test_sms_insert_fills_thread_and_box_and_update_delete_work(shell: Shell) -> None:
    run(
        shell,
        "content insert --uri content://sms/sent --bind address:s:+15550142 --bind 'body:s:See you at 8'",
    )
    out, _, _ = run(
        shell,
        "content query --uri content://sms/sent --projection thread_id:type:read:body "
        "--sort '_id DESC LIMIT 1'",
    )
    assert out == "Row: 0 thread_id=1, type=2, read=1, body=See you at 8\n"
    run(shell, "content update --uri content://sms/inbox --bind read:b:true --where 'read=0'")
    assert run(shell, "content query --uri content://sms/inbox --where read=0")[0] == "No result found.\n"
    run(shell, "content delete --uri content://sms/inbox")
    assert run(shell, "content query --uri content://sms --projection type")[0] == (
        "Row: 0 type=2\nRow: 1 type=2\nRow: 2 type=2\n"
    )


def test_calendar_events_insert_needs_what_the_provider_needs(shell: Shell) -> None:
    _, err, _ = run(shell, "content insert --uri content://com.android.calendar/events --bind title:s:Lunch")
    assert err.splitlines()[1] == "java.lang.IllegalArgumentException: DTSTART cannot be empty."
    run(
        shell,
        f"content insert --uri {EVENTS} --bind calendar_id:i:1 --bind title:s:Lunch "
        "--bind dtstart:l:1767700800000 --bind dtend:l:1767704400000 --bind eventTimezone:s:UTC",
    )
    out, _, _ = run(
        shell,
        "content query --uri content://com.android.calendar/events --projection title:dtstart "
        "--where \"title='Lunch'\"",
    )
    assert out == "Row: 0 title=Lunch, dtstart=1767700800000\n"


def test_values_print_as_java_prints_them() -> None:
    assert [java_float(v) for v in (1.5, 100.0, 0.001, 12345678.0, 1e-5, 0.1)] == [
        "1.5",
        "100.0",
        "0.001",
        "1.2345678E7",
        "1.0E-5",
        "0.1",
    ]


def test_an_sms_without_a_date_gets_the_phones_clock(shell: Shell) -> None:
    """The phone's clock starts at 2026-01-01 12:00 UTC: a new message sorts after every default one."""
    run(shell, "content insert --uri content://sms/inbox --bind address:s:+15550113 --bind body:s:Now")
    out, _, _ = run(shell, "content query --uri content://sms --projection body:date")
    first = out.splitlines()[0]
    assert first.startswith("Row: 0 body=Now, date=")
    assert 1_767_268_800_000 <= int(first.rsplit("=", 1)[1]) < 1_767_268_800_000 + 3_600_000
