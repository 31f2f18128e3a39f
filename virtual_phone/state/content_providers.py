"""Content providers over the apps' databases: which URI reads which rows, with Android's column names.

Contacts, SMS and calendar as Android 14's providers answer them; the shell's `content` command on top is
shell/content_command.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from virtual_phone.schema.appdata_schema import IDENTIFIER, Value
from virtual_phone.state.appdata import AppDatabase, AppStore, DataError

NAME = "vnd.android.cursor.item/name"
PHONE = "vnd.android.cursor.item/phone_v2"
EMAIL = "vnd.android.cursor.item/email_v2"
CONTACTS_DB = "com.android.providers.contacts"
SMS_DB = "com.android.providers.telephony"
CALENDAR_DB = "com.android.providers.calendar"


class ProviderError(Exception):
    """What the provider throws, as the Java exception class and message `content` prints."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(f"{java_class}: {message}")
        self.java_class = java_class
        self.message = message


@dataclass(frozen=True)
class Endpoint:
    """One URI path of a provider: the rows it shows (a SELECT over the app's tables) and where writes go."""

    owner: str  # package whose database holds the rows
    view: str  # SELECT giving the columns this URI shows; `_id` is the written table's `_id`
    table: str | None = None  # table that insert/update/delete change (None: read only)
    scope: str = ""  # SQL condition every row of this URI meets (`type = 2` for sms/sent)
    fixed: Mapping[str, Value] = field(default_factory=dict)  # values an insert through this URI sets
    sort: str | None = None  # default sort order
    strict: bool = True  # unknown projection column: IllegalArgumentException (strict) or SQLiteException
    on_insert: Callable[[AppDatabase, dict[str, Value]], None] | None = None  # fill computed columns
    after_write: tuple[str, ...] = ()  # SQL keeping derived columns true (display_name, cascades)


_DATA_VIEW = (
    "SELECT d._id AS _id, d.raw_contact_id AS raw_contact_id, r._id AS contact_id, d.mimetype AS mimetype, "
    "d.is_primary AS is_primary, d.data1 AS data1, d.data2 AS data2, d.data3 AS data3, "
    "r.display_name AS display_name, r.account_name AS account_name, r.account_type AS account_type, "
    "r.starred AS starred FROM data d JOIN raw_contacts r ON r._id = d.raw_contact_id WHERE r.deleted = 0"
)
_CONTACT_SYNC = (
    "DELETE FROM data WHERE raw_contact_id NOT IN (SELECT _id FROM raw_contacts)",
    f"UPDATE raw_contacts SET display_name = COALESCE((SELECT data1 FROM data WHERE data.raw_contact_id = "
    f"raw_contacts._id AND mimetype = '{NAME}' ORDER BY _id LIMIT 1), display_name)",
)


def _contacts() -> dict[str, Endpoint]:
    raw = (
        "SELECT _id, _id AS contact_id, account_name, account_type, deleted, display_name, starred, "
        "times_contacted FROM raw_contacts"
    )
    contacts = (
        "SELECT r._id AS _id, r.display_name AS display_name, r.starred AS starred, "
        "r.times_contacted AS times_contacted, EXISTS (SELECT 1 FROM data p WHERE p.raw_contact_id = r._id "
        f"AND p.mimetype = '{PHONE}') AS has_phone_number FROM raw_contacts r WHERE r.deleted = 0"
    )
    return {
        "raw_contacts": _contact_endpoint(raw, "raw_contacts"),
        "contacts": _contact_endpoint(contacts, "raw_contacts"),
        "data": _contact_endpoint(_DATA_VIEW, "data"),
        "data/phones": _contact_endpoint(_DATA_VIEW, "data", f"mimetype = '{PHONE}'"),
        "data/emails": _contact_endpoint(_DATA_VIEW, "data", f"mimetype = '{EMAIL}'"),
    }


def _contact_endpoint(view: str, table: str, scope: str = "") -> Endpoint:
    return Endpoint(owner=CONTACTS_DB, view=view, table=table, scope=scope, after_write=_CONTACT_SYNC)


def _legacy_contacts() -> dict[str, Endpoint]:
    """The pre-2.0 `contacts` authority (android.provider.Contacts), still answered by ContactsProvider."""
    phones = (
        "SELECT d._id AS _id, d.raw_contact_id AS person, d.is_primary AS isprimary, "
        "CAST(d.data2 AS INTEGER) AS type, d.data1 AS number, d.data3 AS label, r.display_name AS name, "
        "r.display_name AS display_name "
        f"FROM data d JOIN raw_contacts r ON r._id = d.raw_contact_id WHERE d.mimetype = '{PHONE}' "
        "AND r.deleted = 0"
    )
    people = (
        "SELECT r._id AS _id, r.display_name AS name, r.display_name AS display_name, r.starred AS starred, "
        "r.times_contacted AS times_contacted, (SELECT p.data1 FROM data p "
        f"WHERE p.raw_contact_id = r._id AND p.mimetype = '{PHONE}' "
        "ORDER BY p.is_primary DESC, p._id LIMIT 1) AS number "
        "FROM raw_contacts r WHERE r.deleted = 0"
    )
    return {
        "phones": Endpoint(owner=CONTACTS_DB, view=phones),
        "people": Endpoint(owner=CONTACTS_DB, view=people, table="raw_contacts", after_write=_CONTACT_SYNC),
    }


