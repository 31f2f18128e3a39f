"""Messages: SMS rows shown with the sender's contact name (looked up in the contacts provider by number, as
Google Messages does), and what sending writes: the thread of that address (or a new one), `type` 2 (sent),
the phone's time. A recipient typed as a contact's name is sent to that contact's number.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from virtual_phone.records.record_source import DataContext, Record, TableSource, register_source
from virtual_phone.schema.appdata_schema import Value
from virtual_phone.schema.screen_data import RecordList

PACKAGE = "com.google.android.apps.messaging"
CONTACTS = "com.google.android.contacts"
PHONE = "vnd.android.cursor.item/phone_v2"
SENT = 2


def digits(number: object) -> str:
    return re.sub(r"\D", "", str(number or ""))


def _contacts(ctx: DataContext) -> list[tuple[str, str]]:
    """(display name, number digits) of every contact's phone number."""
    db = ctx.database(CONTACTS)
    if db is None:
        return []
    _, rows = db.query(
        "SELECT r.display_name, d.data1 FROM data d JOIN raw_contacts r ON r._id = d.raw_contact_id "
        "WHERE d.mimetype = ? AND r.deleted = 0",
        [PHONE],
    )
    return [(str(name or ""), digits(number)) for name, number in rows]


def contact_name(ctx: DataContext, address: object) -> str:
    """The name of the contact with this number, else the address as it is."""
    want = digits(address)
    for name, number in _contacts(ctx):
        if want and number and (want == number or (len(want) >= 7 and number.endswith(want[-7:]))):
            return name
    return str(address or "")


def canonical(number: str) -> str:
    """A typed number as the Messages app stores it: E.164 in the phone's country (US), separators gone
    (`555 0100` → `+15550100`, `+1 555-0142` → `+15550142`), as AOSP Messaging's
    PhoneUtils.getCanonicalBySystemLocale formats recipients with libphonenumber."""
    d = digits(number)
    if number.strip().startswith("+") or (len(d) == 11 and d.startswith("1")):
        return "+" + d
    return "+1" + d


def _number_of(ctx: DataContext, recipient: str) -> str:
    """A recipient typed as a contact's name becomes that contact's number (digits, a leading +); a typed
    number its canonical form."""
    if digits(recipient):
        return canonical(recipient)
    for name, number in _contacts(ctx):
        if name.lower() == recipient.strip().lower() and number:
            return "+" + number
    return recipient.strip()


class SmsSource(TableSource):
    """The sms table, each row with `name` (the contact's, or the address) and `who` ("You" when sent).
    With `whole_threads`, deleting a row deletes its whole conversation."""

    def __init__(self, whole_threads: bool) -> None:
        self.whole_threads = whole_threads

    def columns(self, ctx: DataContext, package: str, table: str) -> set[str]:
        return super().columns(ctx, package, table) | {"name", "who"}

    def _named(self, ctx: DataContext, rows: list[Record]) -> list[Record]:
        for r in rows:
            r["name"] = contact_name(ctx, r.get("address"))
            r["who"] = "You" if r.get("type") == SENT else r["name"]
        return rows

    def rows(
        self, ctx: DataContext, package: str, spec: RecordList, parent: Mapping[str, object]
    ) -> list[Record]:
        return self._named(ctx, super().rows(ctx, package, spec, parent))

    def get(self, ctx: DataContext, package: str, table: str, key: str) -> Record | None:
        found = super().get(ctx, package, table, key)
        return self._named(ctx, [found])[0] if found is not None else None

    def insert(self, ctx: DataContext, package: str, table: str, values: Mapping[str, Value]) -> str:
        db = ctx.db(package)
        address = _number_of(ctx, str(values.get("address") or ""))
        if not address or not str(values.get("body") or "").strip():
            return ""  # Send stays greyed out without a recipient and a text
        threads = {digits(a): t for t, a in db.query("SELECT thread_id, address FROM sms", [])[1]}
        thread = threads.get(digits(address))
        if thread is None:
            thread = max([0, *(int(str(t)) for t in threads.values() if t is not None)]) + 1
        row: dict[str, Value] = {
            "type": SENT,
            "read": 1,
            "seen": 1,
            "creator": PACKAGE,
            "date": ctx.clock.now_ms(),
        }
        row |= {k: v for k, v in values.items() if k not in ("name", "who")}
        row |= {"address": address, "thread_id": thread}
        return str(db.insert(table, row))

    def delete(self, ctx: DataContext, package: str, table: str, key: str) -> None:
        db = ctx.db(package)
        row = db.get(table, int(key))
        if self.whole_threads and row is not None:
            db.delete(table, "thread_id = ?", [row["thread_id"]])
        else:
            db.delete_row(table, int(key))


register_source("sms", SmsSource(whole_threads=False))
register_source("conversations", SmsSource(whole_threads=True))
