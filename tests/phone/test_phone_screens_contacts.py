"""Contacts, the worked example of screens bound to app data: driven as an agent's driver drives a phone
(`input tap`, `input text`, `input keyevent`, a long press as a still swipe), checked in the app's database
and in the UI dump; and a broken screen file fails at phone start with the file and field named."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _screens import Driver

from virtual_phone.errors import PhoneConfigError
from virtual_phone.phone import Phone
from virtual_phone.schema.app_schema import APPS_DIR, load_catalog

CONTACTS = "com.google.android.contacts"
PHONE_MIME = "vnd.android.cursor.item/phone_v2"


@pytest.fixture
def d() -> Driver:
    driver = Driver()
    driver.launch(CONTACTS)
    return driver


def numbers(d: Driver, name: str) -> list[str]:
    """The phone numbers the contacts provider holds for a display name."""
    db = d.phone.data.db(CONTACTS)
    raws = db.rows("raw_contacts", "display_name = ?", [name])
    return [
        str(r["data1"])
        for raw in raws
        for r in db.rows("data", "raw_contact_id = ? AND mimetype = ?", [raw["_id"], PHONE_MIME])
    ]


def test_the_list_shows_every_contact_sorted_with_its_number(d: Driver) -> None:
    texts = d.texts()
    names = ["Alice Moreau", "Bob Nguyen", "Dana Lee", "Daniel Levy", "Priya Shah", "Sam Carter"]
    assert [t for t in texts if t in names] == names
    assert texts[texts.index("Dana Lee") + 1] == "+1 555-0142"
    row = d.node("Dana Lee")
    parents = [
        n for n in d.nodes() if n.clickable and n.bounds[1] <= row.bounds[1] and n.bounds[3] >= row.bounds[3]
    ]
    assert parents, "a contact's row is clickable"
    rows = [
        el
        for el in ET.fromstring(d.phone.dump()).iter("node")
        if el.get("class") == "android.widget.LinearLayout" and el.get("long-clickable") == "true"
    ]
    assert len(rows) == 6, "each contact's row has a long-press menu"
    assert d.node(desc="Create contact").cls == "android.widget.ImageButton"


def test_add_a_contact_with_the_keyboard_and_save(d: Driver) -> None:
    d.tap(desc="Create contact")
    assert d.node("Create contact").cls == "android.widget.TextView"
    name = d.node("Name")  # an empty EditText reports its hint as its text, as Android does
    assert name.cls == "android.widget.EditText"
    assert "mInputShown=false" in d.sh("dumpsys input_method")
    d.tap("Name")
    assert "mInputShown=true" in d.sh("dumpsys input_method")
    xml = d.phone.dump()
    field = f'text="Name" resource-id="{CONTACTS}:id/display_name" class="android.widget.EditText"'
    assert field in xml
    assert 'focused="true"' in xml
    d.type("Eve Martin")
    d.tap("Phone")
    d.type("+1 555-0100")
    d.key("DEL")
    d.type("1")
    assert d.node("+1 555-0101").cls == "android.widget.EditText"
    d.tap("Save")
    assert numbers(d, "Eve Martin") == ["+1 555-0101"]
    db = d.phone.data.db(CONTACTS)
    raw = db.rows("raw_contacts", "display_name = ?", ["Eve Martin"])[0]
    name_row = db.rows(
        "data", "raw_contact_id = ? AND mimetype = ?", [raw["_id"], "vnd.android.cursor.item/name"]
    )
    assert [(r["data1"], r["data2"], r["data3"]) for r in name_row] == [("Eve Martin", "Eve", "Martin")]
    assert "Eve Martin" in d.texts() and "+1 555-0101" in d.texts()


def test_edit_a_number_as_the_driver_clears_and_types(d: Driver) -> None:
    d.tap("Dana Lee")
    assert d.texts()[:2] == ["Dana Lee", "Dana Lee"] and "+1 555-0142" in d.texts()
    d.tap("Edit")
    field = d.node("+1 555-0142")
    assert field.cls == "android.widget.EditText"
    d.tap("+1 555-0142")
    d.sh("input keyevent KEYCODE_MOVE_END " + " ".join(["KEYCODE_DEL"] * len("+1 555-0142")))
    d.type("+1 555-7777")
    d.tap("Save")
    assert numbers(d, "Dana Lee") == ["+1 555-7777"]
    assert "+1 555-7777" in d.texts(), "back on the contact, which shows the new number"


def test_delete_from_the_long_press_menu_after_confirming(d: Driver) -> None:
    d.long_press("Bob Nguyen")
    assert d.texts() == ["Bob Nguyen", "Edit", "Delete"]
    d.tap("Delete")
    assert d.texts() == ["Delete this contact?", "Cancel", "Delete"]
    d.tap("Cancel")
    assert numbers(d, "Bob Nguyen") == ["+1 555-0113", "+1 555-0199"]
    d.long_press("Bob Nguyen")
    d.tap("Delete")
    d.tap("Delete")
    assert numbers(d, "Bob Nguyen") == []
    assert not d.phone.data.db(CONTACTS).rows("data", "raw_contact_id = 3")
    assert "Bob Nguyen" not in d.texts()


def test_a_short_press_opens_and_a_long_press_needs_the_long_press_timeout(d: Driver) -> None:
    x, y = d.node("Sam Carter").center
    d.sh(f"input swipe {x} {y} {x} {y} 100")
    assert d.texts()[0] == "Sam Carter" and "Edit" in d.texts()  # the detail screen, no menu


def test_search_filters_the_rows_and_says_when_nothing_matches(d: Driver) -> None:
    d.tap("Search contacts")
    d.type("da")
    assert [t for t in d.texts() if not t.startswith("+")] == ["Contacts", "da", "Dana Lee", "Daniel Levy"]
    d.type("x")
    assert "No results" in d.texts()
    d.key("DEL")
    d.key("DEL")
    d.key("DEL")
    assert "Sam Carter" in d.texts() and "Search contacts" in d.texts()


def test_the_screen_follows_the_database_and_shows_the_empty_state(d: Driver) -> None:
    db = d.phone.data.db(CONTACTS)
    raw = db.insert("raw_contacts", {"display_name": "Zoe Quinn"})  # behind the app's back
    db.insert("data", {"raw_contact_id": raw, "mimetype": PHONE_MIME, "data1": "+1 555-0999"})
    assert "Zoe Quinn" in d.texts() and "+1 555-0999" in d.texts()
    db.delete("data")
    db.delete("raw_contacts")
    assert d.texts() == ["Contacts", "Search contacts", "No contacts"]
    assert d.node("No contacts").resource_id == f"{CONTACTS}:id/empty_view"


def test_the_keyboard_shortens_the_window_and_a_reset_restores_contacts(d: Driver) -> None:
    d.phone.save_snapshot("start", 0.0)
    rid = f"{CONTACTS}:id/recycler_view"
    bottom = d.node(rid=rid).bounds[3]
    d.tap("Search contacts")
    assert d.node(rid=rid).bounds[3] < bottom - 500, "the list ends above the keyboard (adjustResize)"
    png = d.phone.screenshot_png()
    d.key("BACK")
    assert d.phone.screenshot_png() != png, "the keyboard is drawn"
    d.long_press("Alice Moreau")
    d.tap("Delete")
    d.tap("Delete")
    assert numbers(d, "Alice Moreau") == []
    assert d.phone.load_snapshot("start")
    assert numbers(d, "Alice Moreau") == ["+33 6 12 34 56 78"]


def _broken(tmp_path: Path, old: str, new: str) -> Path:
    shutil.copytree(APPS_DIR, tmp_path / "apps")
    path = tmp_path / "apps" / "contacts.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    return tmp_path / "apps"


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('summary: "{number}"', 'summary: "{numbr}"', "screens.list.records.summary: unknown column 'numbr'"),
        ("sort: display_name COLLATE NOCASE", "sort: nickname", "screens.list.records.where/sort/group"),
        ("column: number, input: phone", "column: phone, input: phone", "screens.edit.form.fields[1]"),
        (
            "source: contacts\n      table: contacts\n      title",
            "source: people\n      table: contacts\n      title",
            "screens.list.records.source: unknown source 'people'",
        ),
        ('header: "{display_name}"', 'header: "{when(display_name)}"', "unknown format 'when'"),
        ("{rows: phones}", "{rows: fones}", "screens.detail.record.fields[0].rows: unknown column 'fones'"),
    ],
)
def test_a_screen_that_does_not_fit_its_data_fails_at_phone_start(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    catalog = load_catalog(_broken(tmp_path, old, new))
    with pytest.raises(PhoneConfigError) as err:
        Phone("emulator-5554", catalog=catalog)
    assert message in str(err.value)
    assert str(tmp_path / "apps" / "contacts.yaml") in str(err.value)


def test_a_screen_that_opens_an_unknown_screen_fails_at_load(tmp_path: Path) -> None:
    with pytest.raises(PhoneConfigError) as err:
        load_catalog(_broken(tmp_path, "opens: detail", "opens: details"))
    assert "contacts.yaml" in str(err.value)
    assert "records.opens opens unknown screen 'details'" in str(err.value)