def _sms_defaults(db: AppDatabase, values: dict[str, Value]) -> None:
    """What SmsProvider fills in: the address's thread, the time, read for anything not received."""
    if values.get("thread_id") is None:
        found = db.query("SELECT thread_id FROM sms WHERE address = ? LIMIT 1", [values.get("address")])[1]
        top = db.query("SELECT COALESCE(MAX(thread_id), 0) + 1 FROM sms")[1][0][0]
        values["thread_id"] = found[0][0] if found else top
    values.setdefault("date", db.clock.now_ms())
    values.setdefault("type", 1)
    if values["type"] != 1:
        values.setdefault("read", 1)
        values.setdefault("seen", 1)


def _sms() -> dict[str, Endpoint]:
    boxes = {"": None, "inbox": 1, "sent": 2, "draft": 3, "outbox": 4, "failed": 5, "queued": 6}
    return {
        path: Endpoint(
            owner=SMS_DB,
            view="SELECT * FROM sms",
            table="sms",
            scope="" if box is None else f"type = {box}",
            fixed={} if box is None else {"type": box},
            sort="date DESC",
            strict=False,
            on_insert=_sms_defaults,
        )
        for path, box in boxes.items()
    }


def _calendar_checks(db: AppDatabase, values: dict[str, Value]) -> None:
    """CalendarProvider2 refuses an event without a start, a time zone, or an end or duration."""
    if values.get("dtstart") is None:
        raise ProviderError("java.lang.IllegalArgumentException", "DTSTART cannot be empty.")
    if values.get("eventTimezone") is None:
        raise ProviderError("java.lang.IllegalArgumentException", "EVENT_TIMEZONE cannot be empty.")
    if values.get("dtend") is None and values.get("duration") is None:
        raise ProviderError(
            "java.lang.IllegalArgumentException", "DTEND and DURATION cannot both be null for an event."
        )
    if values.get("calendar_id") is None:
        raise ProviderError("java.lang.IllegalArgumentException", "New events must specify a calendar id")


def _calendar() -> dict[str, Endpoint]:
    events = (
        "SELECT e._id AS _id, e.calendar_id AS calendar_id, e.title AS title, "
        "e.eventLocation AS eventLocation, e.description AS description, e.dtstart AS dtstart, "
        "e.dtend AS dtend, e.eventTimezone AS eventTimezone, "
        "e.duration AS duration, e.allDay AS allDay, e.rrule AS rrule, e.hasAlarm AS hasAlarm, "
        "e.eventStatus AS eventStatus, e.organizer AS organizer, e.deleted AS deleted, "
        "c.calendar_displayName AS calendar_displayName, c.account_name AS account_name, "
        "c.account_type AS account_type FROM Events e LEFT JOIN Calendars c ON c._id = e.calendar_id"
    )
    return {
        "events": Endpoint(owner=CALENDAR_DB, view=events, table="Events", on_insert=_calendar_checks),
        "calendars": Endpoint(owner=CALENDAR_DB, view="SELECT * FROM Calendars", table="Calendars"),
    }


# Authority → path → endpoint. A path ending in a number is that row (`content://sms/5`).
PROVIDERS: dict[str, dict[str, Endpoint]] = {
    "com.android.contacts": _contacts(),
    "contacts": _legacy_contacts(),
    "sms": _sms(),
    "com.android.calendar": _calendar(),
}
# What a provider does with a path it does not know: SmsProvider logs it and returns no cursor.
UNKNOWN_IS_EMPTY = frozenset({"sms"})


@dataclass(frozen=True)
class Target:
    """A parsed URI: its endpoint, the row id a trailing number names, and the URI text (for messages)."""

    uri: str
    authority: str
    endpoint: Endpoint | None
    row_id: int | None


_URI = re.compile(r"^content://([^/?#]*)(/[^?#]*)?")


def authority_of(uri: str) -> str:
    """The URI's authority as android.net.Uri parses it (`null` when it has none)."""
    m = _URI.match(uri)
    return m.group(1) if m and m.group(1) else "null"


