"""Contacts: a contact is one raw_contacts row plus its data rows (name, phone, e-mail), as in Android's
contacts provider. The screens see flat records (display_name, number, email); saving writes every table.
"""

from __future__ import annotations

from collections.abc import Mapping

from virtual_phone.records.record_source import DataContext, Record, register_source, sql_rows
from virtual_phone.schema.appdata_schema import Value
from virtual_phone.schema.screen_data import RecordList
from virtual_phone.state.appdata import AppDatabase

NAME = "vnd.android.cursor.item/name"
PHONE = "vnd.android.cursor.item/phone_v2"
EMAIL = "vnd.android.cursor.item/email_v2"
MOBILE = "2"  # Phone.TYPE_MOBILE


# One pass over `data` (no correlated subquery per contact: the table has no index on raw_contact_id): each
# contact's first phone and e-mail row, primary first.
CONTACTS = f"""
WITH firsts AS (
  SELECT raw_contact_id, mimetype, data1,
         ROW_NUMBER() OVER (PARTITION BY raw_contact_id, mimetype ORDER BY is_primary DESC, _id) AS k
  FROM data WHERE mimetype IN ('{PHONE}', '{EMAIL}'))
SELECT r._id AS _id, r.display_name AS display_name, r.starred AS starred,
       MAX(CASE WHEN f.mimetype = '{PHONE}' THEN f.data1 END) AS number,
       MAX(CASE WHEN f.mimetype = '{EMAIL}' THEN f.data1 END) AS email
FROM raw_contacts r LEFT JOIN firsts f ON f.raw_contact_id = r._id AND f.k = 1
WHERE r.deleted = 0 GROUP BY r._id
"""
COLUMNS = {"_id", "display_name", "starred", "number", "email", "phones", "emails"}
# ContactsContract.CommonDataKinds.Phone.getTypeLabel / Email.getTypeLabel (frameworks/base
# core/java/android/provider/ContactsContract.java, core/res/res/values/strings.xml phoneTypeHome...):
# data2 → the label the contact card shows under each number and address; a custom type (0) shows data3.
PHONE_TYPES = {1: "Home", 2: "Mobile", 3: "Work", 4: "Work Fax", 5: "Home Fax", 6: "Pager", 7: "Other"}
EMAIL_TYPES = {1: "Home", 2: "Work", 3: "Other", 4: "Mobile"}


def _typed(db: AppDatabase, raw: int, mimetype: str, types: dict[int, str]) -> list[tuple[str, str]]:
    """A contact's numbers (or addresses), primary first, each with its type's label."""
    rows = db.query(
        "SELECT data1, data2, data3 FROM data WHERE raw_contact_id = ? AND mimetype = ? "
        "ORDER BY is_primary DESC, _id",
        [raw, mimetype],
    )[1]
    out = []
    for value, kind, label in rows:
        k = int(str(kind)) if str(kind or "").isdigit() else 7
        out.append((str(label or "Custom") if k == 0 else types.get(k, "Other"), str(value or "")))
    return out


class ContactsSource:
    """Contacts as flat records over raw_contacts and data."""

    def columns(self, ctx: DataContext, package: str, table: str) -> set[str]:
        return set(COLUMNS)

    def rows(
        self, ctx: DataContext, package: str, spec: RecordList, parent: Mapping[str, object]
    ) -> list[Record]:
        where = f" WHERE {spec.where}" if spec.where else ""
        return sql_rows(ctx.db(package), f"SELECT * FROM ({CONTACTS}){where} ORDER BY {spec.sort}", parent)

    def get(self, ctx: DataContext, package: str, table: str, key: str) -> Record | None:
        db = ctx.database(package)
        if db is None or not key.isdigit():
            return None
        rows = sql_rows(db, f"SELECT * FROM ({CONTACTS}) WHERE _id = :key", {"key": int(key)})
        if not rows:
            return None
        # The card lists every number and address with its type; the list shows the first number.
        return rows[0] | {
            "phones": _typed(db, int(key), PHONE, PHONE_TYPES),
            "emails": _typed(db, int(key), EMAIL, EMAIL_TYPES),
        }

    def insert(self, ctx: DataContext, package: str, table: str, values: Mapping[str, Value]) -> str:
        db = ctx.db(package)
        raw = db.insert("raw_contacts", {"display_name": str(values.get("display_name") or "")})
        self._write(db, raw, values)
        return str(raw)

    def update(
        self, ctx: DataContext, package: str, table: str, key: str, values: Mapping[str, Value]
    ) -> None:
        db = ctx.db(package)
        if "display_name" in values:
            db.update_row("raw_contacts", int(key), {"display_name": str(values["display_name"] or "")})
        self._write(db, int(key), values)

    def delete(self, ctx: DataContext, package: str, table: str, key: str) -> None:
        db = ctx.db(package)
        db.delete("data", "raw_contact_id = ?", [int(key)])
        db.delete_row("raw_contacts", int(key))

    def _write(self, db: AppDatabase, raw: int, values: Mapping[str, Value]) -> None:
        """The name row (given and family name split at the first space) and the first phone/e-mail row."""
        if "display_name" in values:
            name = str(values["display_name"] or "")
            given, _, family = name.partition(" ")
            self._set(db, raw, NAME, {"data1": name, "data2": given, "data3": family})
        if "number" in values:
            self._set(db, raw, PHONE, {"data1": str(values["number"] or ""), "data2": MOBILE})
        if "email" in values:
            self._set(db, raw, EMAIL, {"data1": str(values["email"] or ""), "data2": "1"})

    def _set(self, db: AppDatabase, raw: int, mimetype: str, cols: dict[str, Value]) -> None:
        """Updates the contact's first row of this kind, adds one if it has none, removes it when emptied."""
        found = db.rows(
            "data", "raw_contact_id = ? AND mimetype = ?", [raw, mimetype], "is_primary DESC, _id", 1
        )
        if not cols["data1"]:
            if found:
                db.delete_row("data", int(str(found[0]["_id"])))
            return
        if found:
            db.update_row("data", int(str(found[0]["_id"])), {k: v for k, v in cols.items() if k != "data2"})
        else:
            db.insert("data", {"raw_contact_id": raw, "mimetype": mimetype, **cols})


register_source("contacts", ContactsSource())
