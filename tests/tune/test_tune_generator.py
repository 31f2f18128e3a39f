"""Goals from a generator (goals/*.yaml): what the shipped goals files can say, deterministic per seed, split
by template, kind and wording style, counts that come from the data, and bad files refused at load."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import get_args

import pytest

from agent_eval.commands.tune_goals import generated_for_collect
from agent_eval.errors import ConfigError, TaskError
from agent_eval.tune.collect_settings import GENERATED_FILE, read_generated
from agent_eval.tune.families import APPS_FOLDER, SETTINGS
from agent_eval.tune.generator import (
    MISSPELLED,
    Family,
    GoalInstance,
    enumerate_goals,
    load_families,
    misspell,
    record,
    sample,
)
from agent_eval.tune.goal_file import Kind, load_goal_file

REPO = Path(__file__).resolve().parents[2]
GOALS = REPO / "goals"


@pytest.fixture(scope="module")
def families() -> list[Family]:
    return load_families(GOALS)


@pytest.fixture(scope="module")
def every(families: list[Family]) -> list[GoalInstance]:
    return list(enumerate_goals(families))


def test_the_goals_files_make_thousands_of_distinct_goals_of_every_kind(
    families: list[Family], every: list[GoalInstance]
) -> None:
    assert len({g.task.id for g in every}) == len(every)  # an instance is its content: no two alike
    assert len({g.task.goal for g in every}) >= 5000
    assert set(Counter(g.kind for g in every)) == set(get_args(Kind))
    # One goals file per task family (tasks/ for Settings, each app folder of tasks/apps/), each saying some.
    task_families = {SETTINGS} | {p.name for p in (REPO / "tasks" / APPS_FOLDER).iterdir() if p.is_dir()}
    assert {f.goals.family for f in families} == {g.family for g in every} == task_families
    holds = [g for g in every if g.kind == "holds"]
    assert all(g.task.verify and [s.type.value for s in g.task.oracle or ()] == ["done"] for g in holds)
    # Every app family (not Settings', nor the one that joins apps) holds a goal that composes two things.
    composed = {g.family for g in every if g.kind in ("two_changes", "change_question", "carried")}
    assert task_families - {SETTINGS} <= composed


def test_the_same_seed_draws_the_same_tasks_and_another_seed_others(
    families: list[Family], every: list[GoalInstance]
) -> None:
    first = [g.raw for g in sample(families, 3, 40)]
    again = [g.raw for g in sample(load_families(GOALS), 3, 40)]
    other = [g.raw for g in sample(families, 4, 40)]
    assert first == again and len(first) == 40
    everything = sample(families, 3, 10**6)  # a sample never repeats itself: at most, every training instance
    assert len(everything) == sum(g.split == "train" for g in every)
    assert {r["id"] for r in first} != {r["id"] for r in other}


def test_the_training_sample_holds_nothing_held_out(
    families: list[Family], every: list[GoalInstance]
) -> None:
    held = {f.goals.family: f.goals.held_out for f in families}
    train = sample(families, 0, 300)
    for g in train:
        out = held[g.family]
        assert g.template not in out.templates and g.kind not in out.kinds, g.task.id
        assert g.style not in out.styles and g.task.split == "train", g.task.id
    held_out = sample(families, 0, 100, split="held_out")
    assert held_out and all(g.task.split == "held_out" for g in held_out)
    held_words = {g.task.goal for g in every if g.style in held[g.family].styles}
    assert held_words and not held_words & {g.task.goal for g in every if g.split == "train"}
    assert {"two_changes"} <= {g.kind for g in held_out if g.family == "contacts"}
    assert Counter(g.style == MISSPELLED for g in train)[True] < len(train) / 3


def test_a_misspelling_never_touches_a_drawn_value() -> None:
    import random

    text = "Please switch {s.name} off and delete {contact.name}."
    for k in range(50):
        wrong = misspell(text, random.Random(k))
        assert wrong != text and re.findall(r"\{[^}]*\}", wrong) == ["{s.name}", "{contact.name}"]


def test_the_record_a_manifest_keeps(families: list[Family]) -> None:
    drawn = sample(families, 1, 30)
    kept = record(families, 1, drawn)
    assert kept.count == 30 and sum(kept.per_template.values()) == 30
    assert kept.held_out["contacts"].kinds == ["two_changes"]
    assert kept == type(kept).model_validate_json(kept.model_dump_json())


def _goals_file(tmp_path: Path, wording: str, task_extra: str = "") -> Path:
    path = tmp_path / "pantry.yaml"
    path.write_text(
        "family: pantry\n"
        "pools:\n  item:\n  - {name: Rice, count: '2'}\n"
        "templates:\n"
        "- id: pantry_count\n  kind: question\n  draws: {i: item}\n"
        f"  wordings: {{question: ['How much {{i.name}} is left?', {wording!r}]}}\n"
        "  task:\n    goal_state: {element: {text: '{i.name}'}}\n"
        f"    answer: {{answer: {{equals: '{{i.count}}'}}}}\n{task_extra}"
    )
    return path


def test_a_wording_naming_a_field_the_data_lacks_fails_at_load_naming_file_and_field(tmp_path: Path) -> None:
    path = _goals_file(tmp_path, "How many {i.nmae} do I have?")
    with pytest.raises(TaskError) as caught:
        load_goal_file(path)
    message = str(caught.value)
    assert str(path) in message
    assert "templates[0] (pantry_count).wordings.question[1]" in message
    assert "{i.nmae} names field 'nmae', which the data lacks (it has: count, name)" in message


def test_a_task_body_naming_an_unknown_draw_or_pool_fails_at_load(tmp_path: Path) -> None:
    path = _goals_file(tmp_path, "Count the {i.name}.", "    oracle: [{type: answer, text: '{j.count}'}]\n")
    with pytest.raises(TaskError, match=r"task\.oracle\[0\]\.text: \{j\.count\} names no drawn record"):
        load_goal_file(path)
    path.write_text(path.read_text().replace("draws: {i: item}", "draws: {i: items}"))
    with pytest.raises(TaskError, match=r"draws\.i: no pool 'items' \(pools: item\)"):
        load_goal_file(path)


def test_a_count_may_keep_the_records_that_match_a_drawn_record(tmp_path: Path) -> None:
    """`where: {shelf: "{s.shelf}"}`: the things on the shelf the template drew (Calendar: the events on the
    drawn day); a `where` naming a field the data lacks fails at load."""
    path = tmp_path / "pantry.yaml"
    path.write_text(
        "family: pantry\n"
        "pools:\n"
        "  item:\n  - {name: Rice, shelf: top}\n  - {name: Flour, shelf: top}\n  - {name: Salt, shelf: low}\n"
        "  shelf:\n  - {shelf: top}\n  - {shelf: low}\n"
        "templates:\n"
        "- id: pantry_on_shelf\n  kind: count\n  draws: {s: shelf}\n"
        "  counts:\n    there: {pools: [item], where: {shelf: '{s.shelf}'}}\n"
        "  wordings: {question: ['How many things are on the {s.shelf} shelf?']}\n"
        "  task:\n    goal_state: {element: {text: Rice}}\n    answer: {answer: {equals: '{there}'}}\n"
    )
    made = [g for g in enumerate_goals(load_families(path)) if g.style != MISSPELLED]
    said = {g.task.goal: g.raw["answer"]["answer"]["equals"] for g in made}
    assert said == {
        "How many things are on the top shelf?": "2",
        "How many things are on the low shelf?": "1",
    }
    path.write_text(path.read_text().replace("'{s.shelf}'}}", "'{s.shelve}'}}"))
    with pytest.raises(TaskError, match=r"counts\.there\.where: \{s\.shelve\} names field 'shelve'"):
        load_goal_file(path)


def test_an_instance_that_is_no_valid_task_fails_naming_the_goals_file(tmp_path: Path) -> None:
    path = _goals_file(tmp_path, "Count the {i.name}.", "    max_steps: '{i.name}'\n")
    with pytest.raises(TaskError, match=rf"{re.escape(str(path))}: max_steps"):
        list(enumerate_goals(load_families(path)))


def test_a_collection_keeps_its_generated_goals_and_refuses_others(tmp_path: Path) -> None:
    tasks, families, plans = generated_for_collect(GOALS, 0, 0, tmp_path, 10, played_before=False)
    assert (tasks, families, plans) == ([], {}, []) and not (tmp_path / GENERATED_FILE).exists()
    tasks, families, plans = generated_for_collect(GOALS, 6, 2, tmp_path, 10, played_before=False)
    assert [p.index for p in plans] == list(range(10, 16)) and [p.task_id for p in plans] == [
        t.id for t in tasks
    ]
    assert [p.goal for p in plans] == [t.goal for t in tasks]
    assert len(set(families.values())) == 6  # the families' templates interleaved: six families, one each
    kept = read_generated(tmp_path)  # what `tune ship` puts in the manifest as generated_goals
    assert kept is not None and kept["seed"] == 2 and kept["count"] == 6 and "held_out" in kept
    assert read_generated(tmp_path / "none") is None
    again = generated_for_collect(GOALS, 6, 2, tmp_path, 10, played_before=True)
    assert again[2] == plans
    with pytest.raises(ConfigError, match="other generated goals"):
        generated_for_collect(GOALS, 6, 3, tmp_path, 10, played_before=True)
    with pytest.raises(ConfigError, match="other generated goals"):
        generated_for_collect(GOALS, 0, 2, tmp_path, 10, played_before=True)
    with pytest.raises(ConfigError, match=r"other generated goals \(none\)"):
        generated_for_collect(GOALS, 6, 2, tmp_path / "fresh", 10, played_before=True)
