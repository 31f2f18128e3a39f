"""Answer tasks and the data predicates on a fake device: the answer action (parser, prompts, schema,
outcome), the `answer`, `content_query`, `file` and `sqlite` predicates, and seed data checked at load."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from agent_eval.action import Action, ActionType
from agent_eval.agent import compact, prompt
from agent_eval.agent.llm import LLMPolicy
from agent_eval.agent.parse import parse_action
from agent_eval.agent.policy import Decision, StepContext
from agent_eval.device.adb import ShellResult
from agent_eval.errors import TaskError
from agent_eval.records import Outcome, classify_answer
from agent_eval.runner.episode import run_episode
from agent_eval.screen.observation import Bounds, Element, Observation
from agent_eval.task import goal_holds
from agent_eval.task.data_kinds import parse_content_rows
from agent_eval.task.loading import task_from_data

CONTACTS = "Row: 0 display_name=Dana Reyes, data1=+1 555-0134\nRow: 1 display_name=Sam, Jr., data1=555 0199\n"


GOAL = {"setting": {"namespace": "global", "key": "x", "equals": "1"}}


class FakeDevice:
    """Answers shell commands from a table; records what it was asked."""

    def __init__(self, answers: dict[str, ShellResult]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def shell(self, cmd: str, timeout_s: float = 10, *, idempotent: bool = False) -> ShellResult:
        self.asked.append(cmd)
        return self.answers.get(cmd, ShellResult("", 1))

    def setting(self, namespace: str, key: str) -> str | None:
        return None

    def focused_activity(self) -> str:
        return "com.android.settings/.Settings"

    def settled_ui(self) -> str:
        return "<hierarchy/>"


def task(goal_state: dict[str, Any], **more: Any) -> Any:
    return task_from_data(
        {"id": "t", "goal": "What is Dana's number?", "goal_state": goal_state, **more}, "t.yaml"
    )


def holds(goal_state: dict[str, Any], device: FakeDevice) -> bool:
    return goal_holds(task(goal_state).goal_state, device)


def answered(check: dict[str, Any], answer: str | None) -> bool:
    """The task's `answer:` check on the agent's final answer (None: it gave none)."""
    loaded = task(GOAL, answer={"answer": check})
    return goal_holds(loaded.answer, FakeDevice({}), answer=answer)


# -- the answer action -------------------------------------------------------------------------------------


ANSWERS = (
    '{"type": "answer", "text": "555-0134"}',
    '{"answer": "555-0134"}',
    '{"action": "reply", "text": "555-0134"}',
)


def test_the_parser_reads_an_answer_and_its_text() -> None:
    for text in ANSWERS:
        parsed = parse_action(text)
        assert parsed.action is not None and parsed.action.type is ActionType.ANSWER, text
        assert parsed.action.text == "555-0134" and parsed.action.is_terminal


def test_an_answer_without_text_is_an_invalid_step() -> None:
    assert parse_action('{"type": "answer"}').reason == 'answer needs the "text" of the answer'


def test_only_a_task_that_asks_a_question_is_offered_the_answer_action() -> None:
    # The compact prompt is what the shipped adapter was trained on: other tasks' prompts keep every byte.
    assert compact.SYSTEM_PROMPT == (
        "Phone agent. Reply with one JSON action: tap, long_press, type, scroll, swipe, key, open_app, wait,"
        " done, infeasible."
    )
    assert "answer" in compact.SYSTEM_PROMPT_ANSWERS and "answer" in prompt.SYSTEM_PROMPT_ANSWERS
    assert '"answer"' not in prompt.SYSTEM_PROMPT

    sent: list[tuple[list[dict[str, Any]], dict[str, Any] | None]] = []

    class Client:
        endpoint = type("E", (), {"accepts_images": False})()

        def chat(self, messages: list[dict[str, Any]], json_schema: Any = None, seed: int = 0) -> Any:
            sent.append((messages, json_schema))
            reply = {"text": '{"type": "done"}', "finish_reason": "stop", "prompt_tokens": 1}
            return type("R", (), {**reply, "completion_tokens": 1, "waited_s": 0.0})()

    policy = LLMPolicy(Client(), prompt_format=compact.build_prompt)  # type: ignore[arg-type]
    screen = Observation(b"", "", (), "com.android.contacts/.People", 1080, 2400)
    for answers in (False, True):
        policy.decide(StepContext("Q?", 1, 5, screen, (), 0, answers=answers))
    (plain, plain_schema), (asking, asking_schema) = sent
    assert (
        plain[0]["content"] == compact.SYSTEM_PROMPT and asking[0]["content"] == compact.SYSTEM_PROMPT_ANSWERS
    )
    types = [a["properties"]["type"]["enum"][0] for a in (asking_schema or {})["anyOf"]]
    assert "answer" in types and "answer" not in json.dumps(plain_schema)


def test_an_answer_task_succeeds_only_on_a_right_answer() -> None:
    assert classify_answer([False, True], "answer", True) is Outcome.SUCCESS
    assert classify_answer([False, False], "answer", True) is Outcome.SUCCESS  # known without looking
    # Stopping on the screen that shows the answer and reading it wrong is not "never stopped".
    assert classify_answer([False, True], "answer", False) is Outcome.WRONG_ANSWER
    assert classify_answer([False, True], "done", None) is Outcome.WRONG_ANSWER
    assert classify_answer([False, True], None, None) is Outcome.NO_STOP
    assert classify_answer([False, False], "answer", False) is Outcome.PREMATURE_DONE
    assert classify_answer([False, False], None, None) is Outcome.NAV_FAIL


# -- the answer predicate ----------------------------------------------------------------------------------


def test_the_answer_is_compared_after_the_declared_normalisation() -> None:
    digits = {"equals": "+1 (555) 0134", "normalize": ["digits"]}
    assert answered(digits, "15550134") and answered(digits, "+1 555-0134")
    assert not answered(digits, "555-0134") and not answered(digits, None)
    words = {"equals": ["Dana Reyes", "Dana"]}  # case and whitespace by default
    assert answered(words, "  dana   REYES ") and answered(words, "Dana")
    pattern = {"matches": r"0?7:30( am)?", "normalize": ["case"]}
    assert answered(pattern, "7:30 AM") and not answered(pattern, "17:30")


def test_a_bad_answer_pattern_fails_at_load_naming_file_and_field() -> None:
    with pytest.raises(TaskError, match=r"t\.yaml: answer\.matches: not a valid regular expression"):
        task(
            {"setting": {"namespace": "global", "key": "x", "equals": "1"}},
            answer={"answer": {"matches": "(7"}},
        )


def test_the_answer_is_checked_in_answer_not_in_goal_state() -> None:
    with pytest.raises(TaskError, match="goal_state cannot check the answer"):
        task({"answer": {"equals": "1"}})
    with pytest.raises(TaskError, match="`answer:` needs an answer predicate"):
        task(
            {"file": {"path": "/sdcard/a", "exists": True}},
            answer={"file": {"path": "/sdcard/a", "exists": True}},
        )


# -- content_query, file, sqlite ---------------------------------------------------------------------------


def test_content_rows_parse_in_androids_format() -> None:
    assert parse_content_rows("No result found.\n") == []
    rows = parse_content_rows(CONTACTS)
    assert rows == [
        {"display_name": "Dana Reyes", "data1": "+1 555-0134"},
        {"display_name": "Sam, Jr.", "data1": "555 0199"},  # a ", " inside a value stays in it
    ]
    with pytest.raises(TaskError, match="refused the query"):
        parse_content_rows("Error while accessing provider:contacts\njava.lang.IllegalArgumentException: x")


def test_content_query_checks_rows_through_the_shell() -> None:
    uri = "content://com.android.contacts/data/phones"
    where = "display_name LIKE 'D%'"
    command = shlex.join(
        ["content", "query", "--uri", uri, "--projection", "display_name:data1", "--where", where]
    )
    device = FakeDevice({command: ShellResult(CONTACTS, 0)})
    base = {"uri": uri, "projection": ["display_name", "data1"], "where": where}
    assert holds({"content_query": {**base, "exists": True}}, device)
    assert holds({"content_query": {**base, "count": 2}}, device)
    assert holds({"content_query": {**base, "field": "data1", "equals": "555 0199"}}, device)
    assert not holds({"content_query": {**base, "field": "data1", "matches": "^9"}}, device)
    assert device.asked[0] == command
    empty = FakeDevice({f"content query --uri {uri}": ShellResult("No result found.\n", 0)})
    assert holds({"content_query": {"uri": uri, "exists": False}}, empty)


def test_file_and_sqlite_predicates() -> None:
    device = FakeDevice(
        {
            "ls -d /sdcard/Download/a.txt": ShellResult("/sdcard/Download/a.txt\n", 0),
            "cat /sdcard/Download/a.txt": ShellResult("milk\neggs\n", 0),
            "su 0 sqlite3 /data/user_de/0/com.google.android.deskclock/databases/alarms.db "
            "'SELECT hour, minutes FROM alarm_templates WHERE label='\"'\"'Gym'\"'\"''": ShellResult(
                "7|30\n", 0
            ),
        }
    )
    assert holds({"file": {"path": "/sdcard/Download/a.txt", "exists": True}}, device)
    assert holds({"file": {"path": "/sdcard/Download/b.txt", "exists": False}}, device)
    assert holds({"file": {"path": "/sdcard/Download/a.txt", "contains": "eggs"}}, device)
    assert not holds({"file": {"path": "/sdcard/Download/b.txt", "contains": "eggs"}}, device)
    db = "/data/user_de/0/com.google.android.deskclock/databases/alarms.db"
    sql = "SELECT hour, minutes FROM alarm_templates WHERE label='Gym'"
    assert holds({"sqlite": {"database": db, "query": sql, "equals": "7|30"}}, device)
    assert holds({"sqlite": {"database": db, "query": sql, "rows": 1}}, device)


# -- seed data ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "wanted"),
    [
        ("content insert --uri content://sms/inbox --bind body:x:hi", "not COLUMN:TYPE:VALUE"),
        ("content insert --uri content://sms/inbox --bind date:l:noon", "'noon' is not a number of type l"),
        ("content insert --uri sms/inbox --bind body:s:hi", "is not a content URI"),
        ("content insert --bind body:s:hi", "needs exactly one --uri"),
        ("content add --uri content://sms/inbox", "takes one of insert, update, delete, query"),
        ("content insert --uri content://sms/inbox --bind 'body:s:unclosed", "cannot split"),
    ],
)
def test_bad_seed_commands_fail_at_load_naming_file_and_setup_entry(command: str, wanted: str) -> None:
    good = "content insert --uri content://sms/inbox --bind address:s:+15550100 --bind body:s:Hi%sthere"
    with pytest.raises(TaskError) as error:
        task(GOAL, setup=[good, command])
    assert str(error.value).startswith(f"t.yaml: setup[1]: `{command}`: ") and wanted in str(error.value)
    assert task(GOAL, setup=[good]).setup == [good]


def test_seed_files_need_one_source_and_a_file_that_exists(tmp_path: Path) -> None:
    with pytest.raises(TaskError, match=r"t\.yaml: files\[0\]: give exactly one of 'source'"):
        task(GOAL, files=[{"to": "/sdcard/a.txt"}])
    with pytest.raises(TaskError, match=r"t\.yaml: files\[0\]\.source: no such file"):
        task(GOAL, files=[{"to": "/sdcard/a.txt", "source": str(tmp_path / "missing.txt")}])
    (tmp_path / "list.txt").write_text("milk\n")
    loaded = task(GOAL, files=[{"to": "/sdcard/Download/list.txt", "source": str(tmp_path / "list.txt")}])
    assert loaded.files[0].local(None) == tmp_path / "list.txt"


# -- an answer episode, end to end on a fake phone ---------------------------------------------------------


class FakePhone(FakeDevice):
    """A phone whose one screen shows the device name, for run_episode."""

    serial = "fake-1"

    def __init__(self) -> None:
        super().__init__({})
        label = Element(
            0, "android.widget.TextView", "Lab Phone", "", "", "com.android.settings", Bounds(0, 0, 9, 9)
        )
        self.screen = Observation(b"", "", (label,), "com.android.settings/.Settings", 1080, 2400)
        self.shown = False

    def shell(self, cmd: str, timeout_s: float = 10, *, idempotent: bool = False) -> ShellResult:
        self.asked.append(cmd)
        return ShellResult("", 0)

    def observe(self) -> Observation:
        return self.screen if self.shown else Observation(b"", "", (), "launcher/.Home", 1080, 2400)

    def act(self, action: Action, observation: Observation) -> None:
        self.shown = True

    def reset(self, snapshot: str | None = "default_boot") -> None:
        self.shown = False

    def open_app(self, app: str) -> str:
        self.shown = True
        return app

    def start_activity(self, component: str) -> None:
        self.shown = True

    def start_intent(self, action: str) -> None:
        self.shown = True

    def wait_until_online(self, timeout_s: float = 60.0) -> None:
        return None


class Answering:
    """Opens the page, then answers; records whether it was offered the answer action."""

    def __init__(self, answer: str) -> None:
        self.answer, self.offered = answer, False

    def decide(self, context: StepContext) -> Decision:
        self.offered = context.answers
        if context.step == 1:
            return Decision(Action(type=ActionType.OPEN_APP, app="Settings"))
        return Decision(Action(type=ActionType.ANSWER, text=self.answer))


@pytest.mark.parametrize(
    ("said", "outcome"), [("lab phone", Outcome.SUCCESS), ("Pixel", Outcome.WRONG_ANSWER)]
)
def test_an_answer_episode_records_the_answer_and_judges_it(
    tmp_path: Path, said: str, outcome: Outcome
) -> None:
    # The answer check is the seed's: its parameters are filled in before the answer is judged.
    params = {"params": {"name": ["Lab Phone"]}}
    loaded = task({"element": {"text": "{name}"}}, answer={"answer": {"equals": "{name}"}}, **params)
    policy = Answering(said)
    record = run_episode(
        FakePhone(), loaded.instantiate(0), policy, build="b", run_id="r", episode_dir=tmp_path
    )
    assert policy.offered and record.outcome is outcome and record.reached
    assert record.said == "answer" and record.said_at_step == 2 and record.answer == said
    assert record.answer_correct is (outcome is Outcome.SUCCESS) and record.goal_timeline == [False, True]
