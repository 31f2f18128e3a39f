"""Which tasks `agent-eval tune` learns from and how they are grouped: every task of the tasks folder and of
its app subfolders (tasks/apps/<app>/), each in its family, `settings` or the app's folder name.

Tune reads its folder recursively on purpose; grids and `resolve_tasks` keep reading tasks/ without its
subfolders (the Settings tasks), so what they measure does not change with the tuning data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from agent_eval.task import Task, load_tasks

SETTINGS = "settings"
APPS_FOLDER = "apps"


def family(task: Task) -> str:
    """`settings` for a task directly in a tasks folder, else the app folder it is in (`tasks/apps/clock`)."""
    source = task.source
    if source is not None and source.parent.parent.name == APPS_FOLDER:
        return source.parent.name
    return SETTINGS


def tune_tasks(paths: Path | Sequence[Path]) -> list[Task]:
    """Every task under `paths`, subfolders included: the Settings tasks and every app family."""
    return load_tasks(paths if isinstance(paths, Sequence) else [paths], recursive=True)


def families(tasks: Iterable[Task]) -> dict[str, int]:
    """Tasks per family, sorted by family."""
    return dict(sorted(Counter(family(t) for t in tasks).items()))
