"""This host's streaming-read ceiling, measured once per run, and what a rung's decode speed implies.

Decoding one token reads every weight once (the tied embedding as the output head), so weight bytes per
token × decode tokens/s is the bandwidth the engine draws; its share of the ceiling says how near the memory
bound the kernel runs (the seed document: W4A16 whole step 73 GB/s, 33 % of 222 GB/s).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from agent_eval.rundir.bandwidth import HostBandwidth, read_bandwidth, write_bandwidth

_NOT_WEIGHTS = ("grid.pt",)  # a rounded rung's scales: for tests, never read by the engine


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
    """The run's ceiling: read from its bandwidth.json, else measured now and written there."""
    recorded = read_bandwidth(run_dir)
    if recorded is not None:
        return recorded
    measured = streaming_read_gbs()
    write_bandwidth(run_dir, measured)
    return measured


def weight_bytes(path: Path | None) -> int | None:
    """Bytes of a checkpoint's weight files: what one decoded token reads (safetensors only)."""
    if path is None or not path.is_dir():
        return None
    files = [p for p in path.iterdir() if p.suffix == ".safetensors" and p.name not in _NOT_WEIGHTS]
    return sum(p.stat().st_size for p in files) or None
