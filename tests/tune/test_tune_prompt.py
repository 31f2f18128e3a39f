"""The tuned agent's training prompt is byte for byte the prompt its LLM policy sends (same hash)."""

from __future__ import annotations

from pathlib import Path

from _sent_prompt import sent_prompt

from agent_eval.action import Action, ActionType
from agent_eval.agent import compact
from agent_eval.agent.policy import PastStep, StepContext
from agent_eval.agent.prompt import prompt_hash
from agent_eval.screen.observation import Bounds, Element, Observation
from agent_eval.task import Task, load_task
from agent_eval.tune.collect import demo_prompt
from agent_eval.tune.wording import goal_variants

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def el(index: int, cls: str, text: str = "", **kw: object) -> Element:
    return Element(
        index=index,
        text=text,
        resource_id="",
        cls=cls,
        content_desc="",
        package="com.android.settings",
        bounds=Bounds(0, 100 * index, 1080, 100 * index + 90),
        **kw,  # type: ignore[arg-type]
    )


def screen() -> Observation:
    elements = (
        el(0, "android.widget.TextView", "Internet", clickable=True),
        el(1, "android.widget.Switch", "Wi-Fi", checkable=True, checked=False, clickable=True),
        el(2, "android.widget.ImageButton", "", clickable=True),
    )
    return Observation(b"png", "<hierarchy/>", elements, "com.android.settings/.SubSettings", 1080, 2400)


def test_training_prompt_equals_the_tuned_agents_prompt() -> None:
    history = tuple(
        PastStep(i, Action(type=ActionType.TAP, element=i), f'tap {i} "Row {i}"') for i in range(1, 7)
    )
    context = StepContext("Turn Wi-Fi on.", 7, 12, screen(), history, seed=3)
    trained = demo_prompt(context, "compact")
    decision, messages = sent_prompt(context, "compact")
    assert decision.prompt_hash == trained.hash and messages == trained.messages
    assert prompt_hash(trained.recorded) == trained.hash
    user = trained.messages[1]["content"]
    assert 'tap 6 "Row 6"' in user and 'tap 2 "Row 2"' not in user  # the last HISTORY_LEN steps only
    assert "1 Wi-Fi switch=off" in user


def test_compact_lines_keep_what_the_agent_needs() -> None:
    assert compact.element_lines(screen()) == ["0 Internet", "1 Wi-Fi switch=off", "2 (ImageButton)"]


def test_goal_rewordings_keep_the_goal_first() -> None:
    wifi_on = load_task(TASKS / "wifi_on.yaml").instantiate(0)
    assert goal_variants(wifi_on)[:2] == ["Turn Wi-Fi on.", "Turn on Wi-Fi."]
    odd = Task.model_validate(
        {"id": "odd", "goal": "Do something odd", "goal_state": {"element": {"text": "x"}}}
    )
    assert goal_variants(odd.instantiate(0)) == ["Do something odd"]
