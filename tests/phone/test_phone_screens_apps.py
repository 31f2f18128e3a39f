"""Clock, Calendar, Messages, Files and Markor screens driven as an agent would (taps, typed text, keys,
long presses, the time and date pickers' steppers), checked in the apps' databases, files and UI dumps."""

from __future__ import annotations

import datetime as dt
import time

import pytest
from _screens import Driver

from virtual_phone.records.pickers import (
    date_parts,
    date_text,
    neighbours,
    set_typed,
    step,
    time_parts,
    time_text,
)
from virtual_phone.state import phone_clock
from virtual_phone.state.phone_state import PhoneState

CLOCK = "com.google.android.deskclock"
CALENDAR = "com.google.android.calendar"
MESSAGES = "com.google.android.apps.messaging"
FILES = "com.google.android.documentsui"
MARKOR = "net.gsantner.markor"


@pytest.fixture
def d() -> Driver:
    return Driver()


def test_the_phones_clock_keeps_its_minute_and_its_order_whatever_the_hosts_clock_does() -> None:
    # Paired builds play the same seed minutes apart: the phone must show them the same time.
    clock = phone_clock.Clock()
    first = clock.now_ms()
    time.sleep(0.2)
    second = clock.now_ms()
    assert 0 < second - first < 100
    assert (second - phone_clock.PHONE_EPOCH_MS) < 60_000  # still 12:00 on the phone


def spinner_input(d: Driver, part: str) -> tuple[int, int]:
    """The centre of a picker spinner's EditText (android:id/numberpicker_input under android:id/PART)."""
    spinner = d.node(rid=f"android:id/{part}")
    inputs = [n for n in d.nodes() if n.resource_id == "android:id/numberpicker_input"]
    return next(n.center for n in inputs if spinner.bounds[0] <= n.center[0] < spinner.bounds[2])


def spinner_next(d: Driver, part: str) -> tuple[int, int]:
    """The centre of the Button below a spinner's value (one step on)."""
    spinner = d.node(rid=f"android:id/{part}")
    x0, _, x1, y1 = spinner.bounds
    return (x0 + x1) // 2, y1 - 20


def test_add_an_alarm_with_the_time_picker_and_a_label(d: Driver) -> None:
    d.launch(CLOCK)
    assert d.texts()[:4] == ["Alarm", "6:00 AM", "Work", "ON"]
    d.tap(desc="Add alarm")
    d.tap("Time")
    assert d.texts()[0] == "Set time" and d.node(rid="android:id/hour").cls == "android.widget.NumberPicker"
    x, y = spinner_next(d, "hour")  # 8 → 9
    d.sh(f"input tap {x} {y}")
    x, y = spinner_input(d, "minute")
    d.sh(f"input tap {x} {y}")
    assert "mInputShown=true" in d.sh("dumpsys input_method")
    d.type("5")
    x, y = spinner_next(d, "amPm")  # AM → PM
    d.sh(f"input tap {x} {y}")
    d.tap("OK")
    assert "9:05 PM" in d.texts()
    d.tap("Label")
    d.type("Gym bag")
    d.tap("Save")
    rows = d.phone.data.db(CLOCK).rows("alarm_templates", "label = ?", ["Gym bag"])
    assert [(r["hour"], r["minutes"], r["enabled"]) for r in rows] == [(21, 5, 1)]
    texts = d.texts()
    assert texts[texts.index("9:05 PM") + 1] == "Gym bag"


def test_switch_an_alarm_off_and_delete_one(d: Driver) -> None:
    d.launch(CLOCK)
    work = d.node("6:00 AM")
    switch = next(n for n in d.nodes() if n.cls == "android.widget.Switch" and n.bounds[1] >= work.bounds[1])
    assert switch.checked
    d.sh("input tap {} {}".format(*switch.center))
    db = d.phone.data.db(CLOCK)
    assert db.rows("alarm_templates", "label = 'Work'")[0]["enabled"] == 0
    d.long_press("6:15 PM")
    d.tap("Delete")
    assert d.texts()[0] == "Delete this alarm?"
    d.tap("Delete")
    assert db.count("alarm_templates", "label = 'Gym'") == 0 and "6:15 PM" not in d.texts()


def test_create_an_event_on_a_date_at_a_time(d: Driver) -> None:
    d.launch(CALENDAR)
    texts = d.texts()
    assert texts.index("Gym") < texts.index("Team meeting") < texts.index("Dentist appointment")  # by date
    d.tap(desc="Create new event")
    d.tap("Title")
    d.type("Haircut")
    d.tap("Date")
    assert d.texts()[:4] == ["Set date", "Dec", "Jan", "Feb"]  # the phone's today: Jan 1, 2026
    for _ in range(2):
        x, y = spinner_next(d, "day")
        d.sh(f"input tap {x} {y}")
    d.tap("OK")
    d.tap("Start time")
    x, y = spinner_input(d, "hour")
    d.sh(f"input tap {x} {y}")
    d.key("DEL")
    d.type("3")
    d.key("ENTER")  # OK
    d.tap("Save")
    row = d.phone.data.db(CALENDAR).rows("Events", "title = 'Haircut'")[0]
    start = dt.datetime(2026, 1, 3, 3, 0, tzinfo=dt.UTC)
    assert row["dtstart"] == int(start.timestamp() * 1000)
    assert row["dtend"] == row["dtstart"] + 3_600_000
    assert "Sat, Jan 3, 2026, 3:00 AM" in d.texts()


def test_delete_an_event_from_its_screen(d: Driver) -> None:
    d.launch(CALENDAR)
    d.tap("Dentist appointment")
    assert "Smile Dental, 14 Main St" in d.texts() and "11:00 AM - 12:00 PM" in d.texts()
    d.tap("Delete")
    d.tap("Delete")
    assert d.phone.data.db(CALENDAR).count("Events", "title = 'Dentist appointment'") == 0
    assert d.texts()[0] == "Calendar", "the event's screen closes once the event is gone"


