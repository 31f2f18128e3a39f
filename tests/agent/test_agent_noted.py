"""`compact-noted`: the compact prompt plus what the agent read before it last switched apps, kept for the
rest of the episode; the same training and serving prompt; a real episode's history carries the screens."""

from __future__ import annotations

import json
from pathlib import Path

from _sent_prompt import sent_prompt

from agent_eval.action import Action, ActionType
from agent_eval.agent import compact, noted
from agent_eval.agent.policy import PastStep, StepContext
from agent_eval.device.adb_backend import free_phone_port
from agent_eval.device.backend import DeviceRequest, device_backend
from agent_eval.screen.observation import Bounds, Element, Observation
from agent_eval.tune.collect import EpisodePlan, demo_prompt, play
from agent_eval.tune.families import tune_tasks

TASKS = Path(__file__).resolve().parents[2] / "tasks"

HOME = "com.google.android.apps.nexuslauncher"
CALENDAR = "com.google.android.calendar"
MESSAGES = "com.google.android.apps.messaging"


def _screen(package: str, *texts: str) -> Observation:
    elements = tuple(
        Element(
            index=i,
            text=t,
            resource_id="",
            cls="android.widget.TextView",
            content_desc="",
            package=package,
            bounds=Bounds(0, 100 * i, 1080, 100 * i + 90),
            clickable=True,
        )
        for i, t in enumerate(texts)
    )
    return Observation(b"png", "<hierarchy/>", elements, f"{package}/.Main", 1080, 2400)


def _step(k: int, screen: Observation, summary: str) -> PastStep:
    return PastStep(k, Action(type=ActionType.TAP, element=0), summary, screen.texts(), screen.package)


HOME_SCREEN = _screen(HOME, "Calendar", "Messages", "Clock")
EVENTS = _screen(CALENDAR, "Dentist", "Standup")
EVENT = _screen(CALENDAR, "Dentist", "10:15 AM - 11:15 AM", "Room 4", "Dentist")
CHATS = _screen(MESSAGES, "Dana Lee", "Chris Park")
CHAT = _screen(MESSAGES, "Dana Lee", "Text message")

# Home → Calendar (two screens) → Messages (two screens, then two more steps in the chat).
HOPPED = (
    _step(1, HOME_SCREEN, "open_app Calendar"),
    _step(2, EVENTS, 'tap 0 "Dentist"'),
    _step(3, EVENT, "open_app Messages"),
    _step(4, CHATS, 'tap 0 "Dana Lee"'),
    _step(5, CHAT, 'tap 1 "Text message"'),
    _step(6, CHAT, 'type 1 "10:15"'),
)


def test_the_screen_left_for_another_app_is_noted_after_the_goal() -> None:
    text = noted._user_text("Text Dana the dentist's time.", CHAT, 7, 20, HOPPED)
    lines = text.splitlines()
    assert lines[0] == "Goal: Text Dana the dentist's time."
    assert lines[1] == "Noted: Dentist; 10:15 AM - 11:15 AM; Room 4"  # once each, in list order
    # Everything else is compact's prompt for the last four steps.
    rest = compact.build_prompt.user_text("Text Dana the dentist's time.", CHAT, 7, 20, HOPPED[-4:])
    assert "\n".join([lines[0], *lines[2:]]) == rest


def test_the_app_the_episode_started_in_is_never_noted() -> None:
    # Home → Calendar: the start screen is left, and nothing was read in an app yet.
    assert noted.noted_line(HOPPED[:1], EVENTS) is None
    assert noted.noted_line(HOPPED[:2], EVENT) is None  # still in Calendar
    # Calendar → Messages: the event's screen.
    assert noted.noted_screen(HOPPED[:3], CHATS) == EVENT.texts()
    # Messages → Home after one step: the chat list is noted; back on Home and on to Clock, it still is.
    home_again = (*HOPPED[:3], _step(4, CHATS, "key home"))
    assert noted.noted_screen(home_again, HOME_SCREEN) == CHATS.texts()
    clock = _screen("com.google.android.deskclock", "Alarms")
    assert noted.noted_screen((*home_again, _step(5, HOME_SCREEN, "open_app Clock")), clock) == CHATS.texts()
    # Steps recorded without their app (older records): nothing is noted.
    bare = tuple(PastStep(p.step, p.action, p.summary) for p in HOPPED)
    assert noted.noted_line(bare, CHAT) is None


def test_a_long_screen_is_noted_in_part() -> None:
    long = _screen(CALENDAR, *(f"Row {i} " + "x" * 60 for i in range(20)))
    history = (_step(1, HOME_SCREEN, "open_app Calendar"), _step(2, long, "open_app Messages"))
    line = noted.noted_line(history, CHATS)
    assert line is not None
    items = line.removeprefix("Noted: ").split("; ")
    assert len(items) == noted.NOTED_TEXTS and all(len(i) <= noted.NOTED_CHARS for i in items)


def test_the_training_prompt_is_what_the_noted_agent_sends_with_the_whole_history() -> None:
    context = StepContext("Text Dana the dentist's time.", 7, 20, CHAT, HOPPED, seed=3)
    trained = demo_prompt(context, "compact-noted")
    decision, messages = sent_prompt(context, "compact-noted")
    assert decision.prompt_hash == trained.hash and messages == trained.messages
    user = trained.messages[1]["content"]
    assert "Noted: Dentist; 10:15 AM - 11:15 AM" in user  # read five steps before, beyond the last four
    assert "open_app Calendar" not in user and 'type 1 "10:15"' in user
    # The compact agent's prompt for the same context is the same without the noted line.
    plain = demo_prompt(context, "compact").messages[1]["content"]
    assert plain == "\n".join(line for line in user.splitlines() if not line.startswith("Noted: "))


def test_a_collected_cross_app_episode_types_a_value_its_prompt_noted() -> None:
    # The expert plays `cross_text_event_time` on a real virtual phone: it reads the event's time in
    # Calendar and texts it from Messages. With `compact-noted`, the prompt of every step typed in Messages
    # holds the text it types; with `compact`, the time is in none of them (what the shipped adapter lacks).
    task = next(t for t in tune_tasks(TASKS) if t.id == "cross_text_event_time")
    plan = EpisodePlan(0, task.id, 0, "oracle", task.instantiate(0).goal, rng_seed=0)
    request = DeviceRequest(count=1, phone_port=free_phone_port(6190))
    with device_backend().devices(request, print) as devices:
        rows = {f: play(plan, task, devices[0], f) for f in ("compact-noted", "compact")}
    assert {f: row["outcome"] for f, row in rows.items()} == {
        "compact-noted": "success",
        "compact": "success",
    }
    typed = {}
    for form, row in rows.items():
        examples = row["examples"]
        assert isinstance(examples, list)
        typed[form] = [
            (json.loads(ex["answer"])["text"], ex["messages"][1]["content"])
            for ex in examples
            if ex["action_type"] == "type"
        ]
    times = [(text, user) for text, user in typed["compact-noted"] if any(c.isdigit() for c in text)]
    assert times, typed["compact-noted"]
    for text, user in times:
        noted_lines = [line for line in user.splitlines() if line.startswith("Noted: ")]
        assert len(noted_lines) == 1 and text in noted_lines[0], (text, user)
    for text, user in typed["compact"]:
        if any(c.isdigit() for c in text):
            assert text not in user and "Noted: " not in user
