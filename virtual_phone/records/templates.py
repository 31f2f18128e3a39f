"""Row templates: `{column}` and `{format(column, ...)}` filled from one record, and the formats they name.

Times are shown as an en-US phone shows them (12-hour, `7:30 AM`); epoch-ms columns are read in UTC.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping

from virtual_phone.schema.screen_data import PLACEHOLDER, placeholders

Record = Mapping[str, object]


def _int(v: object) -> int:
    try:
        return int(str(v))
    except ValueError:
        return 0


def clock_text(hour: int, minute: int) -> str:
    """`7:30 AM`, as an en-US phone shows a time."""
    return f"{(hour % 12) or 12}:{minute:02d} {'AM' if hour < 12 else 'PM'}"


def _utc(ms: object) -> dt.datetime:
    return dt.datetime.fromtimestamp(_int(ms) / 1000, tz=dt.UTC)


def _time(hour: object, minute: object) -> str:
    return clock_text(_int(hour) % 24, _int(minute) % 60)


def _clock(ms: object) -> str:
    t = _utc(ms)
    return clock_text(t.hour, t.minute)


def _date(ms: object) -> str:
    t = _utc(ms)
    return f"{t:%a}, {t:%b} {t.day}, {t.year}"


def _starts(ms: object, all_day: object) -> str:
    """An event's start as Google Calendar lists it: `All day` for an all-day event (whose dtstart is
    midnight UTC, CalendarContract.Events.ALL_DAY), else its time."""
    return "All day" if _int(all_day) else _clock(ms)


def _span(start: object, end: object, all_day: object) -> str:
    return "All day" if _int(all_day) else f"{_clock(start)} - {_clock(end)}"


def _size(n: object) -> str:
    size = _int(n)
    for unit in ("B", "kB", "MB"):
        if size < 1000 or unit == "MB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000  # type: ignore[assignment]
    return f"{size} B"


def _items(n: object) -> str:
    return "1 item" if _int(n) == 1 else f"{_int(n)} items"


def _duration(seconds: object) -> str:
    """As Android's DateUtils.formatElapsedTime: `01:05`, `1:02:03` from an hour on."""
    hours, rest = divmod(max(_int(seconds), 0), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


FORMATS: dict[str, tuple[int, Callable[..., str]]] = {
    "items": (1, _items),  # items(count) → 1 item, 4 items
    "time": (2, _time),  # time(hour, minutes) → 7:30 AM
    "clock": (1, _clock),  # clock(epoch_ms) → 7:30 AM
    "date": (1, _date),  # date(epoch_ms) → Tue, Dec 8, 2026
    "size": (1, _size),  # size(bytes) → 1.2 kB
    "duration": (1, _duration),  # duration(seconds) → 01:05, 1:02:03
    "starts": (2, _starts),  # starts(epoch_ms, allDay) → 7:30 AM, or All day
    "span": (3, _span),  # span(start_ms, end_ms, allDay) → 7:30 AM - 8:30 AM, or All day
}


def register_format(name: str, columns: int, show: Callable[..., str]) -> None:
    """A format of an app's own for its templates (`{name(column, ...)}`), registered by its module in
    app_modules/: `show` gets the record's value of each of the `columns` columns (None for NULL)."""
    if name in FORMATS:
        raise ValueError(f"a format named {name!r} exists already")
    FORMATS[name] = (columns, show)


def fill(template: str, record: Record) -> str:
    """The template with each placeholder replaced from the record (NULL shows as nothing)."""

    def one(m: object) -> str:
        name, call, args = m.group(1), m.group(2), m.group(3)  # type: ignore[attr-defined]
        if call:
            cols = [a.strip() for a in args.split(",") if a.strip()]
            return FORMATS[name][1](*(record.get(c) for c in cols))
        v = record.get(name)
        return "" if v is None else str(v)

    return PLACEHOLDER.sub(one, template)


def template_errors(template: str, columns: set[str]) -> list[str]:
    """What is wrong with a template over a table with these columns ([] when nothing)."""
    errors = []
    for fmt, cols in placeholders(template):
        if fmt and fmt not in FORMATS:
            errors.append(f"unknown format {fmt!r} (known: {', '.join(sorted(FORMATS))})")
        elif fmt and len(cols) != FORMATS[fmt][0]:
            errors.append(f"{fmt}() takes {FORMATS[fmt][0]} column(s), got {len(cols)}")
        errors.extend(f"unknown column {c!r}" for c in cols if c not in columns)
    return errors
