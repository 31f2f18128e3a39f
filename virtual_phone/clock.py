"""The phone's clock: it stands at 2026-01-01 12:00 UTC, and each reading moves it on by one millisecond.

The status bar shows 12:00, every file carries 2026-01-01; records made on the phone (a sent message, an SMS
inserted with `content insert`, a new event's default time) take their time from here, in order. It does not
follow the host's clock: an episode played an hour into a run must see the same minute as the first one, or
a time picker's default (and so the taps a task needs) would differ between the builds a grid pairs.
"""

from __future__ import annotations

import itertools
import threading

PHONE_EPOCH_MS = 1_767_268_800_000  # 2026-01-01 12:00 UTC
_TICKS = itertools.count()
_LOCK = threading.Lock()


def now_ms() -> int:
    """Milliseconds since the Unix epoch on the phone's clock: later than every earlier reading."""
    with _LOCK:
        return PHONE_EPOCH_MS + next(_TICKS)
