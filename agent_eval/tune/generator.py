"""Goals from a generator: every instance of a goals file's templates (records drawn from its pools, one of
its wordings, maybe lightly misspelled) as an ordinary task, split by template, kind and wording style.

`sample` is deterministic per seed; `enumerate_goals` lists every instance, for counting what a file can say.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from agent_eval.records import StrictModel
from agent_eval.task import Task
from agent_eval.task.loading import task_from_data
from agent_eval.task.params import PLACEHOLDER
from agent_eval.tune.goal_file import (
    Count,
    FieldValue,
    GoalFile,
    HeldOut,
    Template,
    files_hash,
    goal_files,
    load_goal_file,
)

Split = Literal["train", "held_out"]
MISSPELLED = "misspelled"  # the style of a wording with one word's letters swapped
TYPO_SHARE = 0.15  # of a sample's goals, misspelled
Record = dict[str, FieldValue]


@dataclass(frozen=True)
class Family:
    """One loaded goals file."""

    source: Path
    goals: GoalFile


@dataclass(frozen=True)
class Wording:
    style: str
    index: int
    text: str  # the template text (placeholders unfilled), misspelled already when `typo`
    typo: bool = False


@dataclass(frozen=True)
class GoalInstance:
    """One generated goal: the template, what was drawn, the wording, and the task it is."""

    family: str
    template: str
    kind: str
    style: str  # the wording's style, `misspelled` for a misspelled one
    split: Split
    task: Task
    raw: dict[str, Any]  # the task as a task file would hold it (written by `tune goals --write`)


def load_families(path: Path) -> list[Family]:
    return [Family(p, load_goal_file(p)) for p in goal_files(path)]


def _draw_options(goals: GoalFile, template: Template) -> list[dict[str, tuple[int, ...]]]:
    """Every assignment of pool record indices to the template's variables (distinct within a pool)."""
    names = sorted(template.draws)
    per_var: list[list[tuple[int, ...]]] = []
    for name in names:
        draw = template.draws[name]
        size = len(goals.pools[draw.pool])
        if draw.between is None:
            per_var.append([(k,) for k in range(size)])
        else:
            low, high = draw.between
            per_var.append([c for n in range(low, high + 1) for c in itertools.combinations(range(size), n)])
    out = []
    for combo in itertools.product(*per_var):
        chosen = dict(zip(names, combo, strict=True))
        if _distinct(goals, template, chosen) and not _excluded(goals, template, chosen):
            out.append(chosen)
    return out


def _excluded(goals: GoalFile, template: Template, chosen: dict[str, tuple[int, ...]]) -> bool:
    """The draw matches one of the template's `excluded` entries (single-record draws only)."""
    for entry in template.excluded:
        matched = True
        for name, want in entry.items():
            var, _, field = name.partition(".")
            records = [goals.pools[template.draws[var].pool][k] for k in chosen[var]]
            matched = matched and len(records) == 1 and records[0].get(field) == want
        if matched:
            return True
    return False


def _distinct(goals: GoalFile, template: Template, chosen: dict[str, tuple[int, ...]]) -> bool:
    """No record drawn twice from one pool; with `distinct_by`, no two drawn records share that field."""
    seen: set[tuple[str, int]] = set()
    values: list[Any] = []
    for name, indices in chosen.items():
        pool = template.draws[name].pool
        for k in indices:
            if (pool, k) in seen:
                return False
            seen.add((pool, k))
            if template.distinct_by is not None:
                values.append(goals.pools[pool][k].get(template.distinct_by))
    return len(values) == len({json.dumps(v) for v in values})


