"""The prompt and the LLM policy against a real local endpoint: what the model is shown, what comes back."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json

from scripted_endpoint import ScriptedEndpoint, answer, tap

from agent_eval.action import Action, ActionType
from agent_eval.agent.llm import LLMPolicy, step_seed
from agent_eval.agent.parse import parse_action
from agent_eval.agent.policy import PastStep, StepContext
from agent_eval.agent.prompt import (
    MAX_ELEMENTS,
    SYSTEM_PROMPT,
    action_schema,
    build_prompt,
    element_line,
    element_lines,
    schema_allows,
    with_answer,
)
from agent_eval.chat.client import ChatClient
from agent_eval.chat.endpoint import Endpoint
from agent_eval.screen.observation import Bounds, Element, Observation

PNG = b"\x89PNG\r\n\x1a\nfake-pixels"


def el(i: int, cls: str, text: str = "", **kw: object) -> Element:
    return Element(
        index=i,
        cls=cls,
        text=text,
        content_desc=str(kw.pop("desc", "")),
        resource_id=str(kw.pop("rid", "")),
        package="com.android.settings",
        bounds=Bounds(0, 100 * i, 1080, 100 * i + 90),
        **kw,  # type: ignore[arg-type]
    )


def settings_screen() -> Observation:
    elements = (
        el(0, "android.widget.FrameLayout"),
        el(1, "android.widget.TextView", "Internet", clickable=True),
        el(2, "android.widget.Switch", "Wi-Fi", checkable=True, checked=False, clickable=True),
        el(3, "android.widget.ImageButton", desc="Navigate up", clickable=True),
        el(
            4,
            "androidx.recyclerview.widget.RecyclerView",
            rid="com.android.settings:id/list",
            scrollable=True,
        ),
        el(5, "android.widget.EditText", rid="com.android.settings:id/name", focusable=True, focused=True),
    )
    return Observation(PNG, "<hierarchy/>", elements, "com.android.settings/.SubSettings", 1080, 2400)


def test_element_lines_are_compact_and_skip_layout_only_nodes() -> None:
    assert element_lines(settings_screen()) == [
        '[1] TextView "Internet"',
        '[2] Switch "Wi-Fi" checked=false',
        '[3] ImageButton "Navigate up"',
        "[4] RecyclerView id=list scrollable",
        "[5] EditText id=name focused",
    ]


def test_text_and_a_different_description_are_both_shown() -> None:
    e = el(7, "android.widget.Button", "OK", desc="Confirm the name", selected=True, enabled=False)
    assert element_line(e) == '[7] Button "OK" desc="Confirm the name" selected disabled'


def test_a_long_screen_is_cut_and_says_so() -> None:
    many = tuple(
        el(i, "android.widget.TextView", f"Row {i}", clickable=True) for i in range(MAX_ELEMENTS + 5)
    )
    lines = element_lines(Observation(PNG, "", many, "a/.B", 1080, 2400))
    assert len(lines) == MAX_ELEMENTS + 1
    assert lines[-1] == "(… 5 more; scroll to see others)"


def test_the_stable_instructions_come_first_then_goal_history_and_screen() -> None:
    history = (PastStep(1, Action(type=ActionType.TAP, element=1), 'tap 1 "Network & internet"'),)
    prompt = build_prompt("Turn on Wi-Fi", settings_screen(), step=2, max_steps=10, history=history)
    system, user = prompt.messages
    assert system == {"role": "system", "content": SYSTEM_PROMPT}
    text = user["content"]
    assert text.startswith('Goal: Turn on Wi-Fi\nPrevious steps:\n1. tap 1 "Network & internet"\n')
    assert "Step 2 of 10. Screen (SubSettings):" in text
    assert text.index("Previous steps") < text.index("Step 2 of 10") < text.index('[2] Switch "Wi-Fi"')
    # No image for a text-only build, so the recorded prompt is what was sent.
    assert prompt.recorded == prompt.messages


def test_the_screenshot_goes_only_to_builds_that_accept_images_and_is_hashed_in_the_record() -> None:
    screen = settings_screen()
    prompt = build_prompt("Turn on Wi-Fi", screen, step=1, max_steps=10, with_image=True)
    parts = prompt.messages[1]["content"]
    assert parts[1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    recorded = prompt.recorded[1]["content"][1]["image_url"]["url"]
    assert recorded == "sha256:" + hashlib.sha256(PNG).hexdigest()
    assert "base64" not in json.dumps(prompt.recorded)
    # The message sent still carries the image (the record is a copy).
    assert parts[1]["image_url"]["url"].startswith("data:image/png")


def test_the_prompt_hash_is_stable_and_changes_with_what_the_model_sees() -> None:
    screen = settings_screen()
    a = build_prompt("Turn on Wi-Fi", screen, step=1, max_steps=10)
    b = build_prompt("Turn on Wi-Fi", screen, step=1, max_steps=10)
    c = build_prompt("Turn off Wi-Fi", screen, step=1, max_steps=10)
    assert a.hash == b.hash and len(a.hash) == 64
    assert a.hash != c.hash
    other_pixels = dataclasses.replace(screen, screenshot_png=PNG + b"x")
    with_image_a = build_prompt("g", screen, step=1, max_steps=3, with_image=True)
    with_image_b = build_prompt("g", other_pixels, step=1, max_steps=3, with_image=True)
    assert with_image_a.hash != with_image_b.hash


def test_every_answer_the_schema_allows_parses_into_that_action() -> None:
    samples = {"integer": 2, "string": "x"}
    for alt in action_schema()["anyOf"]:
        props = alt["properties"]
        assert next(iter(props)) == "type" and alt["required"] == list(props)
        obj = {
            name: (spec["enum"][0] if "enum" in spec else samples[spec["type"]])
            for name, spec in props.items()
        }
        parsed = parse_action(json.dumps(obj))
        assert parsed.action is not None, (obj, parsed.reason)
        assert parsed.action.type.value == obj["type"]


def test_the_schema_allows_every_action_type() -> None:
    # A type missing here can never be answered under structured output, however well it was trained:
    # swipe was missing until 2026-12-01, so every shade path the tuning data taught was masked away.
    types = {alt["properties"]["type"]["enum"][0] for alt in action_schema()["anyOf"]}
    assert types == {t.value for t in ActionType} - {"answer"}
    # The answer action is offered only to a task that asks a question (its prompt lists it too).
    answering = {alt["properties"]["type"]["enum"][0] for alt in with_answer(action_schema())["anyOf"]}
    assert answering == {t.value for t in ActionType}
    assert with_answer(with_answer(action_schema())) == with_answer(action_schema())


def test_the_schema_allows_typing_into_the_focused_field_as_the_expert_teaches_it() -> None:
    # After a tap on a picker's minutes the expert types with no element (into the field that has focus). With
    # the element required, llama.cpp's grammar forced one the model was never taught: it copied the hour's,
    # and typed the minutes into the hour (clock and calendar tasks, 2026-12-03).
    schema = action_schema()
    assert schema_allows(schema, {"type": "type", "text": "30"})
    assert schema_allows(schema, {"type": "type", "element": 2, "text": "9"})
    assert not schema_allows(schema, {"type": "type", "element": 2})
    assert not schema_allows(schema, {"type": "tap"})
    parsed = parse_action(json.dumps({"type": "type", "text": "30"}))
    assert parsed.action is not None and parsed.action.element is None and parsed.action.text == "30"


def test_llm_policy_asks_the_endpoint_with_schema_and_seed_and_returns_the_decision() -> None:
    screen = settings_screen()
    with ScriptedEndpoint([tap("Internet"), tap("Wi-Fi")]) as server:
        client = ChatClient(Endpoint(base_url=server.url, model="scripted"))
        policy = LLMPolicy(client, history_len=1)
        history = (
            PastStep(1, Action(type=ActionType.KEY, key="home"), "key home"),
            PastStep(2, Action(type=ActionType.TAP, element=9), 'tap 9 "Settings"'),
        )
        decision = policy.decide(StepContext("Turn on Wi-Fi", 2, 10, screen, history, seed=5))
        client.close()
    assert decision.action == Action(type=ActionType.TAP, element=2)
    assert decision.raw_answer == '{"type": "tap", "element": 2}'
    assert decision.invalid_reason is None
    assert decision.prompt_tokens > 0 and decision.completion_tokens > 0 and decision.model_s > 0
    sent = server.requests[0]
    assert sent["seed"] == step_seed(5, 2) != step_seed(5, 3)
    assert sent["response_format"]["json_schema"]["schema"] == action_schema()
    user = sent["messages"][1]["content"]
    assert 'tap 9 "Settings"' in user and "key home" not in user  # only the last history_len steps
    assert decision.prompt == sent["messages"]
    assert len(decision.prompt_hash) == 64


def test_a_junk_answer_is_an_invalid_decision_not_an_error() -> None:
    with ScriptedEndpoint([answer("I would like to help you with your phone!")]) as server:
        client = ChatClient(Endpoint(base_url=server.url, model="scripted", structured_output=False))
        decision = LLMPolicy(client).decide(StepContext("g", 1, 3, settings_screen(), (), seed=0))
        client.close()
    assert decision.action is None
    assert decision.invalid_reason is not None and "no JSON action" in decision.invalid_reason
    assert "response_format" not in server.requests[0]


ROW_XML = (
    "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
    '<node class="android.widget.FrameLayout" text="" bounds="[0,0][1080,2400]">'
    '<node class="android.widget.LinearLayout" clickable="true" text="" bounds="[0,300][1080,450]">'
    '<node class="android.widget.TextView" text="Wi-Fi" bounds="[40,320][600,380]"/>'
    '<node class="android.widget.TextView" text="Off" bounds="[40,380][600,430]"/>'
    '<node class="android.widget.Switch" text="OFF" checkable="true" checked="false"'
    ' bounds="[900,340][1040,410]"/>'
    "</node>"
    '<node class="android.widget.Switch" text="OFF" checkable="true" checked="true"'
    ' bounds="[900,600][1040,700]"/>'
    "</node></hierarchy>"
)


def test_a_switch_that_only_says_on_or_off_is_named_by_its_rows_title() -> None:
    from agent_eval.screen.uitree import parse_ui

    elements, nodes = parse_ui(ROW_XML)
    screen = Observation(PNG, ROW_XML, tuple(elements), "a/.B", 1080, 2400, tuple(nodes))
    assert element_lines(screen) == [
        '[0] TextView "Wi-Fi"',
        '[1] TextView "Off"',
        '[2] Switch "Wi-Fi" checked=false',
        '[3] Switch "OFF" checked=true',  # not in a row: nothing better to call it
    ]


def test_past_steps_name_what_was_acted_on() -> None:
    from agent_eval.agent.prompt import action_summary

    screen = settings_screen()

    def summary(**fields: object) -> str:
        return action_summary(Action.model_validate(fields), screen)

    assert summary(type="tap", element=2) == 'tap 2 "Wi-Fi"'
    assert summary(type="tap", element=4) == "tap 4 (RecyclerView)"
    assert summary(type="long_press", element=42) == "long_press 42 (not on screen)"
    assert summary(type="scroll", direction="down") == "scroll down"
    assert summary(type="type", element=5, text="Pixel 8") == 'type 5 (EditText) "Pixel 8"'
    assert summary(type="open_app", app="Settings") == "open_app Settings"
    assert summary(type="tap", x=10, y=20) == "tap at 10,20"
    assert action_summary(None, screen) == "invalid answer (ignored)"
