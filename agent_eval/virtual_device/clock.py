"""The phone's clock: 2026-01-01 12:00 UTC when the phone process starts, then moving in real time.

The status bar shows 12:00, every file carries 2026-01-01; records made on the phone (a sent message, an SMS
inserted with `content insert`, a new event's default time) take their time from here, in order.
"""

from __future__ import annotations

import time

PHONE_EPOCH_MS = 1_767_268_800_000  # 2026-01-01 12:00 UTC
_STARTED = time.monotonic()


def now_ms() -> int:
    """Milliseconds since the Unix epoch on the phone's clock."""
    return PHONE_EPOCH_MS + int((time.monotonic() - _STARTED) * 1000)
