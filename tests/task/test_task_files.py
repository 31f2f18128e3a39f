"""Task files: loading, errors that name the file and the field, parameters per seed, the shipped tasks."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_eval.errors import TaskError
from agent_eval.task import load_task, load_tasks
from agent_eval.task.params import combinations
from agent_eval.task.schema import AllPredicate, NotPredicate, SettingPredicate

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"

GOOD = """
id: timeout
goal: Set the screen timeout to {timeout.label}.
start: {intent: android.settings.DISPLAY_SETTINGS}
setup: ["settings put system screen_off_timeout 60000", "echo {name}"]
params:
  timeout: [{label: 15 seconds, ms: 15000}, {label: 10 minutes, ms: 600000}]
  name: [alpha, beta, gamma]
goal_state:
  all:
    - setting: {namespace: system, key: screen_off_timeout, equals: "{timeout.ms}"}
    - not: {shell: {command: "echo {name}", matches: "^x"}}
oracle:
  - {type: tap, text: Screen timeout}
  - {type: tap, text: "{timeout.label}"}
  - {type: done}
"""


def write(tmp_path: Path, text: str, name: str = "task.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_good_file_loads_with_defaults(tmp_path: Path) -> None:
    task = load_task(write(tmp_path, GOOD))
    assert task.id == "timeout" and task.version == 1 and task.max_steps == 15 and not task.verify
    assert task.start.intent == "android.settings.DISPLAY_SETTINGS" and not task.start.is_home
    assert isinstance(task.goal_state, AllPredicate)
    assert task.source == tmp_path / "task.yaml"


def test_seeds_pick_parameters_deterministically_and_cover_every_combination(tmp_path: Path) -> None:
    task = load_task(write(tmp_path, GOOD))
    assert combinations(task.params) == 6
    seen = {tuple(sorted(task.instantiate(seed).params.items())) for seed in range(6)}
    assert len(seen) == 6
    assert task.instantiate(4).params == task.instantiate(4).params == task.instantiate(10).params
    # Instances are values: equal for the same seed, usable as keys.
    assert task.instantiate(4) == task.instantiate(4) != task.instantiate(5)
    assert len({task.instantiate(s) for s in (0, 0, 1)}) == 2


def test_parameters_are_substituted_into_goal_setup_goal_state_and_oracle(tmp_path: Path) -> None:
    task = load_task(write(tmp_path, GOOD))
    instance = next(
        task.instantiate(s) for s in range(6) if task.instantiate(s).params["timeout.ms"] == "600000"
    )
    assert instance.goal == "Set the screen timeout to 10 minutes."
    assert instance.setup[1] == f"echo {instance.params['name']}"
    goal = instance.goal_state
    assert isinstance(goal, AllPredicate)
    first, second = goal.all_
    assert isinstance(first, SettingPredicate) and first.setting.equals == "600000"
    assert isinstance(second, NotPredicate)
    assert instance.oracle is not None and instance.oracle[1].text == "10 minutes"
    assert "{timeout.label}" in task.goal  # the task itself is untouched


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "id: t\ngoal: g\ngoal_state:\n  all:\n    - setting: {namespace: global, key: a, equals: '1'}\n"
            "    - setting: {namespace: global, nmae: a, equals: '1'}\n",
            "goal_state.all[1].setting: unknown field 'nmae'",
        ),
        (
            "id: t\ngoal: g\nmax_step: 3\ngoal_state: {element: {resource-id: x}}\n",
            "unknown field 'max_step' (did you mean 'max_steps'?)",
        ),
        ("id: t\ngoal: g\ngoal_state: {wifi: on}\n", "goal_state: unknown predicate 'wifi'"),
        (
            "id: t\ngoal: g\ngoal_state: {not: {shell: {command: x, equals: y}, activity: {equals: a/.B}}}\n",
            "goal_state.not: a predicate has exactly one key, got 'shell', 'activity'; combine several",
        ),
        ("id: t\ngoal: g\n", "missing field 'goal_state'"),
        ("id: t\ngoal: g\ngoal_state: {setting: {namespace: local, key: a, equals: '1'}}\n", "namespace"),
        ("id: t\ngoal: g\ngoal_state: {shell: {command: x}}\n", "exactly one of 'equals' or 'matches'"),
        ("id: t\ngoal: 'open {thing}'\ngoal_state: {shell: {command: x, equals: y}}\n", "{thing}"),
        ("id: t\ngoal: g\nstart: office\ngoal_state: {shell: {command: x, equals: y}}\n", "start:"),
        ("id: t\ngoal: g\nmax_steps: 0\ngoal_state: {shell: {command: x, equals: y}}\n", "max_steps"),
        ("id: t\ngoal: a: b\n", "line 2, column 8"),
        ("- just\n- a list\n", "YAML mapping"),
    ],
)
def test_bad_files_raise_task_errors_naming_file_and_field(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text, "broken.yaml")
    with pytest.raises(TaskError) as caught:
        load_task(path)
    message = str(caught.value)
    assert message.startswith(str(path))
    assert expected in message


def test_folders_load_sorted_and_duplicate_ids_are_rejected(tmp_path: Path) -> None:
    write(tmp_path, GOOD.replace("id: timeout", "id: b_task"), "b.yaml")
    write(tmp_path, GOOD.replace("id: timeout", "id: a_task"), "a.yaml")
    (tmp_path / "notes.txt").write_text("not a task")
    assert [t.id for t in load_tasks(tmp_path)] == ["a_task", "b_task"]
    write(tmp_path, GOOD.replace("id: timeout", "id: a_task"), "c.yaml")
    with pytest.raises(TaskError, match=r"c\.yaml: task id 'a_task' is already used by .*a\.yaml"):
        load_tasks(tmp_path)
    with pytest.raises(TaskError, match="no such task file"):
        load_tasks(tmp_path / "missing")


def test_the_shipped_tasks_load_and_cover_what_the_suite_needs() -> None:
    tasks = load_tasks(TASKS_DIR)
    ids = {t.id for t in tasks}
    assert len(tasks) >= 12
    assert "wifi_on" in ids
    assert any(t.verify for t in tasks)
    assert any(t.params for t in tasks)
    assert all(t.oracle for t in tasks)
    starts = {
        "home" if t.start.is_home else "app" if t.start.app else "intent" if t.start.intent else "activity"
        for t in tasks
    }
    assert starts == {"home", "app", "intent", "activity"}
    for task in tasks:
        for seed in range(combinations(task.params)):
            instance = task.instantiate(seed)
            assert "{" not in instance.goal
