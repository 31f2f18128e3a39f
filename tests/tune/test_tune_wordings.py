"""The goal wordings live in the task files (`wordings:`), and tuning is what it was when they lived in the
harness's table: tests/data/tune_wordings/before.json was written by that table (2026-12-07, before it was
deleted) with each instance's wordings, every task's held-out wordings and the hash of the episode plans of
two seeds. Same plan, same goals: the same prompts and dataset for the same seed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from agent_eval.errors import TaskError
from agent_eval.task import Task, load_task
from agent_eval.task.params import combinations
from agent_eval.tune.collect import held_out_goals, plan_episodes, training_tasks
from agent_eval.tune.families import tune_tasks
from agent_eval.tune.wording import goal_variants, held_out_wordings

REPO = Path(__file__).resolve().parents[2]
BEFORE = json.loads((REPO / "tests" / "data" / "tune_wordings" / "before.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def every_task() -> list[Task]:
    """The tasks the table worded: an app added since is not in the frozen copy, and does not change it."""
    return [t for t in tune_tasks(REPO / "tasks") if t.id in BEFORE["wordings"]]


def test_every_instance_is_worded_as_the_old_table_worded_it(every_task: list[Task]) -> None:
    now: dict[str, dict[str, dict[str, list[str]]]] = {}
    for task in every_task:
        for k in range(combinations(task.params)):
            instance = task.instantiate(k)
            words = {"train": goal_variants(instance)[1:], "held_out": held_out_wordings(instance)}
            now.setdefault(task.id, {})[instance.goal] = words
    assert now == BEFORE["wordings"]  # every task of the frozen copy is still there, worded the same


def test_the_same_seed_plans_the_same_episodes_and_holds_out_the_same(every_task: list[Task]) -> None:
    held = held_out_goals(every_task)
    assert held == BEFORE["held_out_goals"]
    forbidden = frozenset(w for words in held.values() for w in words)
    for seed, digest in BEFORE["plans_sha256"].items():
        plans = plan_episodes(training_tasks(every_task), 9, seed=int(seed), forbidden=forbidden)
        rows = [[p.index, p.task_id, p.seed, p.source, p.goal, p.rng_seed] for p in plans]
        text = json.dumps(rows, ensure_ascii=False)
        assert hashlib.sha256(text.encode()).hexdigest() == digest, f"seed {seed} plans other episodes"


def test_a_wording_with_an_unknown_parameter_fails_at_load(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "id: t\ngoal: Call {name}.\nwordings: {train: ['Phone {nmae}.']}\nparams: {name: [Ann]}\n"
        "goal_state: {element: {text: hi}}\n"
    )
    with pytest.raises(TaskError, match=r"wordings.train\[0\] uses \{nmae\}"):
        load_task(path)
