"""This host's streaming-read ceiling, measured once per run, and what a rung's decode speed implies.

Decoding one token reads every weight once (the tied embedding as the output head), so weight bytes per
token × decode tokens/s is the bandwidth the engine draws; its share of the ceiling says how near the memory
bound the kernel runs (the seed document: W4A16 whole step 73 GB/s, 33 % of 222 GB/s).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

BANDWIDTH_FILE = "bandwidth.json"
_NOT_WEIGHTS = ("grid.pt",)  # a rounded rung's scales: for tests, never read by the engine


class HostBandwidth(BaseModel):
    """bandwidth.json in a run dir: the streaming-read bench's result."""

    model_config = ConfigDict(extra="forbid")

    read_gbs: float = Field(description="Best streaming-read rate over the repeats, GB/s (1e9 bytes).")
    buffer_mb: int = Field(description="Size of the buffer read, MB: far larger than the caches.")
    repeats: int = Field(description="Timed passes; the best one counts.")


def streaming_read_gbs(buffer_mb: int = 256, repeats: int = 5) -> HostBandwidth:
    """Sum a large buffer (numpy, one core): a read-bound pass; the fastest of `repeats` counts."""
    data = np.ones(buffer_mb * (1 << 20) // 8, dtype=np.float64)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        data.sum()
        best = min(best, time.perf_counter() - started)
    return HostBandwidth(read_gbs=round(data.nbytes / best / 1e9, 2), buffer_mb=buffer_mb, repeats=repeats)


def measure_once(run_dir: Path) -> HostBandwidth:
    """The run's ceiling: read from bandwidth.json, else measured now and written there."""
    file = run_dir / BANDWIDTH_FILE
    try:
        return HostBandwidth.model_validate_json(file.read_text())
    except (OSError, ValueError):
        pass
    measured = streaming_read_gbs()
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(measured.model_dump_json(indent=2) + "\n")
    return measured


def read_ceiling(run_dir: Path) -> float | None:
    try:
        return HostBandwidth.model_validate_json((run_dir / BANDWIDTH_FILE).read_text()).read_gbs
    except (OSError, ValueError):
        return None


def weight_bytes(path: Path | None) -> int | None:
    """Bytes of a checkpoint's weight files: what one decoded token reads (safetensors only)."""
    if path is None or not path.is_dir():
        return None
    files = [p for p in path.iterdir() if p.suffix == ".safetensors" and p.name not in _NOT_WEIGHTS]
    return sum(p.stat().st_size for p in files) or None
