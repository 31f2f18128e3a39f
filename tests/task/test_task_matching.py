"""Element predicates and the oracle's element lookup, on a literal uiautomator dump (no device needed)."""

from __future__ import annotations

from _ui_dumps import SCREEN

from agent_eval.action import ActionType
from agent_eval.agent.oracle import OraclePolicy, resolve
from agent_eval.agent.policy import StepContext
from agent_eval.screen.observation import Observation
from agent_eval.screen.uitree import parse_ui
from agent_eval.task.loading import task_from_data
from agent_eval.task.predicates import matching_elements
from agent_eval.task.schema import ElementCheck, OracleStep


def observation() -> Observation:
    elements, nodes = parse_ui(SCREEN)
    return Observation(
        screenshot_png=b"",
        ui_xml=SCREEN,
        elements=tuple(elements),
        activity="com.android.settings/.Settings$NetworkProviderSettingsActivity",
        width=1080,
        height=2400,
        all_nodes=tuple(nodes),
    )


def check(**fields: object) -> ElementCheck:
    return ElementCheck.model_validate(fields)


def test_element_checks_select_by_row_class_id_and_state() -> None:
    nodes = observation().all_nodes
    assert len(matching_elements(check(row="Wi-Fi", **{"class": "Switch"}, checked=True), nodes)) == 1
    assert matching_elements(check(row="Wi-Fi", **{"class": "Switch"}, checked=False), nodes) == []
    assert matching_elements(check(row="AndroidWifi", **{"class": "Switch"}), nodes) == []
    assert len(matching_elements(check(resource_id="switch_widget"), nodes)) == 1
    assert len(matching_elements(check(resource_id="com.android.settings:id/switch_widget"), nodes)) == 1
    assert len(matching_elements(check(text_matches="^Android"), nodes)) == 1
    assert len(matching_elements(check(content_desc="Navigate up"), nodes)) == 1
    assert matching_elements(check(text="Bluetooth"), nodes) == []


def test_oracle_steps_resolve_to_listed_elements_or_coordinates() -> None:
    obs = observation()
    tap = resolve(OracleStep(type=ActionType.TAP, text="Wi-Fi"), obs)
    assert not isinstance(tap, str) and tap.element is not None
    assert obs.elements[tap.element].text == "Wi-Fi"
    switch = resolve(OracleStep.model_validate({"type": "tap", "class": "Switch"}), obs)
    assert (
        not isinstance(switch, str) and switch.element is not None and obs.elements[switch.element].checkable
    )
    typed = resolve(OracleStep(type=ActionType.TYPE, text="hello", resource_id="switch_widget"), obs)
    assert not isinstance(typed, str) and typed.text == "hello" and typed.element == switch.element
    missing = resolve(OracleStep(type=ActionType.TAP, text="Bluetooth"), obs)
    assert isinstance(missing, str) and "Bluetooth" in missing


def test_oracle_policy_replays_scrolls_until_visible_then_says_done() -> None:
    task = task_from_data(
        {
            "id": "t",
            "goal": "g",
            "goal_state": {"setting": {"namespace": "global", "key": "wifi_on", "equals": "1"}},
            "oracle": [
                {"type": "scroll", "direction": "down", "until": "Wi-Fi"},
                {"type": "scroll", "direction": "down", "until": "Not there", "max_repeats": 2},
                {"type": "tap", "text": "Wi-Fi"},
            ],
        },
        "t.yaml",
    )
    policy = OraclePolicy(task.instantiate(0))
    obs = observation()

    def decide(step: int) -> str:
        decision = policy.decide(StepContext("g", step, 10, obs, (), 0))
        assert decision.action is not None
        return decision.action.type.value

    # The first scroll's target is already visible: skipped. The second repeats twice, then gives up.
    assert [decide(n) for n in range(1, 6)] == ["scroll", "scroll", "tap", "done", "done"]