def resolve(uri: str) -> Target:
    """The endpoint a content URI names. ProviderError(IllegalStateException) if no provider has it."""
    m = _URI.match(uri)
    authority = authority_of(uri)
    if authority not in PROVIDERS:
        raise ProviderError("java.lang.IllegalStateException", f"Could not find provider: {authority}")
    path = (m.group(2) if m and m.group(2) else "").strip("/")
    row_id = None
    last = path.rsplit("/", 1)
    if last[-1].isdigit():
        row_id = int(last[-1])
        path = last[0] if len(last) == 2 else ""
    endpoint = PROVIDERS[authority].get(path)
    if endpoint is None and authority not in UNKNOWN_IS_EMPTY:
        raise ProviderError("java.lang.IllegalArgumentException", f"Unknown URL {uri}")
    return Target(uri, authority, endpoint, row_id)


def database(store: AppStore, endpoint: Endpoint) -> AppDatabase:
    return store.db(endpoint.owner)


def _scope(target: Target, where: str | None) -> tuple[str, list[Value]]:
    """The WHERE clause: the URI's scope, its row id, then the caller's selection, each in parentheses."""
    assert target.endpoint is not None
    parts: list[str] = []
    args: list[Value] = []
    if target.endpoint.scope:
        parts.append(f"({target.endpoint.scope})")
    if target.row_id is not None:
        parts.append("(_id = ?)")
        args.append(target.row_id)
    if where:
        parts.append(f"({where})")
    return (" WHERE " + " AND ".join(parts) if parts else ""), args


def _sqlite_error(e: DataError, sql: str) -> ProviderError:
    return ProviderError(
        "android.database.sqlite.SQLiteException", f"{e} (code 1 SQLITE_ERROR): , while compiling: {sql}"
    )


def query(
    store: AppStore, target: Target, projection: list[str] | None, where: str | None, sort: str | None
) -> tuple[list[str], list[tuple[Value, ...]]] | None:
    """Rows for `content query`: column names and rows, or None where Android's provider gives no cursor."""
    ep = target.endpoint
    if ep is None:
        return None
    db = database(store, ep)
    columns = db.query(f"SELECT * FROM ({ep.view}) LIMIT 0")[0]
    for col in projection or []:
        if col not in columns and ep.strict:
            raise ProviderError("java.lang.IllegalArgumentException", f"Invalid column {col}")
        if not IDENTIFIER.match(col):
            raise ProviderError("android.database.sqlite.SQLiteException", f'unrecognized token: "{col}"')
    select = ", ".join(projection) if projection else "*"
    clause, args = _scope(target, where)
    order = sort or ep.sort
    shown = f"SELECT {select} FROM {ep.table or 'view'}{clause}" + (f" ORDER BY {order}" if order else "")
    sql = f"SELECT {select} FROM ({ep.view}){clause}" + (f" ORDER BY {order}" if order else "")
    try:
        return db.query(sql, args)
    except DataError as e:
        raise _sqlite_error(e, shown) from e


def _writable(target: Target) -> tuple[Endpoint, str]:
    ep = target.endpoint
    if ep is None or ep.table is None:
        raise ProviderError("java.lang.UnsupportedOperationException", f"Unknown uri: {target.uri}")
    return ep, ep.table


def insert(store: AppStore, target: Target, values: dict[str, Value]) -> int | None:
    """`content insert`: the new row's `_id` (None where the provider ignores the URI)."""
    if target.endpoint is None:
        return None
    ep, table = _writable(target)
    db = database(store, ep)
    row = {**values, **ep.fixed}
    if ep.on_insert is not None:
        ep.on_insert(db, row)
    try:
        new_id = db.insert(table, row)
    except DataError as e:
        cols = ",".join(row)
        raise _sqlite_error(e, f"INSERT INTO {table}({cols}) VALUES ({','.join('?' * len(row))})") from e
    _after_write(db, ep)
    return new_id


def update(store: AppStore, target: Target, values: dict[str, Value], where: str | None) -> int:
    if target.endpoint is None:
        return 0
    ep, table = _writable(target)
    db = database(store, ep)
    clause, args = _scope(target, where)
    try:
        count = db.update(table, values, f"_id IN (SELECT _id FROM ({ep.view}){clause})", args)
    except DataError as e:
        raise _sqlite_error(e, f"UPDATE {table} SET {','.join(f'{c}=?' for c in values)}{clause}") from e
    _after_write(db, ep)
    return count


def delete(store: AppStore, target: Target, where: str | None) -> int:
    if target.endpoint is None:
        return 0
    ep, table = _writable(target)
    db = database(store, ep)
    clause, args = _scope(target, where)
    try:
        count = db.delete(table, f"_id IN (SELECT _id FROM ({ep.view}){clause})", args)
    except DataError as e:
        raise _sqlite_error(e, f"DELETE FROM {table}{clause}") from e
    _after_write(db, ep)
    return count


def _after_write(db: AppDatabase, ep: Endpoint) -> None:
    for sql in ep.after_write:
        db.execute(sql)
