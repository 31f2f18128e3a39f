"""A new run's manifest from the tasks and builds the runner resolved (the run directory itself is `rundir`).

Tasks are hashed by their parsed content, so editing a task file without a version bump stops a continued run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from agent_eval.records import BuildManifest
from agent_eval.rundir import RunManifest, TaskEntry, TypedField, host_info, package_versions
from agent_eval.task import Task
from agent_eval.task.family import task_family, typed_fields


def task_entry(task: Task) -> TaskEntry:
    # The tuner's wordings are not what an episode plays: a run continues when only they change.
    played = task.model_dump(mode="json", by_alias=True, exclude={"wordings"})
    content = json.dumps(played, sort_keys=True, ensure_ascii=False)
    return TaskEntry(
        id=task.id,
        version=task.version,
        path=str(task.source) if task.source is not None else None,
        sha256=hashlib.sha256(content.encode("utf-8")).hexdigest(),
        split=task.split,
        family=task_family(task.tags),
        answer=task.answer is not None,
        typed=[TypedField(field=field, text=text) for field, text in typed_fields(task.oracle)],
    )


def new_manifest(
    run_id: str, config: dict[str, Any], tasks: Sequence[Task], builds: Sequence[BuildManifest]
) -> RunManifest:
    now = datetime.now(UTC)
    return RunManifest(
        run_id=run_id,
        created_at=now,
        updated_at=now,
        config=config,
        tasks=[task_entry(t) for t in tasks],
        builds=list(builds),
        host=host_info(),
        packages=package_versions(),
    )