def _values(goals: GoalFile, template: Template, chosen: dict[str, tuple[int, ...]]) -> dict[str, FieldValue]:
    """`var.field` → the drawn record's value (a list draw: its records' lists joined, texts joined by ", ",
    and `var.count`), and each count."""
    values: dict[str, FieldValue] = {}
    for name, indices in chosen.items():
        draw = template.draws[name]
        records = [goals.pools[draw.pool][k] for k in indices]
        if draw.between is None:
            values.update({f"{name}.{f}": v for f, v in records[0].items()})
            continue
        for field in goals.pools[draw.pool][0]:
            items = [r[field] for r in records]
            joined: FieldValue = (
                [x for i in items for x in i]
                if all(isinstance(i, list) for i in items)
                else ", ".join(map(str, items))
            )
            values[f"{name}.{field}"] = joined
        values[f"{name}.count"] = str(len(records))
    for name, count in template.counts.items():
        values[name] = str(_count(goals, template, count, chosen, values))
    for name, compare in template.compares.items():
        records = [goals.pools[template.draws[v].pool][chosen[v][0]] for v in compare.draws]
        ranked = sorted(records, key=lambda r: float(str(r[compare.by])), reverse=compare.pick == "max")
        values[name] = ranked[0][compare.say]
    return values


def _count(
    goals: GoalFile,
    template: Template,
    count: Count,
    chosen: dict[str, tuple[int, ...]],
    values: dict[str, FieldValue],
) -> int:
    """How many records match: `where`'s values filled from the drawn records first."""
    records: list[Record] = [r for pool in count.pools for r in goals.pools[pool]]
    records += [goals.pools[template.draws[v].pool][k] for v in count.draws for k in chosen[v]]
    where = {f: _text(fill(want, values)) for f, want in count.where.items()}
    return sum(all(str(r.get(f)) == want for f, want in where.items()) for r in records)


def fill(data: Any, values: dict[str, FieldValue]) -> Any:
    """`data` with its placeholders filled; a list item that is one placeholder of a list is spliced in."""
    if isinstance(data, str):
        whole = PLACEHOLDER.fullmatch(data)
        if whole and isinstance(values.get(whole.group(1)), list):
            return values[whole.group(1)]
        return PLACEHOLDER.sub(lambda m: _text(values.get(m.group(1), m.group(0))), data)
    if isinstance(data, list):
        out: list[Any] = []
        for item in data:
            whole = PLACEHOLDER.fullmatch(item) if isinstance(item, str) else None
            value = values.get(whole.group(1)) if whole else None
            out.extend(value if isinstance(value, list) else [fill(item, values)])
        return out
    if isinstance(data, dict):
        return {key: fill(item, values) for key, item in data.items()}
    return data


def _text(value: FieldValue) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def misspell(text: str, rng: random.Random) -> str:
    """`text` with two neighbouring letters swapped in one word of five letters or more (never inside a
    placeholder, so drawn names and values stay as the data has them); unchanged when no word qualifies."""
    spans = [m.span() for m in PLACEHOLDER.finditer(text)]
    words = [m for m in re.finditer(r"[A-Za-z]{5,}", text) if not any(a <= m.start() < b for a, b in spans)]
    words = [m for m in words if any(m.group()[i] != m.group()[i + 1] for i in range(1, len(m.group()) - 2))]
    if not words:
        return text
    word = rng.choice(words)
    inner = [i for i in range(1, len(word.group()) - 2) if word.group()[i] != word.group()[i + 1]]
    i = word.start() + rng.choice(inner)
    return text[:i] + text[i + 1] + text[i] + text[i + 2 :]


def wordings(template: Template) -> list[Wording]:
    """The template's wordings by style, then each one misspelled (a fixed typo per wording)."""
    plain = [Wording(s, k, w) for s, ws in sorted(template.wordings.items()) for k, w in enumerate(ws)]
    typos = []
    for w in plain:
        rng = random.Random(hashlib.sha256(f"{template.id}/{w.style}/{w.index}".encode()).digest())
        wrong = misspell(w.text, rng)
        if wrong != w.text:
            typos.append(Wording(w.style, w.index, wrong, typo=True))
    return plain + typos


def split_of(held_out: HeldOut, template: Template, wording: Wording) -> Split:
    """held_out when the template, its kind or the wording's style is held out (a misspelled wording: its
    style, or `misspelled` when that is held out)."""
    styles = {wording.style, MISSPELLED} if wording.typo else {wording.style}
    out = (
        template.id in held_out.templates
        or template.kind in held_out.kinds
        or bool(styles & set(held_out.styles))
    )
    return "held_out" if out else "train"


