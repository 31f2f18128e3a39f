"""The tolerant parser: small-model answers with junk around the JSON, synonyms, answers it must refuse."""

from __future__ import annotations

import pytest

from agent_eval.action import Action, ActionType
from agent_eval.agent.parse import parse_action
from agent_eval.screen.observation import Bounds, Element, Observation


def _screen() -> Observation:
    def el(i: int, cls: str, text: str, **kw: bool) -> Element:
        return Element(
            i, cls, text, "", "", "com.android.settings", Bounds(0, 100 * i, 1080, 100 * i + 90), **kw
        )

    elements = (
        el(0, "android.widget.TextView", "Internet", clickable=True),
        el(1, "android.widget.Switch", "Wi-Fi", checkable=True, clickable=True),
    )
    return Observation(b"", "", elements, "com.android.settings/.Settings", 1080, 2400)


TAP_3 = Action(type=ActionType.TAP, element=3)


@pytest.mark.parametrize(
    "answer",
    [
        '{"type": "tap", "element": 3}',
        '```json\n{"type": "tap", "element": 3}\n```',
        'Sure! The next step is:\n{"type": "tap", "element": 3}\nThis opens the menu.',
        "{'type': 'tap', 'element': 3}",
        '{"type": "tap", "element": 3,}',
        '{type: "tap", element: 3}',
        '{"action": "click", "index": "3"}',
        '{"action": {"type": "press", "element": "[3]"}}',
        '{"type": "TAP", "element": 3.0}',
        '{"click": 3}',
        "tap(3)",
        "click [3]",
        '{"type": "tap", "element": 3',  # cut off by the token limit
    ],
)
def test_tap_3_is_found_however_it_is_wrapped(answer: str) -> None:
    parsed = parse_action(answer)
    assert parsed.action == TAP_3, parsed.reason
    assert parsed.reason is None


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"type": "finish"}', Action(type=ActionType.DONE)),
        ('{"type": "complete"}', Action(type=ActionType.DONE)),
        ('{"status": "x", "type": "done"}', Action(type=ActionType.DONE)),
        ("done", Action(type=ActionType.DONE)),
        ('{"type": "impossible"}', Action(type=ActionType.INFEASIBLE)),
        ('{"type": "back"}', Action(type=ActionType.KEY, key="back")),
        ('{"type": "key", "key": "KEYCODE_HOME"}', Action(type=ActionType.KEY, key="home")),
        ('{"type": "scroll_down"}', Action(type=ActionType.SCROLL, direction="down")),
        ('{"type": "scroll", "direction": "Up"}', Action(type=ActionType.SCROLL, direction="up")),
        ('{"type": "swipe", "dir": "left"}', Action(type=ActionType.SWIPE, direction="left")),
        (
            '{"type": "input_text", "element": 2, "value": "Pixel"}',
            Action(type=ActionType.TYPE, element=2, text="Pixel"),
        ),
        ('{"type": "launch", "app": " Settings "}', Action(type=ActionType.OPEN_APP, app="Settings")),
        ('{"type": "wait", "seconds": 99}', Action(type=ActionType.WAIT, seconds=10.0)),
        ('{"type": "tap", "x": 540, "y": 1200}', Action(type=ActionType.TAP, x=540, y=1200)),
        ('{"type": "long_click", "element": 0}', Action(type=ActionType.LONG_PRESS, element=0)),
    ],
)
def test_synonyms_map_to_the_projects_actions(answer: str, expected: Action) -> None:
    assert parse_action(answer).action == expected


def test_an_element_named_by_its_label_is_resolved_on_the_screen_shown() -> None:
    screen = _screen()
    assert parse_action('{"type": "tap", "element": "Wi-Fi"}', screen).action == Action(
        type=ActionType.TAP, element=1
    )
    assert parse_action('{"type": "tap", "text": "internet"}', screen).action == Action(
        type=ActionType.TAP, element=0
    )
    # Without the screen, a label cannot be an element.
    assert parse_action('{"type": "tap", "element": "Wi-Fi"}').action is None


def test_the_first_usable_object_wins_over_an_earlier_broken_one() -> None:
    parsed = parse_action('{"type": "fly"} no wait: {"type": "tap", "element": 3}')
    assert parsed.action == TAP_3


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "empty answer"),
        ("I think we should open the settings app first.", "no JSON action in the answer"),
        ('{"type": "fly", "element": 3}', "unknown action type 'fly'"),
        ('{"element": 3}', 'no action type (expected a "type" field)'),
        ('{"type": "tap"}', "tap needs an element number (or x and y)"),
        ('{"type": "scroll", "direction": "sideways"}', "scroll needs a direction"),
        ('{"type": "key", "key": "volume_up"}', "key needs one of back, home, enter"),
        ('{"type": "type", "element": 2}', 'type needs the "text" to enter'),
        ('{"type": "open_app"}', 'open_app needs the "app"'),
        ('{"type": "tap", "element": "the blue one"}', "element 'the blue one' is not an element number"),
        ("{{{{", "could not be read"),
    ],
)
def test_unusable_answers_become_invalid_steps_with_a_reason(answer: str, reason: str) -> None:
    parsed = parse_action(answer, _screen())
    assert parsed.action is None
    assert parsed.reason is not None and reason in parsed.reason
