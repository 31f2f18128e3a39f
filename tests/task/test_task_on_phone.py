"""Goal-state predicates and episode starts evaluated on a virtual phone through the real adb server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _phones import start_phone

from agent_eval.device import Device
from agent_eval.errors import TaskError
from agent_eval.task import goal_holds, load_tasks, start_episode
from agent_eval.task.loading import task_from_data
from agent_eval.task.schema import Task

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"


@pytest.fixture(scope="module")
def device() -> Iterator[Device]:
    with start_phone(range(5760, 5780)) as fleet:
        yield Device(fleet.serials[0])


@pytest.fixture
def phone(device: Device) -> Device:
    device.reset("default_boot")
    return device


def task(goal_state: dict[str, Any], **extra: Any) -> Task:
    return task_from_data({"id": "t", "goal": "g", "goal_state": goal_state, **extra}, "t.yaml")


def holds(phone: Device, goal_state: dict[str, Any]) -> bool:
    return goal_holds(task(goal_state).goal_state, phone)


def test_setting_shell_and_composite_predicates(phone: Device) -> None:
    wifi_on = {"setting": {"namespace": "global", "key": "wifi_on", "equals": "1"}}
    bt_on = {"setting": {"namespace": "global", "key": "bluetooth_on", "equals": 1}}
    assert holds(phone, wifi_on) and not holds(phone, bt_on)
    assert holds(phone, {"setting": {"namespace": "global", "key": "nope", "equals": None}})
    assert holds(phone, {"shell": {"command": "cmd wifi status", "matches": "^Wifi is enabled"}})
    assert not holds(phone, {"shell": {"command": "cmd wifi status", "equals": "Wifi is disabled"}})
    assert holds(phone, {"any": [bt_on, wifi_on]})
    assert not holds(phone, {"all": [bt_on, wifi_on]})
    assert holds(phone, {"not": bt_on})
    phone.shell("svc bluetooth enable")
    assert holds(phone, {"all": [bt_on, wifi_on]})


def test_screen_predicates_read_a_fresh_dump_or_the_given_observation(phone: Device) -> None:
    phone.start_intent("android.settings.WIFI_SETTINGS")
    on_internet = {
        "activity": {
            "equals": "com.android.settings/com.android.settings.Settings$NetworkProviderSettingsActivity"
        }
    }
    switch_on = {"element": {"row": "Wi-Fi", "class": "Switch", "checked": True}}
    assert holds(phone, on_internet)
    assert holds(phone, {"activity": {"matches": r"\$NetworkProvider"}})
    assert holds(phone, switch_on)
    assert holds(phone, {"element": {"text": "Bluetooth", "exists": False}})
    observation = phone.observe()
    phone.shell("settings put global wifi_on 0")
    # The stale observation still shows the switch on; a fresh dump does not.
    assert goal_holds(task(switch_on).goal_state, phone, observation)
    assert not holds(phone, switch_on)


def test_start_episode_resets_runs_setup_and_opens_the_start_screen(phone: Device) -> None:
    instance = task(
        {"setting": {"namespace": "global", "key": "wifi_on", "equals": "1"}},
        setup=["settings put global wifi_on 0"],
        start={"intent": "android.settings.WIFI_SETTINGS"},
    ).instantiate(0)
    phone.shell("settings put global bluetooth_on 1")
    start_episode(phone, instance)
    assert phone.setting("global", "bluetooth_on") == "0"  # the snapshot reset came first
    assert phone.setting("global", "wifi_on") == "0"
    assert phone.focused_activity().endswith("NetworkProviderSettingsActivity")
    assert not goal_holds(instance.goal_state, phone)

    home = task({"setting": {"namespace": "global", "key": "wifi_on", "equals": "1"}}).instantiate(0)
    start_episode(phone, home, snapshot=None)
    assert "launcher" in phone.focused_activity()


def test_broken_setup_or_start_is_a_task_error_naming_the_file(phone: Device) -> None:
    goal = {"setting": {"namespace": "global", "key": "wifi_on", "equals": "1"}}
    with pytest.raises(TaskError, match=r"t\.yaml: setup\[1\] `no_such_tool --x` failed with exit code 127"):
        start_episode(phone, task(goal, setup=["true", "no_such_tool --x"]).instantiate(0))
    with pytest.raises(TaskError, match="no installed app is called 'Teleporter'"):
        start_episode(phone, task(goal, start={"app": "Teleporter"}).instantiate(0))
    with pytest.raises(TaskError, match=r"t\.yaml: start: cannot start com\.android\.settings/\.Nowhere"):
        start_episode(phone, task(goal, start={"activity": "com.android.settings/.Nowhere"}).instantiate(0))


def test_every_shipped_task_starts_in_the_state_it_claims(phone: Device) -> None:
    for shipped in load_tasks(TASKS_DIR):
        instance = shipped.instantiate(0)
        start_episode(phone, instance)
        assert goal_holds(instance.goal_state, phone) == instance.verify, shipped.id