def instance(
    family: Family, template: Template, chosen: dict[str, tuple[int, ...]], wording: Wording
) -> GoalInstance:
    """The task one draw and one wording make, checked as a task file is (errors name the goals file)."""
    values = _values(family.goals, template, chosen)
    body = fill(template.task, values)
    tags = [
        family.goals.family,
        template.kind,
        *[t for t in body.get("tags", []) if t not in (family.goals.family, template.kind)],
    ]
    split = split_of(family.goals.held_out, template, wording)
    goal = fill(wording.text, values)
    raw: dict[str, Any] = {
        "goal": goal[:1].upper() + goal[1:],
        **body,
        "tags": [*tags, "generated"],
        "split": split,
    }
    if template.kind == "holds":
        raw["verify"] = True
    digest = hashlib.sha256(json.dumps(raw, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    raw = {"id": f"{template.id}.{digest[:10]}", **raw}
    task = task_from_data(raw, family.source)
    style = MISSPELLED if wording.typo else wording.style
    return GoalInstance(family.goals.family, template.id, template.kind, style, split, task, raw)


def enumerate_goals(families: Sequence[Family]) -> Iterator[GoalInstance]:
    """Every instance every template can make (draws × wordings), in a fixed order."""
    for family in families:
        for template in family.goals.templates:
            for chosen in _draw_options(family.goals, template):
                for wording in wordings(template):
                    yield instance(family, template, chosen, wording)


Slot = tuple[Family, Template, list[list[tuple[dict[str, tuple[int, ...]], Wording]]]]


def _slots(families: Sequence[Family], split: Split, rng: random.Random) -> list[Slot]:
    """Each template's (draw, wording) queues of `split`, plain and misspelled, in an order `rng` shuffles;
    the families' templates interleaved (the first of each family, then the second of each, ...), so that a
    small sample holds every family."""
    per_family: list[list[Slot]] = []
    for family in families:
        slots: list[Slot] = []
        for template in family.goals.templates:
            words = [w for w in wordings(template) if split_of(family.goals.held_out, template, w) == split]
            draws = _draw_options(family.goals, template)
            queues = [[(d, w) for d in draws for w in words if w.typo is typo] for typo in (False, True)]
            for queue in queues:
                rng.shuffle(queue)
            if queues[0] or queues[1]:
                slots.append((family, template, queues))
        per_family.append(slots)
    return [slot for row in itertools.zip_longest(*per_family) for slot in row if slot is not None]


def sample(families: Sequence[Family], seed: int, count: int, split: Split = "train") -> list[GoalInstance]:
    """`count` distinct instances of `split`, templates taken in turn (the families' interleaved), each one's
    (draw, wording) pairs in an order `seed` shuffles, misspelled wordings at `TYPO_SHARE` (more once a
    template's plain ones run out): the same seed gives the same tasks. Fewer when the templates cannot make
    that many."""
    rng = random.Random(seed)
    slots = _slots(families, split, rng)
    out: dict[str, GoalInstance] = {}
    turn = 0
    while slots and len(out) < count:
        family, template, (plain, typos) = slots[turn % len(slots)]
        queue = typos if typos and (not plain or rng.random() < TYPO_SHARE) else plain
        chosen, wording = queue.pop()
        made = instance(family, template, chosen, wording)
        out.setdefault(made.task.id, made)
        if plain or typos:
            turn += 1
        else:
            slots.pop(turn % len(slots))
    return list(out.values())


class GeneratedGoals(StrictModel):
    """What a manifest records of generated goals: the files, the seed and count, and the held-out splits."""

    files_hash: str = Field(description="sha256 over the goals files' names and bytes.")
    seed: int
    count: int = Field(description="Instances drawn for the training data.")
    held_out: dict[str, HeldOut] = Field(
        description="Per family: held-out templates, kinds and wording styles."
    )
    per_template: dict[str, int] = Field(description="Training instances drawn per template.")


def record(families: Sequence[Family], seed: int, drawn: Sequence[GoalInstance]) -> GeneratedGoals:
    per_template: dict[str, int] = {}
    for made in drawn:
        per_template[made.template] = per_template.get(made.template, 0) + 1
    return GeneratedGoals(
        files_hash=files_hash([f.source for f in families]),
        seed=seed,
        count=len(drawn),
        held_out={f.goals.family: f.goals.held_out for f in families},
        per_template=dict(sorted(per_template.items())),
    )
