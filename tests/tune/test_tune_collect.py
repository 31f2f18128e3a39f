"""A small demonstration collection on a virtual phone: only training tasks, no held-out goal or path in the
data, every example's prompt hash its own, `done` kept to its share, and resuming replays nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_eval.agent.prompt import prompt_hash
from agent_eval.device.adb_backend import free_phone_port
from agent_eval.device.backend import DeviceRequest, device_backend
from agent_eval.task import Task, load_tasks
from agent_eval.task.params import combinations
from agent_eval.tune.collect import (
    DONE_SHARE,
    assemble,
    finished_episodes,
    held_out_goals,
    plan_episodes,
    run_plans,
)
from agent_eval.tune.collect import training_tasks as train_split
from agent_eval.tune.dataset import read_dataset
from agent_eval.tune.wording import goal_variants

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def oracle_path(task: Task, seed: int) -> list[str]:
    steps = task.instantiate(seed).oracle or ()
    return [s.text or s.app or "" for s in steps if s.type.value in ("tap", "open_app")]


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tune-data")
    everything = load_tasks([TASKS])
    tasks = train_split(everything)
    forbidden = frozenset(w for words in held_out_goals(everything).values() for w in words)
    plans = plan_episodes(tasks, 3, forbidden=forbidden)  # seeds 0..2: one clean, two with detours
    request = DeviceRequest(count=2, phone_port=free_phone_port(5640, 2))  # one worker per phone, as `tune`
    with device_backend().devices(request, print) as devices:
        run_plans(plans, {t.id: t for t in tasks}, devices, out, "compact", forbidden=forbidden)
    assemble(out, plans, 0.0, 1)
    return out


def test_held_out_tasks_never_reach_the_dataset(collected: Path) -> None:
    everything = load_tasks([TASKS])
    held_out = [t for t in everything if t.split == "held_out"]
    assert sum(combinations(t.params) for t in held_out) >= 6  # held-out task instances
    examples, summary = read_dataset(collected)
    assert examples and not {t.id for t in held_out} & set(summary.tasks)
    held_goals = {v for t in held_out for s in range(4) for v in goal_variants(t.instantiate(s))}
    assert not held_goals & {ex.goal for ex in examples}
    for ex in examples:
        assert not any(goal in ex.messages[1]["content"] for goal in held_goals)
    # No episode of the dataset follows a held-out task's path under its goal.
    paths = {(t.instantiate(s).goal, tuple(oracle_path(t, s))) for t in held_out for s in range(4)}
    by_episode: dict[int, list[str]] = {}
    for ex in examples:
        by_episode.setdefault(ex.episode, []).append(ex.answer)
    assert not any((ex.goal, tuple(by_episode[ex.episode])) in paths for ex in examples)


def test_examples_are_sound_and_done_is_capped(collected: Path) -> None:
    examples, summary = read_dataset(collected)
    for ex in examples:
        assert prompt_hash(ex.messages) == ex.prompt_hash
        assert json.loads(ex.answer)["type"] == ex.action_type
    assert summary.per_action.get("done", 0) <= DONE_SHARE * summary.examples + 1
    assert summary.per_source.get("recovery", 0) > 0 and summary.per_action.get("tap", 0) > 0


def test_a_finished_collection_resumes_without_replaying(collected: Path) -> None:
    tasks = train_split(load_tasks([TASKS]))
    plans = plan_episodes(tasks, 3)  # the same episodes whatever wordings are held out
    assert set(finished_episodes(collected)) == {p.index for p in plans}
