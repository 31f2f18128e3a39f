"""bandwidth.json in a run dir: the host's streaming-read ceiling, measured once a run (builds/bandwidth)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from agent_eval.records import StrictModel
from agent_eval.rundir.layout import BANDWIDTH_FILE


class HostBandwidth(StrictModel):
    """bandwidth.json in a run dir: the streaming-read bench's result."""

    read_gbs: float = Field(description="Best streaming-read rate over the repeats, GB/s (1e9 bytes).")
    buffer_mb: int = Field(description="Size of the buffer read, MB: far larger than the caches.")
    repeats: int = Field(description="Timed passes; the best one counts.")


def read_bandwidth(run_dir: Path) -> HostBandwidth | None:
    """The run's measured ceiling; None when it was not measured (or the file is unreadable)."""
    try:
        return HostBandwidth.model_validate_json((run_dir / BANDWIDTH_FILE).read_text())
    except (OSError, ValueError):
        return None


def write_bandwidth(run_dir: Path, measured: HostBandwidth) -> None:
    file = run_dir / BANDWIDTH_FILE
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(measured.model_dump_json(indent=2) + "\n")


def read_ceiling(run_dir: Path) -> float | None:
    """The ceiling in GB/s, or None when the run has no bandwidth.json."""
    measured = read_bandwidth(run_dir)
    return measured.read_gbs if measured else None
