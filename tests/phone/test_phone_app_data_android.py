"""App data as Android keeps it (issue 55, section 6): what an Android 14 emulator answers for the apps' data,
each with where that answer comes from.

- legacy `content://contacts/phones` rows carry `display_name` (ContactsProvider2's LegacyApiSupport
  projection of People.Phones, which includes the person's display name);
- `pm clear` of a provider package deletes its database: the provider starts again without records;
- `am start` takes `-e` as `--es` (Intent.parseCommandArgs), and VIEW on a content URI opens the app that
  shows that provider's records (Contacts for content://contacts/people/);
- the telephony database has Telephony.Threads' `threads` (and `canonical_addresses`), kept from `sms` as
  MmsSmsDatabaseHelper's triggers keep it;
- the emulator console's `sms send NUMBER TEXT` delivers an SMS to the inbox and answers `OK`;
- an all-day event shows `All day` where a timed one shows its time (Google Calendar);
- `dumpsys window` reports the display rotation (WindowOrientationListener.dump:
  `mCurrentRotation=ROTATION_0`).
"""

from __future__ import annotations

from _screens import Driver

from virtual_phone.adb.console import Console
from virtual_phone.phone import Phone
from virtual_phone.shell.command_line import Shell

TELEPHONY_DB = "/data/data/com.android.providers.telephony/databases/mmssms.db"


def run(phone: Phone, line: str) -> tuple[str, str, int]:
    out, rc = Shell(phone).run(line)
    return out.stdout().decode(), out.stderr().decode(), rc


def test_legacy_phones_answer_display_name(phone: Phone) -> None:
    out = run(phone, "content query --uri content://contacts/phones --projection display_name:number")[0]
    assert out.splitlines()[0] == "Row: 0 display_name=Dana Lee, number=+1 555-0142"


def test_am_start_takes_extras_and_views_a_provider_s_records(phone: Phone) -> None:
    people = "com.google.android.contacts/com.google.android.apps.contacts.activities.PeopleActivity"
    assert run(phone, f"am start -n {people} -e q Dana --es r x --ei n 3 --ez b true") == (
        f"Starting: Intent {{ cmp={people} (has extras) }}\n",
        "",
        0,
    )
    run(phone, "input keyevent KEYCODE_HOME")
    out, err, rc = run(phone, "am start -a android.intent.action.VIEW -d content://contacts/people/")
    assert (out, err, rc) == (
        "Starting: Intent { act=android.intent.action.VIEW dat=content://contacts/people/ }\n",
        "",
        0,
    )
    assert f"ACTIVITY {people} " in run(phone, "dumpsys activity top")[0]


def test_the_telephony_database_keeps_threads(phone: Phone) -> None:
    sql = "SELECT _id, message_count, read, snippet FROM threads ORDER BY _id"
    assert run(phone, f"su 0 sqlite3 {TELEPHONY_DB} '{sql}'")[0].splitlines() == [
        "1|2|1|Yes, 12:30 at the usual place.",
        "2|2|0|Running 10 minutes late.",
        "3|1|0|Can you send me the slides before 5?",
        "4|1|1|Happy new year!",
    ]
    run(phone, "content delete --uri content://sms --where 'thread_id = 3'")
    run(phone, "content update --uri content://sms --bind read:i:1 --where 'thread_id = 2'")
    assert run(phone, f"su 0 sqlite3 {TELEPHONY_DB} 'SELECT _id, read FROM threads ORDER BY _id'")[0] == (
        "1|1\n2|1\n4|1\n"
    )


def test_the_console_delivers_an_sms_to_the_inbox(phone: Phone) -> None:
    console = Console(phone, "Pixel_API_34", lambda: None)
    assert console.command(["sms", "send", "5550123", "Your", "code", "is", "42"]) == ("OK\r\n", False)
    out = run(
        phone, "content query --uri content://sms/inbox --projection address:body:read --sort '_id DESC'"
    )[0]
    assert out.splitlines()[0] == "Row: 0 address=5550123, body=Your code is 42, read=0"
    sql = "SELECT message_count, snippet FROM threads ORDER BY _id DESC LIMIT 1"
    assert run(phone, f"su 0 sqlite3 {TELEPHONY_DB} '{sql}'")[0] == "1|Your code is 42\n"
    assert console.command(["sms", "send", "55a"])[0].startswith("KO: ")


def test_an_all_day_event_shows_all_day() -> None:
    d = Driver()
    d.launch("com.google.android.calendar")
    summary = d.node(text="Mom's birthday")
    row_texts = [n.text for n in d.nodes() if n.text and abs(n.center[1] - summary.center[1]) < 80]
    assert "Tue, Jan 13, 2026, All day" in row_texts, row_texts
    d.tap(text="Mom's birthday")
    assert "All day" in d.texts()


def test_dumpsys_window_reports_the_rotation(phone: Phone) -> None:
    out = run(phone, "dumpsys window")[0]
    assert "    mCurrentRotation=ROTATION_0\n" in out
    assert "    mEnabled=false\n" in out
    run(phone, "settings put system accelerometer_rotation 1")
    assert "    mEnabled=true\n" in run(phone, "dumpsys window")[0]


def test_an_sms_to_a_number_typed_with_spaces_is_stored_canonical() -> None:
    # AOSP Messaging (PhoneUtils.getCanonicalBySystemLocale) keeps recipients in E.164 for the phone's
    # country: `555 0100` → `+15550100`; `+1 555-0187` joins the thread of `+15550187`.
    d = Driver()
    db = d.phone.data.db("com.google.android.apps.messaging")
    for typed, text in (("555 0100", "Hello there"), ("+1 555-0187", "On my way")):
        d.sh("am force-stop com.google.android.apps.messaging")
        d.launch("com.google.android.apps.messaging")
        d.tap(desc="Start chat")
        d.tap("To")
        d.type(typed)
        d.tap("Text message")
        d.type(text)
        d.tap("Send")
    rows = [(r["address"], r["thread_id"]) for r in db.rows("sms", "type = 2 AND _id > 6")]
    assert rows == [("+15550100", 5), ("+15550187", 2)]


def test_a_contact_s_card_shows_every_number_and_address_with_its_type() -> None:
    # The card lists each phone and e-mail row with its type's label (ContactsContract.CommonDataKinds
    # Phone/Email getTypeLabel: 2 Mobile, 3 Work, 1 Home ...); the list row shows the first number.
    d = Driver()
    d.launch("com.google.android.contacts")
    d.tap("Bob Nguyen")
    texts = d.texts()
    at = texts.index("+1 555-0113")
    assert texts[at : at + 4] == ["+1 555-0113", "Mobile", "+1 555-0199", "Work"]
    d.sh(
        "content insert --uri content://com.android.contacts/data --bind raw_contact_id:i:3 "
        "--bind mimetype:s:vnd.android.cursor.item/email_v2 --bind data1:s:bob@example.com --bind data2:s:1"
    )
    texts = d.texts()
    assert texts[texts.index("bob@example.com") + 1] == "Home"
