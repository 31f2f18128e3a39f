"""The answers the goals files give are the phone's own: every count, comparison and question a goals file
makes is worked out again here from the phone's app files (the records a fresh phone holds) and the task's
own setup and seeded files, never from the goals file's pools."""

from __future__ import annotations

import datetime as dt
import posixpath
import re
import shlex
from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent_eval.task.answer_kind import AnswerCheck, AnswerPredicate
from agent_eval.task.goal_kinds import AllPredicate, ElementPredicate
from agent_eval.tune.generator import GoalInstance, enumerate_goals, load_families
from agent_eval.tune.launcher import phone_apps_dir

GOALS = Path(__file__).resolve().parents[2] / "goals"
ANSWERED = ("count", "question", "compare", "change_question")
MARKOR = "/sdcard/Documents/Markor"


@cache
def phone_data(app: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((phone_apps_dir() / f"{app}.yaml").read_text(encoding="utf-8"))
    return data["data"]


def rows(app: str, table: str) -> list[dict[str, Any]]:
    return list(phone_data(app)["tables"][table]["rows"])


def binds(command: str) -> dict[str, str]:
    """A `content insert` command's `--bind name:type:value` values by name."""
    words = shlex.split(command)
    pairs = [words[k + 1].split(":", 2) for k, w in enumerate(words[:-1]) if w == "--bind"]
    return {name: value for name, _, value in pairs}


def inserts(g: GoalInstance, uri: str) -> list[dict[str, str]]:
    return [binds(c) for c in g.task.setup if c.startswith("content insert") and f"--uri {uri} " in c]


def answer_check(g: GoalInstance) -> AnswerCheck:
    """The check of the answer itself (a change plus a question checks the change beside it)."""
    answer = g.task.answer
    if isinstance(answer, AllPredicate):
        answer = answer.all_[0]
    assert isinstance(answer, AnswerPredicate), g.task.id
    return answer.answer


def named(texts: list[str], goal: str) -> list[str]:
    """Which of `texts` the goal names, in the order the goal names them."""
    found = [t for t in texts if t and re.search(rf"(?<!\w){re.escape(t)}(?!\w)", goal)]
    return sorted(found, key=goal.index)


def _clock_text(hour: int, minute: int) -> str:
    return f"{(hour % 12) or 12}:{minute:02d} {'AM' if hour < 12 else 'PM'}"


def _utc(ms: object) -> dt.datetime:
    return dt.datetime.fromtimestamp(int(str(ms)) / 1000, tz=dt.UTC)


def calendar_truth(g: GoalInstance) -> str:
    events = [{**r, "dtstart": str(r["dtstart"])} for r in rows("calendar", "Events")]
    added = inserts(g, "content://com.android.calendar/events")
    if g.kind == "change_question":
        return str(len(events) + len(added) - 1)  # one added event cancelled
    if g.kind == "count":
        day = int(re.findall(r"January (\d+)", g.task.goal)[0])
        return str(sum(_utc(e["dtstart"]).day == day for e in [*events, *added]))
    mentioned = [
        e for t in named([str(e["title"]) for e in events], g.task.goal) for e in events if e["title"] == t
    ]
    if g.kind == "compare":
        return str(min(mentioned, key=lambda e: int(e["dtstart"]))["title"])
    (event,) = mentioned
    if answer_check(g).matches is not None:  # when it starts
        start = _utc(event["dtstart"])
        return _clock_text(start.hour, start.minute)
    return str(event["eventLocation"])


def contact_numbers() -> list[tuple[str, str]]:
    """(name, number) of every phone number of the phone's contacts, in the order the phone has them."""
    names = {r["_id"]: r["display_name"] for r in rows("contacts", "raw_contacts")}
    phones = [r for r in rows("contacts", "data") if r["mimetype"].endswith("/phone_v2")]
    return [(names[p["raw_contact_id"]], str(p["data1"])) for p in phones]


def last_seven(number: object) -> str:
    return re.sub(r"\D", "", str(number))[-7:]


def messages_truth(g: GoalInstance) -> str:
    sms = rows("messages", "sms")
    added = inserts(g, "content://sms/inbox")
    addresses = {str(r["address"]) for r in sms} | {a["address"] for a in added}
    if g.kind == "change_question":
        return str(len(addresses) - 1)  # one conversation deleted
    if g.kind == "count":
        return str(len(addresses))
    if g.kind == "question":
        return max(added, key=lambda a: int(a["date"]))["body"]
    who = {last_seven(number): name for name, number in contact_numbers()}
    received = sorted((r for r in sms if r["type"] == 1), key=lambda r: int(r["date"]))
    latest = {who.get(last_seven(r["address"]), str(r["address"])): int(r["date"]) for r in received}
    return max(named(list(latest), g.task.goal), key=lambda name: latest[name])


def _phone_files() -> dict[str, int]:
    return {
        path: len(text.encode())
        for app in ("files", "markor")
        for path, text in phone_data(app)["files"].items()
    }


def files_truth(g: GoalInstance) -> str:
    sizes = {**_phone_files(), **{f.to: len((f.text or "").encode()) for f in g.task.files}}
    if g.kind == "compare":
        download = [posixpath.basename(p) for p in sizes if p.startswith("/sdcard/Download/")]
        return max(named(download, g.task.goal), key=lambda name: sizes[f"/sdcard/Download/{name}"])
    reached = g.task.goal_state
    folder = reached.element.text if isinstance(reached, ElementPredicate) else "Download"
    held = sum(posixpath.dirname(p) == f"/sdcard/{folder}" for p in sizes)
    return str(held - (g.kind == "change_question"))  # one file deleted first


def markor_truth(g: GoalInstance) -> str:
    notes = {p for p in _phone_files() if p.startswith(MARKOR + "/")} | {f.to for f in g.task.files}
    if g.kind in ("count", "change_question"):
        return str(len(notes) - (g.kind == "change_question"))  # one note deleted first
    if g.task.files:  # a value written in a note the task adds
        (seeded,) = g.task.files
        return (seeded.text or "").splitlines()[-1].split(": ", 1)[1]
    shopping = phone_data("markor")["files"][f"{MARKOR}/shopping_list.md"].splitlines()
    items = [line.removeprefix("- ") for line in shopping if line.startswith("- ")]
    return "yes" if named(items, g.task.goal) else "no"  # is a thing the list holds what the goal names?


def contacts_truth(g: GoalInstance) -> str:
    if g.kind == "count":
        return str(
            len(rows("contacts", "raw_contacts"))
            + len(inserts(g, "content://com.android.contacts/raw_contacts"))
        )
    numbers = dict(reversed(contact_numbers()))  # a contact's first number
    (name,) = named(list(numbers), g.task.goal)
    return numbers[name]


def clock_truth(g: GoalInstance) -> str:
    alarms = [r for r in rows("clock", "alarm_templates") if r["label"]]
    if g.kind in ("count", "change_question"):
        on = sum(r["enabled"] == 1 for r in rows("clock", "alarm_templates"))
        added_on = sum(c.endswith(', 1)"') for c in g.task.setup)
        return str(on + added_on - (g.kind == "change_question"))  # the added alarm switched off first
    mentioned = [
        a for label in named([a["label"] for a in alarms], g.task.goal) for a in alarms if a["label"] == label
    ]
    if g.kind == "compare":
        return str(min(mentioned, key=lambda a: a["hour"] * 60 + a["minutes"])["label"])
    (alarm,) = mentioned
    return _clock_text(alarm["hour"], alarm["minutes"])


TRUTH: dict[str, Callable[[GoalInstance], str]] = {
    "calendar": calendar_truth,
    "messages": messages_truth,
    "files": files_truth,
    "markor": markor_truth,
    "contacts": contacts_truth,
    "clock": clock_truth,
}


@pytest.fixture(scope="module")
def answered() -> list[GoalInstance]:
    return [g for g in enumerate_goals(load_families(GOALS)) if g.kind in ANSWERED]


def test_every_family_that_asks_has_its_answers_worked_out_here(answered: list[GoalInstance]) -> None:
    assert {g.family for g in answered} <= set(TRUTH)
    assert {"count", "question", "compare", "change_question"} <= {g.kind for g in answered}


def test_every_answer_is_the_phone_s_own_data(answered: list[GoalInstance]) -> None:
    checked = Counter[str]()
    for g in answered:
        truth = TRUTH[g.family](g)
        assert answer_check(g).accepts(truth), f"{g.task.id}: {g.task.goal!r} is {truth!r} on the phone"
        checked[g.family] += 1
    assert set(checked) == set(TRUTH)
