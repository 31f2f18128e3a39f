"""The goals file format (goals/*.yaml): pools of the phone's own records, goal templates over them with many
wordings, and which templates, kinds and wording styles are held out; errors name the file and the field.

A template's task body is an ordinary task file's body; `{var.field}` names a field of the record drawn for
`var`, `{name}` a count, and a list item that is exactly one placeholder of a list field is spliced in.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from agent_eval.errors import TaskError
from agent_eval.records import StrictModel
from agent_eval.task.params import PLACEHOLDER

GOALS_DIR = "goals"
# change: one change; two_changes: two in one app; holds: the goal already holds (`done`, nothing touched);
# count: a counting question answered from the data; question: a value read from the data; change_question:
# a change, then a question about the data it left; carried: a value read in one app and used in another;
# compare: which of two records comes first (earlier, larger) by the data.
Kind = Literal["change", "two_changes", "holds", "count", "question", "change_question", "carried", "compare"]
TASK_KEYS = ("start", "setup", "files", "goal_state", "answer", "max_steps", "verify", "oracle", "tags")
FieldValue = str | list[Any]


class Draw(StrictModel):
    """Records drawn from a pool for one variable: one record, or (`between`) a list of distinct records."""

    pool: str
    between: tuple[int, int] | None = Field(
        None,
        description="A list of min..max distinct records (their lists joined; `count` says how many).",
    )

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"pool": value} if isinstance(value, str) else value


class Count(StrictModel):
    """A number the data decides: the records of `pools` (as the phone starts) and of `draws` (seeded) that
    match `where`, whose values may name a drawn record's field (`{day: "{d.day}"}`: on the drawn day)."""

    pools: list[str] = Field(default_factory=list)
    draws: list[str] = Field(default_factory=list)
    where: dict[str, str] = Field(default_factory=dict)


class Compare(StrictModel):
    """A comparison the data decides: of the records drawn for `draws`, the one with the least (`pick: min`)
    or greatest number in field `by`; the value is its field `say`."""

    draws: list[str] = Field(min_length=2)
    by: str
    pick: Literal["min", "max"] = "min"
    say: str


