"""An edit screen's values: from a record into the fields' texts (a time as `HH:MM`, a date as `YYYY-MM-DD`),
how a field shows them, and back into column values on Save. Epoch-ms columns are read and written in UTC.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from virtual_phone.records.templates import clock_text
from virtual_phone.schema.appdata_schema import Value
from virtual_phone.schema.screen_data import FormField, RecordForm
from virtual_phone.state.phone_clock import PHONE_EPOCH_MS

DEFAULT_TIME = "08:00"


def _utc(ms: object) -> dt.datetime:
    try:
        return dt.datetime.fromtimestamp(int(str(ms)) / 1000, tz=dt.UTC)
    except ValueError:
        return _utc(PHONE_EPOCH_MS)  # not a time: the phone's boot time


def _field_text(f: FormField, rec: Mapping[str, object] | None, now_ms: int) -> str:
    if f.input == "time" and f.columns:
        if rec is None:
            return DEFAULT_TIME
        return f"{int(str(rec.get(f.columns[0]) or 0)):02d}:{int(str(rec.get(f.columns[1]) or 0)):02d}"
    if f.input in ("time", "date"):
        when = _utc(rec.get(f.column) if rec is not None else now_ms)
        if f.input == "date":
            return f"{when:%Y-%m-%d}"
        return f"{when:%H:%M}" if rec is not None else DEFAULT_TIME
    v = rec.get(f.column) if rec is not None else None
    return "" if v is None else str(v)


def initial_form(spec: RecordForm, rec: Mapping[str, object] | None, now_ms: int) -> dict[str, str]:
    """The fields' texts for editing `rec` (None: a new record, with today's date (the phone's clock reads
    `now_ms`) and 08:00)."""
    return {f.key: _field_text(f, rec, now_ms) for f in spec.fields}


def shown_value(f: FormField, form: Mapping[str, str]) -> str:
    """What a field shows: the typed text, or a time as `7:30 AM`, a date as `Tue, Dec 8, 2026`."""
    text = form.get(f.key, "")
    if f.input == "time":
        h, m = parse_time(text)
        return clock_text(h, m)
    if f.input == "date":
        d = parse_date(text)
        return f"{d:%a}, {d:%b} {d.day}, {d.year}"
    return text


def parse_time(text: str) -> tuple[int, int]:
    try:
        h, m = (int(p) for p in text.split(":"))
        return h % 24, m % 60
    except ValueError:
        return 8, 0


def parse_date(text: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return _utc(PHONE_EPOCH_MS).date()  # not a date: the phone's boot date


def _epoch(date_text: str, time_text: str) -> int:
    d = parse_date(date_text)
    h, m = parse_time(time_text)
    return int(dt.datetime(d.year, d.month, d.day, h, m, tzinfo=dt.UTC).timestamp() * 1000)


def record_values(
    spec: RecordForm, form: Mapping[str, str], rec: Mapping[str, object] | None, now_ms: int
) -> dict[str, Value]:
    """The columns Save writes: texts as typed, a time into its hour and minute columns, and a date and
    time into their epoch-ms column (a part without a field keeps the record's own)."""
    out: dict[str, Value] = {}
    for f in spec.fields:
        text = form.get(f.key, "")
        if f.input == "time" and f.columns:
            h, m = parse_time(text)
            out[f.columns[0]], out[f.columns[1]] = h, m
        elif f.input in ("time", "date"):
            old = _utc(rec.get(f.column)) if rec is not None else _utc(now_ms)
            date_text = form.get(f"{f.column}_date", f"{old:%Y-%m-%d}")
            time_text = form.get(f"{f.column}_time", f"{old:%H:%M}" if rec is not None else DEFAULT_TIME)
            out[f.column] = _epoch(date_text, time_text)
        else:
            out[f.column] = text
    return out
