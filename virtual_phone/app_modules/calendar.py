"""Calendar: an event's end follows its start (a new event lasts one hour; a moved one keeps its length).

The rest of Calendar is data (apps/calendar.yaml).
"""

from __future__ import annotations

from virtual_phone.records.app_behaviour import AppContext, DataOnly, register_behaviour
from virtual_phone.schema.appdata_schema import Value

HOUR_MS = 3_600_000


class Calendar(DataOnly):
    def saving(self, app: AppContext, table: str, values: dict[str, Value], key: str | None) -> None:
        start = values.get("dtstart")
        if not isinstance(start, int):
            return
        length = HOUR_MS
        if key is not None:
            old = app.data.db(app.package).get(table, int(key))
            if old is not None and isinstance(old.get("dtend"), int) and isinstance(old.get("dtstart"), int):
                length = int(str(old["dtend"])) - int(str(old["dtstart"]))
        values["dtend"] = start + length


register_behaviour("com.google.android.calendar", Calendar())
