"""Time and date pickers as Android's spinner-mode TimePicker and DatePicker: one NumberPicker per part,
each a Button showing the previous value (tap: one step back), the value in an EditText (tap: type a new
one) and a Button showing the next value (tap: one step on). Values wrap around as a NumberPicker's wheel.
"""

from __future__ import annotations

import calendar
import datetime as dt

from virtual_phone.records.form_values import parse_date, parse_time

MONTHS = tuple(calendar.month_abbr)[1:]  # Jan .. Dec, as the en-US DatePicker shows them
YEARS = (1900, 2100)


def time_parts(text: str) -> dict[str, str]:
    """A picker's spinners for `HH:MM`: hour 1..12, minute 00..59, AM/PM."""
    h, m = parse_time(text)
    return {"hour": str((h % 12) or 12), "minute": f"{m:02d}", "amPm": "AM" if h < 12 else "PM"}


def time_text(parts: dict[str, str]) -> str:
    h12 = int(parts["hour"]) % 12
    return f"{h12 + (12 if parts['amPm'] == 'PM' else 0):02d}:{int(parts['minute']):02d}"


def date_parts(text: str) -> dict[str, str]:
    d = parse_date(text)
    return {"month": MONTHS[d.month - 1], "day": str(d.day), "year": str(d.year)}


def date_text(parts: dict[str, str]) -> str:
    month = MONTHS.index(parts["month"]) + 1
    year = int(parts["year"])
    day = min(int(parts["day"]), calendar.monthrange(year, month)[1])
    return dt.date(year, month, day).isoformat()


def choices(kind: str, part: str, parts: dict[str, str]) -> list[str]:
    """Every value a spinner can show, in wheel order."""
    if kind == "time":
        return {
            "hour": [str(h) for h in range(1, 13)],
            "minute": [f"{m:02d}" for m in range(60)],
            "amPm": ["AM", "PM"],
        }[part]
    if part == "month":
        return list(MONTHS)
    if part == "day":
        month = MONTHS.index(parts["month"]) + 1
        return [str(d) for d in range(1, calendar.monthrange(int(parts["year"]), month)[1] + 1)]
    return [str(y) for y in range(YEARS[0], YEARS[1] + 1)]


def neighbours(kind: str, part: str, parts: dict[str, str]) -> tuple[str, str]:
    """The values shown above and below the current one."""
    vals = choices(kind, part, parts)
    i = vals.index(parts[part]) if parts[part] in vals else 0
    if part == "amPm":  # two values: no wheel, an empty side
        return (vals[i - 1] if i > 0 else ""), (vals[i + 1] if i + 1 < len(vals) else "")
    return vals[(i - 1) % len(vals)], vals[(i + 1) % len(vals)]


# A wheel that wraps carries into the next larger part, as the spinner TimePicker and DatePicker do
# (59 → 00 moves the hour on, 11 → 12 flips AM/PM, Dec → Jan moves the year on).
CARRIES = {("time", "minute"): "hour", ("date", "day"): "month", ("date", "month"): "year"}


def step(kind: str, part: str, parts: dict[str, str], delta: int) -> None:
    """One step of a spinner's wheel; AM/PM does not wrap, the others carry into the next part."""
    vals = choices(kind, part, parts)
    i = vals.index(parts[part]) if parts[part] in vals else 0
    j = i + delta
    if part == "amPm":
        parts[part] = vals[max(0, min(len(vals) - 1, j))]
        return
    parts[part] = vals[j % len(vals)]
    if (kind, part) == ("time", "hour") and {parts[part], vals[i]} == {"11", "12"}:
        parts["amPm"] = "PM" if parts["amPm"] == "AM" else "AM"
    carry = CARRIES.get((kind, part))
    if carry is not None and not 0 <= j < len(vals):
        step(kind, carry, parts, 1 if j >= len(vals) else -1)
    _clamp(kind, parts)


def set_typed(kind: str, part: str, parts: dict[str, str], typed: str) -> bool:
    """Sets a spinner to a typed value if it is one of its values (case and leading zeros do not matter)."""
    norm = typed.strip().lower().lstrip("0") or "0"
    for v in choices(kind, part, parts):
        if (v.lower().lstrip("0") or "0") == norm or (part == "amPm" and v.lower().startswith(norm)):
            parts[part] = v
            _clamp(kind, parts)
            return True
    return False


def _clamp(kind: str, parts: dict[str, str]) -> None:
    if kind == "date":
        last = choices(kind, "day", parts)[-1]
        if int(parts["day"]) > int(last):
            parts["day"] = last


SPINNERS = {"time": ("hour", "minute", "amPm"), "date": ("month", "day", "year")}