def test_reply_in_a_thread_and_send_a_new_message_to_a_contact(d: Driver) -> None:
    d.launch(MESSAGES)
    texts = d.texts()
    assert texts[1:3] == ["+15550176", "Happy new year!"]  # newest conversation first; unknown number as is
    assert texts[texts.index("Sam Carter") + 1] == "Running 10 minutes late."
    d.tap("Sam Carter")
    d.tap("Text message")
    d.type("On my way")
    d.tap(desc="Send SMS")
    db = d.phone.data.db("com.android.providers.telephony")
    sent = db.rows("sms", "type = 2 AND body = 'On my way'")
    assert [(r["address"], r["thread_id"], r["read"]) for r in sent] == [("+15550187", 2, 1)]
    assert d.texts()[-2:] == ["You - Thu, Jan 1, 2026, 12:00 PM", "Text message"]
    d.key("BACK")
    d.key("BACK")
    d.tap(desc="Start chat")
    d.tap("To")
    d.type("Bob Nguyen")
    d.tap("Text message")
    d.type("Slides are on the way")
    d.tap("Send")
    new = db.rows("sms", "body = 'Slides are on the way'")
    assert [(r["address"], r["type"], r["thread_id"]) for r in new] == [("+15550113", 2, 3)]
    assert d.texts()[1:3] == ["Bob Nguyen", "Slides are on the way"]


def test_rename_move_and_delete_files(d: Driver) -> None:
    d.launch(FILES)
    texts = d.texts()
    assert texts[texts.index("Download") + 1] == "4 items"
    d.tap("Download")
    d.long_press("cat.jpg")
    d.tap("Rename")
    assert d.node("cat.jpg").cls == "android.widget.EditText"
    d.sh("input keyevent KEYCODE_MOVE_END " + " ".join(["KEYCODE_DEL"] * 7))
    d.type("kitty.jpg")
    d.tap("OK")
    d.long_press("kitty.jpg")
    d.tap("Move to")
    d.tap("Pictures")
    d.long_press("notes_old.txt")
    d.tap("Delete")
    assert d.texts()[0] == "Delete notes_old.txt?"
    d.tap("Delete")
    assert d.sh("ls /sdcard/Download") == "boarding_pass.pdf\nreceipt_2025-12-18.pdf\n"
    assert d.sh("ls /sdcard/Pictures") == "beach.jpg\nkitty.jpg\nmountain.png\n"
    assert d.sh("cat /sdcard/Pictures/kitty.jpg") == "JPEG placeholder\n"


def test_create_a_note_and_append_a_line_to_one(d: Driver) -> None:
    d.launch(MARKOR)
    d.tap(desc="New note")
    d.tap("Title")
    d.type("Packing")
    d.tap("Note")
    d.type("passport")
    d.key("ENTER")
    d.type("charger")
    d.tap("Save")
    assert d.sh("cat /sdcard/Documents/Markor/Packing.md") == "passport\ncharger"
    d.tap("shopping_list")
    body = "# Shopping list\n- milk\n- eggs\n- coffee\n"
    d.tap(body)
    d.type("- bread")
    d.tap("Save")
    assert d.sh("cat /sdcard/Documents/Markor/shopping_list.md") == body + "- bread"


def test_a_snapshot_keeps_a_half_filled_form_and_an_open_picker(d: Driver) -> None:
    d.launch(CLOCK)
    d.tap(desc="Add alarm")
    d.tap("Label")
    d.type("Nap")
    d.tap("Time")
    saved = d.phone.state.to_json()
    restored = PhoneState.from_json(saved)
    assert restored.top.form["label"] == "Nap" and restored.top.record is None
    assert restored.dialog is not None and restored.dialog.kind == "time"
    assert restored.dialog.values == {"hour": "8", "minute": "00", "amPm": "AM"}


def test_the_pickers_wheels_wrap_carry_and_refuse_what_is_not_a_value() -> None:
    parts = time_parts("11:59")
    step("time", "minute", parts, 1)
    assert time_text(parts) == "12:00"  # 59 → 00 moves the hour on; 11 → 12 flips AM to PM
    step("time", "amPm", parts, 1)
    assert time_text(parts) == "12:00", "AM/PM does not wrap"
    assert neighbours("time", "amPm", time_parts("07:00")) == ("", "PM")
    day = date_parts("2026-12-31")
    step("date", "day", day, 1)
    assert date_text(day) == "2027-01-01"
    jan31 = date_parts("2026-01-31")
    step("date", "month", jan31, 1)
    assert date_text(jan31) == "2026-02-28", "the day stays within the new month"
    assert not set_typed("time", "minute", parts, "75") and parts["minute"] == "00"
    assert set_typed("time", "hour", parts, "07") and parts["hour"] == "7"
    assert set_typed("time", "amPm", parts, "a") and parts["amPm"] == "AM"


def test_an_alarm_without_a_label_is_saved_but_an_empty_contact_is_not(d: Driver) -> None:
    d.launch(CLOCK)
    d.tap(desc="Add alarm")
    d.tap("Save")  # the time (8:00 AM) is the alarm; a label is optional, as in DeskClock
    rows = d.phone.data.db(CLOCK).rows("alarm_templates", "hour = 8 AND minutes = 0")
    assert [(r["label"], r["enabled"]) for r in rows] == [("", 1)]
    d.launch("com.google.android.contacts")
    d.tap(desc="Create contact")
    d.tap("Save")
    assert d.phone.data.db("com.android.providers.contacts").count("raw_contacts") == 6
