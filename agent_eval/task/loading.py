"""Reading task files: YAML → Task, with every problem reported as a TaskError naming the file and field.

`load_task` reads one file; `load_tasks` reads files and folders and rejects duplicate task ids.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agent_eval.errors import TaskError
from agent_eval.registry import in_use
from agent_eval.task.params import choose, combinations
from agent_eval.task.schema import Task, predicate_kinds, task_models

TASK_SUFFIXES = (".yaml", ".yml")
_MAX_REPORTED = 6
_MAX_SEEDS_CHECKED = 64  # parameter combinations filled in at load (every shipped task has fewer)


def _location(loc: Sequence[int | str]) -> str:
    """('goal_state', 'all', 'all', 1, 'setting', 'setting', 'nmae') → goal_state.all[1].setting.nmae.

    Tagged unions repeat the tag as its own step; drop the repeat so the path reads like the YAML.
    """
    text = ""
    previous: int | str | None = None
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part != previous:
            text += f".{part}" if text else part
        previous = part
    return text


def _field_names() -> list[str]:
    """Every field name a task file can use, for "did you mean" hints."""
    names: set[str] = set()
    for model in task_models():
        for name, info in model.model_fields.items():
            names.add(info.alias or name)
    return sorted(names)


def _describe(error: Any) -> str:
    loc = tuple(error["loc"])
    kind = error["type"]
    if kind == "extra_forbidden" and loc:
        where, what = _location(loc[:-1]), f"unknown field {loc[-1]!r}"
        close = difflib.get_close_matches(str(loc[-1]), _field_names(), n=1)
        if close:
            what += f" (did you mean {close[0]!r}?)"
    elif kind == "missing" and loc:
        where, what = _location(loc[:-1]), f"missing field {loc[-1]!r}"
    elif kind == "unknown_predicate":
        given = error.get("input")
        where = _location(loc)
        kinds = ", ".join(predicate_kinds())
        if isinstance(given, dict) and len(given) > 1:
            keys = ", ".join(map(repr, given))
            what = (
                f"a predicate has exactly one key, got {keys}; combine several with all: [...] or any: [...]"
            )
        else:
            keys = ", ".join(map(repr, given)) if isinstance(given, dict) else repr(given)
            what = f"unknown predicate {keys}; a predicate has exactly one key, one of: {kinds}"
    else:
        where = _location(loc)
        what = str(error["msg"]).removeprefix("Value error, ")
    return f"{where}: {what}" if where else what


def task_from_data(data: Any, source: Path | str) -> Task:
    """Validate already-parsed YAML as a task; `source` names it in errors."""
    if not isinstance(data, dict):
        raise TaskError(
            f"{source}: a task file is a YAML mapping (id, goal, goal_state, ...), got {type(data).__name__}"
        )
    in_use()  # installed plug-ins' predicates are in the schema before it validates
    try:
        task = Task.model_validate(data)
    except ValidationError as e:
        problems = [_describe(err) for err in e.errors()]
        shown = problems[:_MAX_REPORTED]
        if len(problems) > len(shown):
            shown.append(f"... and {len(problems) - len(shown)} more")
        raise TaskError(
            f"{source}: " + ("\n  ".join(shown) if len(shown) == 1 else "\n  " + "\n  ".join(shown))
        ) from e
    task._source = Path(source)
    _check_seeds(task, source)
    for number, seed in enumerate(task.files):
        local = seed.local(task.source)
        if local is not None and not local.is_file():
            raise TaskError(f"{source}: files[{number}].source: no such file {local}")
    return task


def _check_seeds(task: Task, source: Path | str) -> None:
    """Each seed's filled-in task is valid: a `{param}` making a bad `--bind` number fails here, at load."""
    for seed in range(min(combinations(task.params), _MAX_SEEDS_CHECKED)):
        try:
            task.instantiate(seed)
        except ValidationError as e:
            chosen = ", ".join(f"{k}={v}" for k, v in choose(task.params, seed).items())
            problems = "; ".join(_describe(err) for err in e.errors())
            raise TaskError(f"{source}: seed {seed} ({chosen}): {problems}") from e


def load_task(path: Path | str) -> Task:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise TaskError(f"{path}: cannot read the task file ({e.strerror or e})") from e
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise TaskError(f"{path}: {where}not valid YAML ({problem})") from e
    return task_from_data(data, path)


def task_files(path: Path, *, recursive: bool = False) -> list[Path]:
    """A folder's task files (with `recursive`, those of its subfolders too, e.g. tasks/apps/<app>/)."""
    if path.is_dir():
        found = path.rglob("*") if recursive else path.iterdir()
        return sorted(p for p in found if p.suffix in TASK_SUFFIXES and p.is_file())
    if not path.exists():
        raise TaskError(f"{path}: no such task file or folder")
    return [path]


def load_tasks(paths: Path | str | Sequence[Path | str], *, recursive: bool = False) -> list[Task]:
    """Every task in the given files and folders (folders: their *.yaml files, sorted by name; with
    `recursive`, their subfolders' too). Without it, tasks/ is the Settings tasks only (not tasks/apps/)."""
    given = [paths] if isinstance(paths, str | Path) else list(paths)
    files: list[Path] = []
    for path in given:
        files.extend(task_files(Path(path), recursive=recursive))
    if not files:
        raise TaskError(f"no task files (*.yaml) in {', '.join(map(str, given)) or 'the arguments'}")
    tasks: list[Task] = []
    seen: dict[str, Path] = {}
    for file in files:
        task = load_task(file)
        if task.id in seen:
            if seen[task.id].resolve() == file.resolve():
                continue
            raise TaskError(f"{file}: task id {task.id!r} is already used by {seen[task.id]}")
        seen[task.id] = file
        tasks.append(task)
    return tasks