class Template(StrictModel):
    """One goal template: the records it draws, its wordings by style, and the task every instance is."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_]*$")
    kind: Kind
    draws: dict[str, Draw] = Field(default_factory=dict)
    distinct_by: str | None = Field(None, description="Two drawn records may not share this field's value.")
    excluded: list[dict[str, str]] = Field(
        default_factory=list,
        description="Draws never made: an entry's `var.field` values all match (an order the app refuses).",
    )
    counts: dict[str, Count] = Field(default_factory=dict)
    compares: dict[str, Compare] = Field(default_factory=dict)
    wordings: dict[str, list[str]] = Field(description="Style (imperative, request, need, ...) → wordings.")
    task: dict[str, Any] = Field(description="The task body: start, setup, goal_state, answer, oracle, ...")

    @field_validator("wordings")
    @classmethod
    def _some_wording(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        if not any(value.values()):
            raise ValueError("a template needs at least one wording")
        return value

    @field_validator("task")
    @classmethod
    def _task_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(value) - set(TASK_KEYS))
        if unknown:
            raise ValueError(
                f"task: unknown key(s) {', '.join(unknown)}; a task body takes {', '.join(TASK_KEYS)}"
            )
        if "goal_state" not in value:
            raise ValueError("task: missing goal_state")
        return value


class HeldOut(StrictModel):
    """What never reaches the tuning data: whole templates, kinds of goal, and wording styles."""

    templates: list[str] = Field(default_factory=list)
    kinds: list[Kind] = Field(default_factory=list)
    styles: list[str] = Field(default_factory=list)


class GoalFile(StrictModel):
    """One goals file: an app's (or Settings') pools and templates."""

    family: str = Field(description="The task family its instances belong to (settings, contacts, ...).")
    pools: dict[str, list[dict[str, FieldValue]]]
    templates: list[Template]
    held_out: HeldOut = Field(default_factory=HeldOut)

    @field_validator("pools")
    @classmethod
    def _pools_have_one_shape(cls, value: dict[str, list[dict[str, FieldValue]]]) -> Any:
        for name, records in value.items():
            if not records:
                raise ValueError(f"pool {name!r} has no records")
            shapes = {tuple(sorted(r)) for r in records}
            if len(shapes) > 1:
                raise ValueError(f"the records of pool {name!r} must all have the same fields")
        return value


def _where(index: int, template: Template, part: str) -> str:
    return f"templates[{index}] ({template.id}).{part}"


def _texts(data: Any, where: str) -> list[tuple[str, str]]:
    """Every string in `data` with where it sits."""
    if isinstance(data, str):
        return [(where, data)]
    if isinstance(data, list):
        return [t for k, item in enumerate(data) for t in _texts(item, f"{where}[{k}]")]
    if isinstance(data, dict):
        return [t for key, item in data.items() for t in _texts(item, f"{where}.{key}")]
    return []


def _check_names(goals: GoalFile, index: int, template: Template) -> list[str]:
    """Problems with the pools, draws, counts and placeholders one template names."""
    problems: list[str] = []
    fields: dict[str, set[str]] = {}
    for var, draw in template.draws.items():
        if draw.pool not in goals.pools:
            problems.append(
                f"{_where(index, template, 'draws.' + var)}: no pool {draw.pool!r} "
                f"(pools: {', '.join(goals.pools)})"
            )
            continue
        fields[var] = set(goals.pools[draw.pool][0]) | ({"count"} if draw.between else set())
    for name, count in template.counts.items():
        for pool in count.pools:
            if pool not in goals.pools:
                problems.append(f"{_where(index, template, 'counts.' + name)}: no pool {pool!r}")
        for var in count.draws:
            if var not in template.draws:
                problems.append(f"{_where(index, template, 'counts.' + name)}: no draw {var!r}")
    for name, compare in template.compares.items():
        for var in compare.draws:
            for field in (compare.by, compare.say):
                problem = _unknown(f"{var}.{field}", fields, {})
                if problem:
                    problems.append(
                        f"{_where(index, template, 'compares.' + name)}: {{{var}.{field}}} {problem}"
                    )
    texts = [
        (f"wordings.{style}[{k}]", w) for style, ws in template.wordings.items() for k, w in enumerate(ws)
    ]
    texts += _texts(template.task, "task")
    texts += [
        (f"counts.{name}.where", want)
        for name, count in template.counts.items()
        for want in count.where.values()
    ]
    texts += [
        (f"excluded[{k}]", "{" + key + "}") for k, entry in enumerate(template.excluded) for key in entry
    ]
    for part, text in texts:
        for name in PLACEHOLDER.findall(text):
            problem = _unknown(name, fields, {**template.counts, **template.compares})
            if problem:
                problems.append(f"{_where(index, template, part)}: {{{name}}} {problem}")
    return problems


def _unknown(name: str, fields: dict[str, set[str]], computed: dict[str, Any]) -> str:
    """Why `{name}` names nothing, or "" when it names a drawn record's field, a count or a comparison."""
    var, _, field = name.partition(".")
    if not field:
        known = ", ".join(computed) or "none"
        return "" if var in computed else f"names no count or comparison (defined: {known})"
    if var not in fields:
        return f"names no drawn record (draws: {', '.join(fields) or 'none'})"
    if field not in fields[var]:
        return f"names field {field!r}, which the data lacks (it has: {', '.join(sorted(fields[var]))})"
    return ""


def goal_file_from_data(data: Any, source: Path) -> GoalFile:
    """Validate parsed YAML as a goals file; every problem names `source` and the field."""
    if not isinstance(data, dict):
        raise TaskError(f"{source}: a goals file is a YAML mapping (family, pools, templates, held_out)")
    try:
        goals = GoalFile.model_validate(data)
    except ValidationError as e:
        lines = [
            f"{'.'.join(map(str, err['loc']))}: {err['msg'].removeprefix('Value error, ')}"
            for err in e.errors()
        ]
        raise TaskError(f"{source}: " + "; ".join(lines)) from e
    problems = [p for k, t in enumerate(goals.templates) for p in _check_names(goals, k, t)]
    ids = [t.id for t in goals.templates]
    problems += [f"templates: id {i!r} is used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    problems += [f"held_out.templates: no template {i!r}" for i in goals.held_out.templates if i not in ids]
    if problems:
        raise TaskError(
            f"{source}: " + ("\n  ".join(problems) if len(problems) == 1 else "\n  " + "\n  ".join(problems))
        )
    return goals


def load_goal_file(path: Path) -> GoalFile:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise TaskError(f"{path}: cannot read the goals file ({e.strerror or e})") from e
    except yaml.YAMLError as e:
        raise TaskError(f"{path}: not valid YAML ({getattr(e, 'problem', None) or e})") from e
    return goal_file_from_data(data, path)


def goal_files(path: Path) -> list[Path]:
    """A goals folder's files (sorted), or the one file given."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    if not path.exists():
        raise TaskError(f"{path}: no such goals file or folder")
    return [path]


def files_hash(paths: list[Path]) -> str:
    """One hash over the goals files' names and bytes (what a manifest records)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
