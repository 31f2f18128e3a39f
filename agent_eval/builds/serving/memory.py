"""Samples the anonymous resident memory (RssAnon) of an engine's whole process tree on a timer thread.

Sampling through load and serving catches the load peak that one reading at the end would miss.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psutil


def status_kib(pid: int, field: str) -> int:
    """One memory field of /proc/<pid>/status (`RssAnon`, `VmRSS`, ...) in KiB (0 if the process is gone or
    hides it)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def rss_anon_kib(pid: int) -> int:
    """RssAnon of one process in KiB (0 if it is gone or hides it)."""
    return status_kib(pid, "RssAnon")


def tree_pids(root: int, exclude: frozenset[int] = frozenset()) -> list[int]:
    try:
        proc = psutil.Process(root)
        pids = [root, *(c.pid for c in proc.children(recursive=True))]
    except psutil.Error:
        return []
    return [p for p in pids if p not in exclude]


def tree_rss_mb(root: int, exclude: frozenset[int] = frozenset()) -> float:
    return sum(rss_anon_kib(p) for p in tree_pids(root, exclude)) / 1024.0


class MemorySampler:
    """Reads a process tree's RssAnon every `interval_s`; keeps the peak and a settled value."""

    def __init__(self, root: int, *, interval_s: float = 0.25, exclude: frozenset[int] = frozenset()) -> None:
        self.root = root
        self.interval_s = interval_s
        self.exclude = exclude
        self.peak_mb = 0.0
        self.last_mb = 0.0
        self.samples = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"rss-sampler-{root}", daemon=True)

    def start(self) -> MemorySampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)

    def sample(self) -> float:
        value = tree_rss_mb(self.root, self.exclude)
        with self._lock:
            self.samples += 1
            self.last_mb = value
            self.peak_mb = max(self.peak_mb, value)
        return value

    def settle(self, window_s: float = 2.0) -> float:
        """RssAnon once loaded and idle: the median of readings over a short window (call while idle)."""
        readings = []
        end = time.monotonic() + window_s
        while True:
            readings.append(self.sample())
            if time.monotonic() >= end:
                break
            time.sleep(min(self.interval_s, 0.25))
        readings.sort()
        return readings[len(readings) // 2]

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)
