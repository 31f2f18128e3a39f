"""The app task families under tasks/apps/: their counts per app, family and split, their seeds' data, and
that a malformed seed record or answer pattern fails at load naming the file and the field."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from agent_eval.errors import TaskError
from agent_eval.task import Task, load_task, load_tasks
from agent_eval.task.family import task_family
from agent_eval.task.params import combinations

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
APPS_DIR = TASKS_DIR / "apps"

# Files per app folder today; a folder may grow, never shrink without this table changing with it.
FILES_PER_APP = {
    "calendar": 10,
    "clock": 10,
    "contacts": 10,
    "cross": 7,
    "files": 9,
    "markor": 8,
    "messages": 11,
}
# Families (the tag after the app's) of today's apps; each may never be lost. Every family on disk, these and
# a new app's, must keep a train and a held-out template.
KEPT_FAMILIES = {
    "calendar": {"create", "edit", "delete", "answer"},
    "clock": {"add", "switch", "delete", "answer"},
    "contacts": {"add", "edit", "delete", "find"},
    "files": {"delete", "rename", "move", "answer"},
    "markor": {"create", "append", "delete", "answer"},
    "messages": {"send", "reply", "delete", "answer"},
}


@pytest.fixture(scope="module")
def app_tasks() -> list[Task]:
    return load_tasks(APPS_DIR, recursive=True)


def app_of(task: Task) -> str:
    assert task.source is not None
    return task.source.parent.name


def test_counts_per_app_and_kind_do_not_shrink(app_tasks: list[Task]) -> None:
    per_app = Counter(app_of(t) for t in app_tasks)
    for app, count in FILES_PER_APP.items():
        assert per_app[app] >= count, f"tasks/apps/{app}/ has {per_app[app]} task files, expected {count}"
    assert len(app_tasks) >= 60 and len({a for a in per_app if a != "cross"}) >= 6
    assert sum("typed" in t.tags for t in app_tasks) >= 20
    assert sum(t.answer is not None for t in app_tasks) >= 8
    assert per_app["cross"] >= 5
    for task in app_tasks:
        assert task.tags[0] == app_of(task), f"{task.source}: the first tag names the app folder"
        assert task.oracle, f"{task.source}: no oracle"


def test_each_family_has_train_and_a_held_out_template(app_tasks: list[Task]) -> None:
    splits: dict[str, set[str]] = {}
    for task in app_tasks:  # cross-app tasks are one family here: a train and a held-out template in all
        family = "cross" if app_of(task) == "cross" else task_family(task.tags)
        splits.setdefault(family, set()).add(task.split)
    for app, families in KEPT_FAMILIES.items():
        assert {f"{app}/{family}" for family in families} <= set(splits), f"a family of {app} was lost"
    for family, found in sorted(splits.items()):
        assert found == {"train", "held_out"}, f"{family}: only {found} templates; add the other split"


def test_two_seeds_of_a_parameterised_task_draw_different_data(app_tasks: list[Task]) -> None:
    parameterised = [t for t in app_tasks if combinations(t.params) >= 2]
    assert len(parameterised) >= len(app_tasks) - 2
    for task in parameterised:
        first, second = task.instantiate(0), task.instantiate(1)
        assert first.params != second.params
        drawn = [(i.goal, i.setup, i.files, i.goal_state, i.answer, i.oracle) for i in (first, second)]
        assert drawn[0] != drawn[1], f"{task.source}: seeds 0 and 1 start from the same data"


def test_settings_folders_stay_settings_only_and_validate_reaches_the_apps(app_tasks: list[Task]) -> None:
    # tune's collect, grids and the Settings tests read tasks/ without recursion: the families are not in it.
    settings = {t.id for t in load_tasks(TASKS_DIR)}
    assert settings and not settings & {t.id for t in app_tasks}
    everything = {t.id for t in load_tasks(TASKS_DIR, recursive=True)}
    assert everything == settings | {t.id for t in app_tasks}


def test_recursive_loading_reads_subfolders_in_path_order(tmp_path: Path) -> None:
    write(tmp_path / "b" / "deep" / "t.yaml", TASK.format(id="deep", setup="[]", answer=""))
    write(tmp_path / "a.yaml", TASK.format(id="top", setup="[]", answer=""))
    assert [t.id for t in load_tasks(tmp_path)] == ["top"]
    assert [t.id for t in load_tasks(tmp_path, recursive=True)] == ["top", "deep"]


TASK = """id: {id}
goal: What did the last text say?
params:
  when: ["1767264000000", "soon"]
setup: {setup}
goal_state: {{element: {{text: hi}}}}
{answer}
oracle: [{{type: done}}]
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("setup", "answer", "field", "message"),
    [
        ("['content insert --uri content://sms/inbox --bind body:x:hi']", "", "setup[0]", "body:x:hi"),
        (
            "['content insert --uri content://sms/inbox --bind body:s:hi --bind date:l:when']",
            "",
            "setup[0]",
            "not a number of type l",
        ),
        # a parameter that fills a number with text: caught for the seed that draws it, at load
        ("['content insert --uri content://sms/inbox --bind date:l:{when}']", "", "seed 1", "not a number"),
        ("[]", "answer: {answer: {matches: '([0-9'}}", "answer.matches", "not a valid regular expression"),
    ],
)
def test_a_malformed_seed_record_or_answer_pattern_fails_at_load(
    tmp_path: Path, setup: str, answer: str, field: str, message: str
) -> None:
    path = write(tmp_path / "broken.yaml", TASK.format(id="broken", setup=setup, answer=answer))
    with pytest.raises(TaskError) as caught:
        load_task(path)
    text = str(caught.value)
    assert text.startswith(str(path)) and field in text and message in text, text
