"""Where things sit in a run directory, and the key that names one episode (build, task, seed).

Every part that reads or writes a run asks this module for the path, so the layout is written down once.
"""

from __future__ import annotations

import re
from pathlib import Path

from agent_eval.errors import RunStoreError

EPISODES_FILE = "episodes.jsonl"
MANIFEST_FILE = "run.json"
ENGINES_DIR = "engines"
EPISODES_DIR = "episodes"
STEPS_FILE = "steps.jsonl"

EpisodeKey = tuple[str, str, int]
"""(build, task_id, seed): one cell of the grid for one seed."""

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def episode_dir(run_dir: Path, build: str, task_id: str, seed: int) -> Path:
    """episodes/<build>/<task>/<seed>, refusing names that cannot name a directory."""
    for what, name in (("build", build), ("task", task_id)):
        if not _SAFE_NAME.match(name):
            raise RunStoreError(
                f"{what} name {name!r} cannot name a directory: use letters, digits, '.', '_', '-', '+'"
            )
    return run_dir / EPISODES_DIR / build / task_id / str(seed)


def engine_record_path(run_dir: Path, build: str) -> Path:
    return run_dir / ENGINES_DIR / f"{build}.json"


def engine_log_path(run_dir: Path, build: str) -> Path:
    return run_dir / ENGINES_DIR / f"{build}.log"


def require_run_dir(run_dir: Path) -> None:
    if not run_dir.is_dir():
        raise RunStoreError(f"{run_dir} is not a run directory (it does not exist); pass runs/<run-id>")
