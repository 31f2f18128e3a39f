"""Rates per task family (`contacts/add`, `settings/switch`, ...) and split, from the tasks run.json records.

A task's family is recorded with it in run.json (task/family.py says how it is read from the tags).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import Field, ValidationError

from agent_eval.errors import RunStoreError
from agent_eval.records import EpisodeRecord, StrictModel
from agent_eval.rundir import MANIFEST_FILE, TaskEntry, TypedField
from agent_eval.scoring.build_score import BuildName, Navigation, Success, rate
from agent_eval.scoring.splits import SPLITS

UNRECORDED = "(not recorded)"


@dataclass(frozen=True)
class TaskFacts:
    """What run.json says of each task beyond its hash: family, split, answer task, what it means to type."""

    families: dict[str, str] = field(default_factory=dict)
    splits: dict[str, str] = field(default_factory=dict)
    answer_tasks: frozenset[str] = frozenset()
    typed: dict[str, list[TypedField]] = field(default_factory=dict)

    @classmethod
    def of(cls, entries: Sequence[TaskEntry]) -> TaskFacts:
        return cls(
            families={t.id: t.family for t in entries if t.family},
            splits={t.id: t.split for t in entries},
            answer_tasks=frozenset(t.id for t in entries if t.answer),
            typed={t.id: list(t.typed) for t in entries if t.typed},
        )

    def family(self, task_id: str) -> str:
        return self.families.get(task_id, UNRECORDED)


def read_task_entries(run_dir: Path) -> list[TaskEntry]:
    """run.json's task list; empty when there is no run.json or it holds no JSON object (the scores then
    have no families). A task entry that is not one is an error naming the entry and the field."""
    path = run_dir / MANIFEST_FILE
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    tasks = manifest.get("tasks") if isinstance(manifest, dict) else None
    entries = []
    for index, raw in enumerate(tasks if isinstance(tasks, list) else []):
        try:
            entries.append(TaskEntry.model_validate(raw))
        except ValidationError as e:
            error = e.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            raise RunStoreError(
                f"{path}: tasks[{index}].{where}: {error['msg']}; restore the run's run.json"
            ) from e
    return entries


class FamilyScore(StrictModel):
    """One build's rates on the tasks of one family, over both splits or one of them."""

    build: BuildName
    family: str = Field(description="app/family of the tasks (task/family.py), e.g. contacts/add.")
    split: str = Field(description="all, or train / held_out when the family has tasks in both.")
    tasks: int = Field(description="Tasks of this family (and split) with a scored episode.")
    episodes: int = Field(description="Their scored episodes.")
    navigation: Navigation
    success: Success


def _row(build: str, family: str, split: str, eps: Sequence[EpisodeRecord]) -> FamilyScore:
    return FamilyScore(
        build=build,
        family=family,
        split=split,
        tasks=len({e.task_id for e in eps}),
        episodes=len(eps),
        navigation=rate(sum(e.reached for e in eps), len(eps)),
        success=rate(sum(e.success for e in eps), len(eps)),
    )


def family_scores(scored: Sequence[EpisodeRecord], facts: TaskFacts) -> list[FamilyScore]:
    """Per build and family: all its episodes, then each split apart when the family has both. Empty when
    the run's tasks are of one family (its rates are the build's own) or none is recorded."""
    families = sorted({facts.family(e.task_id) for e in scored})
    if len(families) < 2:
        return []
    splits: Mapping[str, str] = facts.splits
    out: list[FamilyScore] = []
    for build in sorted({e.build for e in scored}):
        for family in families:
            eps = [e for e in scored if e.build == build and facts.family(e.task_id) == family]
            if not eps:
                continue
            out.append(_row(build, family, "all", eps))
            by_split = {s: [e for e in eps if splits.get(e.task_id, "train") == s] for s in SPLITS}
            if all(by_split.values()):
                out += [_row(build, family, s, by_split[s]) for s in SPLITS]
    return out
