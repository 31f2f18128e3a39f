"""The phone's clock: it stands at 2026-01-01 12:00 UTC, and each reading moves it on by one millisecond.

The status bar shows 12:00, every file carries 2026-01-01; records made on the phone (a sent message, an SMS
inserted with `content insert`, a new event's default time) take their time from here, in order. It does not
follow the host's clock: an episode played an hour into a run must see the same minute as the first one, or
a time picker's default (and so the taps a task needs) would differ between the builds a grid pairs.

Each phone has its own: root's `date -s` and AlarmManager's setTime (`service call alarm 2 i64 MS`) move it,
setTimeZone (`service call alarm 3 s16 ZONE`) changes its zone; a snapshot holds both. The shell's programs
read it through libfaketime from the file `write_shell_time` keeps in the tree.
"""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

PHONE_EPOCH_MS = 1_767_268_800_000  # 2026-01-01 12:00 UTC
DEFAULT_ZONE = "UTC"


class Clock:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._base_ms = PHONE_EPOCH_MS
        self._ticks = itertools.count()
        self.zone = DEFAULT_ZONE  # an Olson id, as persist.sys.timezone holds it
        self._shell_file: Path | None = None

    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch on the phone's clock: later than every earlier reading."""
        with self._lock:
            return self._base_ms + next(self._ticks)

    def set(self, ms: int, zone: str | None = None) -> None:
        """Sets the clock (and its zone), as AlarmManager's setTime and setTimeZone do."""
        with self._lock:
            self._base_ms = ms
            self._ticks = itertools.count()
            self.zone = zone or self.zone
        self._write_shell_time()

    def state(self) -> tuple[int, str]:
        """What a snapshot keeps: the time now and the zone."""
        return self.now_ms(), self.zone

    def write_shell_time(self, etc: Path) -> None:
        """Keeps the shell's view of the clock in `etc` (the tree's /system/etc, /etc in the sandbox): the
        time for libfaketime (epoch seconds, FAKETIME_FMT=%s) and `localtime`, the zone's tz file."""
        self._shell_file = etc
        self._write_shell_time()

    def _write_shell_time(self) -> None:
        if self._shell_file is None:
            return
        (self._shell_file / "phone_time").write_text(f"@{self.now_ms() // 1000}\n")
        link = self._shell_file / "localtime"
        link.unlink(missing_ok=True)
        link.symlink_to(f"/usr/share/zoneinfo/{self.zone}")


def known_zone(zone: str) -> bool:
    """Whether the host's tz database (the sandbox's /usr/share/zoneinfo) has `zone`."""
    path = Path("/usr/share/zoneinfo") / zone
    return ".." not in zone.split("/") and path.is_file()
