"""Tune learns from every family: the expert plays each app family (typing, pickers, long-press menus,
answers, cross-app hops) to success through the real episode loop with detours, a small collection holds
contrastive done/not-done pairs, and held-out wordings never reach the data (they are recorded instead)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _sent_prompt import sent_prompt

from agent_eval.action import Action, ActionType
from agent_eval.agent.agents import get_agent
from agent_eval.agent.policy import StepContext
from agent_eval.agent.prompt import schema_allows, with_answer
from agent_eval.device.adb_backend import free_phone_port
from agent_eval.device.backend import DeviceRequest, device_backend
from agent_eval.screen.observation import Bounds, Element, Observation
from agent_eval.task import Task, load_tasks
from agent_eval.tune.collect import (
    EpisodePlan,
    assemble,
    demo_prompt,
    held_out_goals,
    plan_episodes,
    play,
    run_plans,
    training_tasks,
)
from agent_eval.tune.contrast import CONTRAST, taps_a_switch
from agent_eval.tune.dataset import read_dataset
from agent_eval.tune.expert import DETOUR_KINDS, SHADE_DETOUR
from agent_eval.tune.families import family, tune_tasks
from agent_eval.tune.wording import goal_variants, held_out_wordings, opposite_goal

TASKS = Path(__file__).resolve().parents[2] / "tasks"
# Every folder of tasks/apps/ is a family: an app added there is read by tune without this file changing.
APP_FAMILIES = {p.name for p in (TASKS / "apps").iterdir() if p.is_dir()}
# Training tasks, together covering each kind of step the expert must play; a family none of them is in
# (a new app) is played by its first training task (`expert_tasks`).
STEP_KINDS = {
    "clock_add_alarm_labelled": "clock",  # the time picker's spinners, a typed label
    "contacts_delete": "contacts",  # a long-press menu and its confirm dialog
    "contacts_find_number": "contacts",  # an answer read off the contact's card
    "calendar_create_event": "calendar",  # a typed title, date and time pickers
    "calendar_event_time_answer": "calendar",  # an answer read off the list
    "messages_send_to_contact": "messages",  # two typed fields
    "files_move": "files",  # a long-press menu, then a folder chooser
    "markor_append_line": "markor",  # typing into a note's body
    "cross_text_event_time": "cross",  # read in Calendar, typed in Messages
}


@pytest.fixture(scope="module")
def every_task() -> list[Task]:
    return tune_tasks(TASKS)


def expert_tasks() -> dict[str, str]:
    """Task id → family of the tasks the expert plays: STEP_KINDS, and one of each family without one."""
    chosen = dict(STEP_KINDS)
    for task in training_tasks(tune_tasks(TASKS)):
        if family(task) in APP_FAMILIES and family(task) not in chosen.values():
            chosen[task.id] = family(task)
    return chosen


FAMILY_TASKS = expert_tasks()


def test_tune_reads_every_family_and_grids_still_read_settings_only(every_task: list[Task]) -> None:
    train = training_tasks(every_task)
    assert {family(t) for t in train} == APP_FAMILIES | {"settings"}
    settings_only = load_tasks([TASKS])  # what grids and resolve_tasks read: not the subfolders
    assert {family(t) for t in settings_only} == {"settings"}
    assert len(every_task) > len(settings_only) + 60
    assert {family(t) for t in every_task if t.split == "held_out"} == APP_FAMILIES | {"settings"}


def test_every_training_template_has_several_wordings_and_held_out_ones(every_task: list[Task]) -> None:
    train = training_tasks(every_task)
    held = held_out_goals(every_task)
    forbidden = {w for words in held.values() for w in words}
    for task in train:
        instance = task.instantiate(0)
        usable = [v for v in goal_variants(instance) if v not in forbidden]
        assert len(usable) >= 3, (task.source, instance.goal, usable)
        wordings = held_out_wordings(instance)
        assert wordings and set(held[task.id]) >= set(wordings), f"{task.source}: no wordings.held_out"
    # A goal the collection uses is never another task's held-out wording (nor a held-out task's goal).
    for task in train:
        assert task.instantiate(0).goal not in forbidden, task.id
    assert "Turn off airplane mode." in held["airplane_mode_off"]  # a held-out task: every wording


@pytest.mark.parametrize("task_id", sorted(FAMILY_TASKS))
def test_the_expert_plays_each_app_family_with_detours(task_id: str, every_task: list[Task]) -> None:
    task = next(t for t in every_task if t.id == task_id)
    assert family(task) == FAMILY_TASKS[task_id] and task.split == "train"
    assert {family(t) for t in every_task if t.id in FAMILY_TASKS} == APP_FAMILIES
    request = DeviceRequest(count=1, phone_port=free_phone_port(5740))
    kinds = (*DETOUR_KINDS, SHADE_DETOUR)
    with device_backend().devices(request, print) as devices:
        rows = []
        for k in range(3):  # three instances, three detour draws
            plan = EpisodePlan(k, task.id, k, "recovery", task.instantiate(k).goal, rng_seed=k)
            rows.append((k, play(plan, task, devices[0], "compact", kinds, detour_rate=0.6)))
    succeeded = [(k, row) for k, row in rows if row["outcome"] == "success"]
    # A detour may ruin an episode for good (a tap in the folder chooser moves the file elsewhere); the
    # expert must still finish most, and at least one after finding its way back from a detour.
    assert len(succeeded) >= 2, [(row["outcome"], row["detours"]) for _, row in rows]
    assert any(int(str(row["detours"])) >= 1 for _, row in succeeded), rows
    for k, row in succeeded:
        examples = row["examples"]
        assert isinstance(examples, list) and examples
        last = json.loads(examples[-1]["answer"])
        oracle = task.instantiate(k).oracle or ()
        if task.answer is not None:  # the final word is the answer, with the oracle's text
            assert last == {"type": "answer", "text": oracle[-1].text}
            assert "answer (with" in examples[-1]["messages"][0]["content"]  # the prompt offers it
        else:
            assert last == {"type": "done"}
        typed = [s.text for s in oracle if s.type is ActionType.TYPE]
        taught = [json.loads(ex["answer"]).get("text") for ex in examples]
        assert all(text in taught for text in typed), (typed, taught)
        # Every taught answer is one the served agent can write under structured output (a picker's minutes
        # typed into the focused field were masked until 2026-12-03, the swipe until 2026-12-01).
        schema = get_agent("compact").schema()
        schema = with_answer(schema) if task.answer is not None else schema
        masked = [ex["answer"] for ex in examples if not schema_allows(schema, json.loads(ex["answer"]))]
        assert not masked, masked


@pytest.fixture(scope="module")
def small_collection(tmp_path_factory: pytest.TempPathFactory, every_task: list[Task]) -> Path:
    out = tmp_path_factory.mktemp("tune-families")
    ids = {"wifi_on", "wifi_off", "make_sure_wifi_on", "airplane_mode_on", "mobile_data_off"}
    ids |= {"contacts_find_number", "clock_add_alarm", "wifi_off_shade"}
    tasks = [t for t in training_tasks(every_task) if t.id in ids]
    held = held_out_goals(every_task)
    forbidden = frozenset(w for words in held.values() for w in words)
    plans = plan_episodes(tasks, 4, forbidden=forbidden)
    request = DeviceRequest(count=1, phone_port=free_phone_port(5760))
    with device_backend().devices(request, print) as devices:
        run_plans(
            plans, {t.id: t for t in tasks}, devices, out, "compact", forbidden=forbidden, shade_contrast=True
        )
    assemble(out, plans, 0.0, 1, 2, held, {t.id: family(t) for t in tasks})
    return out


def _screen_and_history(messages: list[dict[str, object]]) -> str:
    """The user message without its goal line: what two examples of a contrastive pair share."""
    return "\n".join(str(messages[1]["content"]).splitlines()[1:])


def test_the_data_holds_contrastive_done_and_not_done_pairs(small_collection: Path) -> None:
    examples, summary = read_dataset(small_collection)
    contrast = [ex for ex in examples if ex.source == CONTRAST]
    assert contrast and {ex.action_type for ex in contrast} == {"done", "tap"}
    by_context: dict[str, dict[str, set[str]]] = {}
    for ex in examples:
        by_context.setdefault(_screen_and_history(ex.messages), {}).setdefault(ex.goal, set()).add(
            ex.action_type
        )
    pairs = 0
    for goals in by_context.values():
        for goal, actions in goals.items():
            other = opposite_goal(goal)
            if other in goals and actions == {"done"} and "done" not in goals[other]:
                pairs += 1
    assert pairs >= 4  # the same screen and history: done under one word, a tap under the other
    # Wi-Fi's page with the switch on: done for "on" (the verify task's case), a tap for "off".
    # With --shade-contrast the shade too: its tile is a switch that names itself (`Internet switch=on`),
    # tapped by its label (a verify task whose goal a shade task shares is played there).
    shade = [ex for ex in contrast if ex.task_id == "wifi_off_shade"]
    assert {ex.action_type for ex in shade} == {"done", "tap"}, [ex.answer for ex in shade]
    assert all("Internet switch=" in str(ex.messages[1]["content"]) for ex in shade)
    played = {ex.goal for ex in examples if ex.task_id == "wifi_off_shade" and ex.source != CONTRAST}
    assert all(opposite_goal(ex.goal) in played for ex in shade)  # e.g. "Turn Wi-Fi on.": done
    assert summary.per_source.get(CONTRAST, 0) == len(contrast)
    assert summary.played_per_family["settings"]["contrast"] >= len(contrast)


def test_held_out_wordings_never_reach_the_data_and_are_recorded(
    small_collection: Path, every_task: list[Task]
) -> None:
    examples, summary = read_dataset(small_collection)
    assert summary.held_out_wordings == held_out_goals(every_task)
    forbidden = {w for words in summary.held_out_wordings.values() for w in words}
    assert "Turn off airplane mode." in forbidden and "Turn on mobile data." in forbidden
    for ex in examples:
        assert ex.goal not in forbidden
        assert str(ex.messages[1]["content"]).splitlines()[0] == f"Goal: {ex.goal}"
    # The opposite of airplane_mode_on and mobile_data_off is a held-out task's goal: no contrast there.
    assert (
        not {ex.goal for ex in examples if ex.task_id in ("airplane_mode_on", "mobile_data_off")} & forbidden
    )
    assert {"settings", "contacts", "clock"} <= set(summary.per_family)
    answers = [json.loads(ex.answer) for ex in examples if ex.action_type == "answer"]
    assert answers and all(a["text"] for a in answers)


def test_a_shade_tile_counts_as_a_switch_only_when_asked() -> None:
    """The tile (`0 Internet switch=on`) is tapped by its label (`1 Internet`): a switch for the contrastive
    pairs with --shade-contrast, not without (the default, docs/tuning.md)."""
    common = {"resource_id": "", "package": "com.android.systemui", "bounds": Bounds(0, 100, 540, 290)}
    tile = Element(
        index=0, text="", cls="android.widget.Switch", content_desc="Internet", checkable=True, checked=True,
        clickable=True, node=0, **common,
    )  # fmt: skip
    label = Element(
        index=1, text="Internet", cls="android.widget.TextView", content_desc="", node=1, parent=0, **common
    )
    screen = Observation(
        b"png", "<hierarchy/>", (tile, label), "launcher", 1080, 2400, all_nodes=(tile, label)
    )
    context = StepContext("Turn Wi-Fi off.", 2, 8, screen, (), seed=0)
    tap = Action(type=ActionType.TAP, element=1)
    assert taps_a_switch(tap, context, shade=True) and not taps_a_switch(tap, context)
    assert taps_a_switch(Action(type=ActionType.TAP, element=0), context)  # the tile itself, either way


def test_an_answer_tasks_training_prompt_is_the_one_its_policy_sends() -> None:
    field = Element(
        index=0,
        text="+1 555-0131",
        resource_id="",
        cls="android.widget.TextView",
        content_desc="",
        package="com.google.android.contacts",
        bounds=Bounds(0, 100, 1080, 190),
    )
    screen = Observation(b"png", "<hierarchy/>", (field,), "com.google.android.contacts/.Card", 1080, 2400)
    context = StepContext("What is Chris Park's phone number?", 3, 15, screen, (), seed=1, answers=True)
    trained = demo_prompt(context, "compact")
    decision, _ = sent_prompt(context, "compact")
    assert decision.prompt_hash == trained.hash
    assert "answer (with" in trained.messages[0]["content"]
