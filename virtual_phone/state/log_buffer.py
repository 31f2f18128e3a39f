"""The phone's log (logd's ring buffers): what `log` and the phone's services write, what `logcat` reads.

Buffers as Android names them (main, radio, events, system, crash, ...); each keeps its newest entries up to
a size, as logd's rings do. Entries carry the phone's clock, so logcat's times are the phone's. The log is
not part of snapshots (logd is not), and a reboot empties it.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from virtual_phone.state.phone_clock import Clock

BUFFERS = ("main", "radio", "events", "system", "crash", "stats", "security", "kernel")
DEFAULT_BUFFERS = ("main", "system", "crash")  # what logcat reads and clears without -b
RING_BYTES = 256 * 1024  # logd's default size of each buffer on an emulator (`logcat -g`)
ENTRY_OVERHEAD = 28  # logd's per-entry header, counted against the ring's size


@dataclass(frozen=True)
class LogEntry:
    seq: int  # the order entries were written in, across buffers
    ms: int  # the phone's clock when written
    pid: int
    tid: int
    uid: int
    priority: str  # one of V D I W E F (as logcat prints it)
    tag: str
    message: str
    buffer: str

    @property
    def size(self) -> int:
        return ENTRY_OVERHEAD + len(self.tag.encode()) + len(self.message.encode()) + 2


class LogBuffer:
    """All buffers of one phone; thread-safe, and a reader can wait for what is written next."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._changed = threading.Condition()
        self._rings: dict[str, deque[LogEntry]] = {b: deque() for b in BUFFERS}
        self._bytes = dict.fromkeys(BUFFERS, 0)
        self._seq = 0
        self.boot_ms = clock.now_ms()  # `-v monotonic` counts from here

    def write(self, buffer: str, priority: str, tag: str, message: str, pid: int, uid: int) -> LogEntry:
        """Appends one entry (the oldest of its buffer go when the ring is full); wakes the readers."""
        with self._changed:
            self._seq += 1
            entry = LogEntry(self._seq, self._clock.now_ms(), pid, pid, uid, priority, tag, message, buffer)
            ring = self._rings[buffer]
            ring.append(entry)
            self._bytes[buffer] += entry.size
            while self._bytes[buffer] > RING_BYTES and len(ring) > 1:
                self._bytes[buffer] -= ring.popleft().size
            self._changed.notify_all()
            return entry

    def clear(self, buffers: tuple[str, ...]) -> None:
        with self._changed:
            for b in buffers:
                self._rings[b].clear()
                self._bytes[b] = 0

    def entries(self, buffers: tuple[str, ...], after: int = 0) -> list[LogEntry]:
        """The entries of `buffers` written after sequence number `after`, oldest first."""
        with self._changed:
            found = [e for b in buffers for e in self._rings[b] if e.seq > after]
        return sorted(found, key=lambda e: e.seq)

    def last_seq(self) -> int:
        with self._changed:
            return self._seq

    def wait(self, after: int, timeout: float) -> bool:
        """Waits up to `timeout` s for an entry after sequence number `after`; True if one came."""
        with self._changed:
            return self._changed.wait_for(lambda: self._seq > after, timeout)

    def consumed(self, buffer: str) -> int:
        """Bytes the buffer holds now (`logcat -g`)."""
        with self._changed:
            return self._bytes[buffer]
