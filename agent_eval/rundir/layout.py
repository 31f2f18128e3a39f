"""Where things sit in a run directory, and the key that names one episode (build, task, seed).

Every part that reads or writes a run asks this module for the path, so the layout is written down once.
"""

from __future__ import annotations

import re
from pathlib import Path

from agent_eval.errors import RunStoreError
from agent_eval.records import EpisodeKind

EPISODES_FILE = "episodes.jsonl"
NAV_PROBES_FILE = "navigation-probes.jsonl"  # the navigation probes' records (docs/scorecard.md)
NAV_PROBES_DIR = "navigation-probes"  # their step files, laid out as episodes/ is
MANIFEST_FILE = "run.json"
ENGINES_DIR = "engines"
EPISODES_DIR = "episodes"
STEPS_FILE = "steps.jsonl"
LOCK_FILE = ".lock"  # held by the one session writing the run
GRID_COPY = "grid.yaml"  # the grid as it was resolved, for the reader
BANDWIDTH_FILE = "bandwidth.json"
SCORECARD_JSON = "scorecard.json"
SCORECARD_MD = "scorecard.md"
REPORT_FILE = "report.html"
THUMBS_DIR = "thumbs"  # the report's screenshot thumbnails, beside the episodes they shrink
FIDELITY_FILE = "fidelity.json"
FIDELITY_POWER_FILE = "fidelity-power.json"
FIDELITY_DIR = "fidelity"  # the probes and the engines served for them
PROBES_DIR = "probes"

EpisodeKey = tuple[str, str, int]
"""(build, task_id, seed): one cell of the grid for one seed."""

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def episode_dir(run_dir: Path, build: str, task_id: str, seed: int, kind: EpisodeKind = "episode") -> Path:
    """episodes/<build>/<task>/<seed> (navigation-probes/… for a probe), refusing names that cannot name a
    directory."""
    for what, name in (("build", build), ("task", task_id)):
        if not _SAFE_NAME.match(name):
            raise RunStoreError(
                f"{what} name {name!r} cannot name a directory: use letters, digits, '.', '_', '-', '+'"
            )
    return run_dir / (EPISODES_DIR if kind == "episode" else NAV_PROBES_DIR) / build / task_id / str(seed)


def records_file(run_dir: Path, kind: EpisodeKind = "episode") -> Path:
    """episodes.jsonl, or navigation-probes.jsonl for the probes."""
    return run_dir / (EPISODES_FILE if kind == "episode" else NAV_PROBES_FILE)


def engine_record_path(run_dir: Path, build: str) -> Path:
    return run_dir / ENGINES_DIR / f"{build}.json"


def engine_log_path(run_dir: Path, build: str) -> Path:
    return run_dir / ENGINES_DIR / f"{build}.log"


def require_run_dir(run_dir: Path) -> None:
    if not run_dir.is_dir():
        raise RunStoreError(f"{run_dir} is not a run directory (it does not exist); pass runs/<run-id>")


def probes_dir(run_dir: Path) -> Path:
    """fidelity/probes: one JSONL file of teacher-forced probes per build."""
    return run_dir / FIDELITY_DIR / PROBES_DIR


def fidelity_serving_dir(run_dir: Path) -> Path:
    """Where the engines served for fidelity keep their logs and records (not the run's own engines/)."""
    return run_dir / FIDELITY_DIR


def thumbs_dir(run_dir: Path) -> Path:
    return run_dir / THUMBS_DIR
