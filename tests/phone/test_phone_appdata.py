"""The phone's app data store: SQLite per app from the YAML `data:` sections, snapshots, pm clear."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from virtual_phone.errors import PhoneConfigError
from virtual_phone.phone import Phone
from virtual_phone.schema.app_schema import APPS_DIR, load_catalog
from virtual_phone.shell.command_line import Shell
from virtual_phone.state.appdata import DataError

CONTACTS = "com.google.android.contacts"
CLOCK = "com.google.android.deskclock"
SMS_OWNER = "com.android.providers.telephony"


def run(phone: Phone, line: str) -> tuple[str, int]:
    out, rc = Shell(phone).run(line)
    return out.stdout().decode() + out.stderr().decode(), rc


def test_every_app_with_data_has_its_default_records(phone: Phone) -> None:
    # Every table of every app's YAML that lists default rows holds them: an app added is checked as it is.
    expected = {
        pkg: {name: len(table.rows) for name, table in spec.tables.items() if table.rows}
        for pkg, spec in load_catalog().data_specs().items()
        if spec.database
    }
    assert {CONTACTS, CLOCK, "com.google.android.calendar"} <= {p for p, tables in expected.items() if tables}
    for pkg, tables in expected.items():
        db = phone.data.db(pkg)
        for table, rows in tables.items():
            assert db.count(table) == rows, (pkg, table)
    alarms = phone.data.db(CLOCK).rows("alarm_templates", "label = ?", ["Gym"])
    assert [(a["hour"], a["minutes"], a["enabled"]) for a in alarms] == [(18, 15, 1)]
    assert phone.data.db(CLOCK).path == "/data/user_de/0/com.google.android.deskclock/databases/alarms.db"
    assert phone.data.db(SMS_OWNER) is phone.data.db("com.google.android.apps.messaging")


def test_insert_update_delete_and_versions(phone: Phone) -> None:
    db = phone.data.db(CLOCK)
    before_phone, before_db, before_store = phone.version, db.version, phone.data.version
    new_id = db.insert("alarm_templates", {"hour": 9, "minutes": 5, "label": "Dentist"})
    row = db.get("alarm_templates", new_id)
    assert row is not None and row["enabled"] == 1 and row["label"] == "Dentist"  # column default applied
    assert phone.version > before_phone and db.version > before_db and phone.data.version > before_store
    assert db.update("alarm_templates", {"enabled": 0}, "hour = ?", [9]) == 1
    assert db.update_row("alarm_templates", new_id, {"minutes": 10})
    assert db.rows("alarm_templates", "_id = ?", [new_id])[0]["minutes"] == 10
    ordered = db.rows("alarm_templates", order_by="hour DESC, minutes DESC", limit=2)
    assert [r["hour"] for r in ordered] == [22, 18]
    assert db.delete_row("alarm_templates", new_id)
    assert db.get("alarm_templates", new_id) is None
    assert not db.delete_row("alarm_templates", new_id)


def test_unknown_names_are_refused_and_values_never_become_sql(phone: Phone) -> None:
    db = phone.data.db(CONTACTS)
    with pytest.raises(DataError, match="no column named nickname"):
        db.insert("raw_contacts", {"nickname": "x"})
    with pytest.raises(DataError, match="no such table"):
        db.rows("people")
    with pytest.raises(DataError, match="not a table or column name"):
        db.rows("raw_contacts; DROP TABLE data")
    name = "Robert'); DROP TABLE data; --"
    new_id = db.insert("raw_contacts", {"display_name": name})
    assert db.get("raw_contacts", new_id)["display_name"] == name  # type: ignore[index]
    assert "data" in db.tables()
    with pytest.raises(DataError, match="syntax error"):
        db.rows("raw_contacts", "display_name = = 1")


def _change_every_app(phone: Phone) -> None:
    phone.data.db(CONTACTS).update(
        "data", {"data1": "+1 555-9999"}, "mimetype = ?", ["vnd.android.cursor.item/phone_v2"]
    )
    phone.data.db(CONTACTS).delete("raw_contacts", "_id = ?", [2])
    phone.data.db("com.google.android.apps.messaging").insert(
        "sms", {"address": "+15550000", "type": 2, "body": "hi"}
    )
    phone.data.db("com.google.android.calendar").delete("Events")
    phone.data.db(CLOCK).update("alarm_templates", {"enabled": 1})
    phone.storage.remove("/sdcard/Download/cat.jpg")
    phone.storage.write("/sdcard/Documents/Markor/new.md", b"# new\n")
    for db in phone.data.databases.values():  # and every app's first record, whichever apps there are
        table = next((t for t in db.tables() if db.count(t)), None)
        if table is not None:
            db.delete_row(table, int(str(db.rows(table, limit=1)[0]["_id"])))


def test_snapshot_load_restores_every_apps_data(phone: Phone) -> None:
    phone.save_snapshot("default_boot", 0.0)
    saved = {pkg: {t: db.rows(t) for t in db.tables()} for pkg, db in phone.data.databases.items()}
    files = phone.tree.copy()
    _change_every_app(phone)
    changed = {pkg: {t: db.rows(t) for t in db.tables()} for pkg, db in phone.data.databases.items()}
    assert all(changed[pkg] != saved[pkg] for pkg in saved), "every app's data must have changed"
    assert phone.tree.copy() != files
    assert phone.load_snapshot("default_boot")
    restored = {pkg: {t: db.rows(t) for t in db.tables()} for pkg, db in phone.data.databases.items()}
    assert restored == saved
    assert phone.tree.copy() == files
    # The store object survives the load: what a screen holds stays valid and ids continue from the snapshot.
    assert phone.data.db(CLOCK).insert("alarm_templates", {"hour": 1, "minutes": 2}) == 5


def test_pm_clear_deletes_an_apps_data_as_android_does(phone: Phone) -> None:
    clock = phone.data.db(CLOCK)
    clock.delete("alarm_templates")
    clock.insert("alarm_templates", {"hour": 5, "minutes": 55})
    phone.launch(CLOCK)
    assert run(phone, f"pm clear {CLOCK}") == ("Success\n", 0)
    assert CLOCK not in phone.state.tasks  # stopped
    assert [r["hour"] for r in clock.rows("alarm_templates")] == [6, 7, 18, 22]  # the defaults again
    # Contacts live in the provider's database: clearing the Contacts app keeps them; clearing the provider
    # deletes them.
    contacts = phone.data.db(CONTACTS)
    contacts.insert("raw_contacts", {"display_name": "Zoe"})
    assert run(phone, f"pm clear {CONTACTS}") == ("Success\n", 0)
    assert contacts.count("raw_contacts") == 7
    # The provider's database holds only the user's records: cleared, it stays empty (Android re-creates it
    # without contacts); the calendar provider keeps its local calendar, which the Calendar app makes again.
    assert run(phone, "pm clear com.android.providers.contacts") == ("Success\n", 0)
    assert contacts.count("raw_contacts") == 0 and contacts.count("data") == 0
    assert run(phone, "content query --uri content://com.android.contacts/contacts") == (
        "No result found.\n",
        0,
    )
    assert run(phone, "pm clear com.android.providers.calendar") == ("Success\n", 0)
    calendar = phone.data.db("com.google.android.calendar")
    assert (calendar.count("Events"), calendar.count("Calendars")) == (0, 1)
    assert run(phone, "pm clear com.example.nothere") == ("Failed\n", 1)  # on stderr (runClear)


def test_default_files_exist_in_their_folders(phone: Phone) -> None:
    assert phone.storage.read(
        "/storage/emulated/0/Documents/Markor/shopping_list.md",
    ).startswith(b"# Shopping")  # type: ignore[union-attr]
    assert "receipt_2025-12-18.pdf" in phone.storage.listdir("/sdcard/Download")
    assert phone.storage.is_dir("/sdcard/Documents/Markor")


def _broken_catalog(tmp_path: Path, name: str, data: str) -> Path:
    apps = tmp_path / "apps"
    shutil.copytree(APPS_DIR, apps)
    text = (apps / name).read_text()
    (apps / name).write_text(text.split("\ndata:\n")[0] + "\n" + data)
    return apps


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("data:\n  database: a.db\n  tables:\n    t:\n      columns: {x: varchar}\n", "columns.x"),
        (
            "data:\n  database: a.db\n  tables:\n    t:\n      columns: {x: integer}\n      rows: [{y: 1}]\n",
            "rows[0] has unknown column 'y'",
        ),
        (
            "data:\n  database: a.db\n  tables:\n    t:\n      columns: {x: integer}\n"
            "      rows: [{x: abc}]\n",
            "rows[0].x = 'abc' is not a integer",
        ),
        ("data:\n  tables:\n    t:\n      columns: {x: integer}\n", "need a `database`"),
    ],
)
def test_a_bad_data_section_fails_at_start_naming_file_and_field(
    tmp_path: Path, data: str, message: str
) -> None:
    apps = _broken_catalog(tmp_path, "clock.yaml", data)
    with pytest.raises(PhoneConfigError) as err:
        load_catalog(apps)
    assert "clock.yaml" in str(err.value) and message in str(err.value)
