"""How logcat prints a log entry: its formats and modifiers (`-v threadtime`, `-v epoch`, ...), and which
entries its filter expressions (`TAG:PRIORITY`) let through.

The literals follow AOSP system/logging/liblog/logprint.cpp (android_log_formatLogLine): threadtime is
`MM-DD HH:MM:SS.mmm  PID  TID P TAG     : message`, epoch times are `%19lld.%03ld`, a message of several
lines is printed one line per prefix.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from virtual_phone.state.log_buffer import LogEntry
from virtual_phone.state.owners import IDS

FORMATS = ("brief", "long", "process", "raw", "tag", "thread", "threadtime", "time")
MODIFIERS = (
    "color",
    "descriptive",
    "epoch",
    "monotonic",
    "nsec",
    "printable",
    "uid",
    "usec",
    "UTC",
    "year",
    "zone",
)
LEVELS = "VDIWEFS"  # ANDROID_LOG_VERBOSE .. ANDROID_LOG_SILENT, lowest first
UID_NAMES = {uid: name for name, uid in IDS.items()}


class FilterError(Exception):
    """A filter expression logcat refuses."""


@dataclass
class LogFormat:
    base: str = "threadtime"
    modifiers: set[str] = field(default_factory=set)

    def add(self, word: str) -> bool:
        """Takes one `-v` word; False if logcat knows no such format or modifier."""
        if word in FORMATS:
            self.base = word
        elif word in MODIFIERS:
            self.modifiers.add(word)
        else:
            return False
        return True


def _time(entry: LogEntry, fmt: LogFormat, zone: str, boot_ms: int) -> str:
    ms = entry.ms - boot_ms if "monotonic" in fmt.modifiers else entry.ms
    secs, frac = divmod(ms, 1000)
    when = None
    if "epoch" in fmt.modifiers or "monotonic" in fmt.modifiers:
        text = f"{secs:6d}" if "monotonic" in fmt.modifiers else f"{secs:19d}"
    else:
        tz = dt.UTC if "UTC" in fmt.modifiers else ZoneInfo(zone)
        when = dt.datetime.fromtimestamp(secs, tz=tz)
        text = when.strftime("%Y-%m-%d %H:%M:%S" if "year" in fmt.modifiers else "%m-%d %H:%M:%S")
    if "nsec" in fmt.modifiers:
        text += f".{frac * 1_000_000:09d}"
    elif "usec" in fmt.modifiers:
        text += f".{frac * 1000:06d}"
    else:
        text += f".{frac:03d}"
    if "zone" in fmt.modifiers and when is not None:
        text += when.strftime(" %z")
    return text


def _uid(entry: LogEntry, fmt: LogFormat) -> str:
    if "uid" not in fmt.modifiers:
        return ""
    name = UID_NAMES.get(entry.uid, "")
    return f"{name:>5}:" if name and len(name) <= 5 else f"{entry.uid:5d}:"


def format_entry(entry: LogEntry, fmt: LogFormat, zone: str, boot_ms: int) -> str:
    """The lines logcat prints for one entry."""
    t, u, p, tag = _time(entry, fmt, zone, boot_ms), _uid(entry, fmt), entry.priority, entry.tag
    if fmt.base == "long":
        return f"[ {t} {u}{entry.pid:5d}:{entry.tid:5d} {p}/{tag:<8} ]\n{entry.message}\n\n"
    prefix, suffix = {
        "brief": (f"{p}/{tag:<8}({u}{entry.pid:5d}): ", ""),
        "process": (f"{p}({u}{entry.pid:5d}) ", f"  ({tag})"),
        "raw": ("", ""),
        "tag": (f"{p}/{tag:<8}: ", ""),
        "thread": (f"{p}({u}{entry.pid:5d}:{entry.tid:5d}) ", ""),
        "time": (f"{t} {p}/{tag:<8}({u}{entry.pid:5d}): ", ""),
        "threadtime": (f"{t} {u}{entry.pid:5d} {entry.tid:5d} {p} {tag:<8}: ", ""),
    }[fmt.base]
    return "".join(f"{prefix}{line}{suffix}\n" for line in entry.message.split("\n"))


@dataclass
class LogFilter:
    """Which entries pass: a least priority per tag, and one for every other tag (`*`)."""

    tags: dict[str, str] = field(default_factory=dict)
    default: str = "V"

    def add(self, spec: str) -> None:
        """Takes one `TAG[:PRIORITY]` expression (`*:S` silences every tag not named)."""
        tag, _, level = spec.partition(":")
        level = (level or "V").upper()
        level = "V" if level == "*" else level
        if len(level) != 1 or level not in LEVELS or not tag:
            raise FilterError(f"Invalid filter expression '{spec}'")
        if tag == "*":
            self.default = level
        else:
            self.tags[tag] = level

    def passes(self, entry: LogEntry) -> bool:
        least = self.tags.get(entry.tag, self.default)
        return least != "S" and LEVELS.index(entry.priority) >= LEVELS.index(least)
