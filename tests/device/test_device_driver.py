"""The driver against a virtual phone behind the real adb server: observe, act, query, reset, failures."""

from __future__ import annotations

import json
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import adbutils
import pytest
from _phones import NOWHERE, start_phone

import virtual_phone
from agent_eval.action import Action, ActionType
from agent_eval.device import Device
from agent_eval.errors import ConfigError, DeviceError, DeviceNotFoundError, InvalidActionError
from agent_eval.screen.observation import Observation

# `.Settings` is an activity-alias (Android 12+): the focused activity is the homepage it targets.
SETTINGS = "com.android.settings/.homepage.SettingsHomepageActivity"


@pytest.fixture(scope="module")
def device() -> Iterator[Device]:
    with start_phone(range(5700, 5720)) as fleet:
        yield Device(fleet.serials[0])


@pytest.fixture
def phone(device: Device) -> Device:
    device.reset("default_boot")
    return device


def find(observation: Observation, text: str) -> int:
    matches = [e.index for e in observation.elements if e.text == text]
    assert matches, f"{text!r} not among {[e.text for e in observation.elements]}"
    return matches[0]


def act(phone: Device, observation: Observation, **fields: object) -> Observation:
    phone.act(Action.model_validate(fields), observation)
    return phone.observe()


def test_observation_of_the_home_screen(phone: Device) -> None:
    obs = phone.observe()
    assert obs.screenshot_png.startswith(b"\x89PNG")
    assert (obs.width, obs.height) == struct.unpack(">II", obs.screenshot_png[16:24]) == (1080, 2400)
    assert "launcher" in obs.activity
    assert find(obs, "Settings") >= 0
    assert [e.index for e in obs.elements] == list(range(len(obs.elements)))
    assert len(obs.all_nodes) >= len(obs.elements)


def test_navigating_to_the_wifi_switch_and_toggling_it(phone: Device) -> None:
    obs = act(phone, phone.observe(), type="open_app", app="Settings")
    assert obs.activity == SETTINGS
    obs = act(phone, obs, type="tap", element=find(obs, "Network & internet"))
    assert obs.activity.endswith("NetworkDashboardActivity")
    obs = act(phone, obs, type="tap", element=find(obs, "Internet"))
    assert phone.setting("global", "wifi_on") == "1"
    obs = act(phone, obs, type="tap", element=find(obs, "Wi-Fi"))
    assert phone.setting("global", "wifi_on") == "0"
    assert "To see available networks, turn Wi-Fi on" in {e.text for e in obs.elements}
    obs = act(phone, obs, type="key", key="back")
    assert obs.activity.endswith("NetworkDashboardActivity")
    obs = act(phone, obs, type="key", key="home")
    assert "launcher" in obs.activity


def test_tap_by_coordinates_and_long_press(phone: Device) -> None:
    obs = phone.observe()
    icon = obs.elements[find(obs, "Settings")]
    x, y = icon.bounds.center
    obs = act(phone, obs, type="tap", x=x, y=y)
    assert obs.activity == SETTINGS
    act(phone, obs, type="long_press", element=find(obs, "Display"))


def test_scrolling_reveals_rows_below_the_fold(phone: Device) -> None:
    phone.open_app("com.android.settings")
    obs = phone.observe()
    assert "About phone" not in {e.text for e in obs.elements}
    for _ in range(6):
        if "About phone" in {e.text for e in obs.elements}:
            break
        obs = act(phone, obs, type="scroll", direction="down")
    assert "About phone" in {e.text for e in obs.elements}
    obs = act(phone, obs, type="scroll", direction="up")
    assert "About phone" not in {e.text for e in obs.elements}
    for _ in range(6):  # a swipe names the finger's direction: down moves back towards the top
        if "Network & internet" in {e.text for e in obs.elements}:
            break
        obs = act(phone, obs, type="swipe", direction="down")
    assert "Network & internet" in {e.text for e in obs.elements}


def test_typing_replaces_the_field_text_with_spaces_and_quotes_intact(phone: Device) -> None:
    phone.start_intent("android.settings.DEVICE_INFO_SETTINGS")
    obs = phone.observe()
    obs = act(phone, obs, type="tap", element=find(obs, "Device name"))
    field = next(e for e in obs.elements if e.cls.endswith("EditText"))
    assert field.text == "sdk_gphone64_x86_64"
    name = "Lab's phone & co 7"
    obs = act(phone, obs, type="type", element=field.index, text=name)
    assert next(e for e in obs.elements if e.cls.endswith("EditText")).text == name
    act(phone, obs, type="tap", element=find(obs, "OK"))
    assert phone.setting("global", "device_name") == name
    # Typing "into" a row that is not a field taps it (opening the dialog) and types there, clearing nothing.
    obs = phone.observe()
    obs = act(phone, obs, type="type", element=find(obs, "Device name"), text="2")
    assert next(e for e in obs.elements if e.cls.endswith("EditText")).text == name + "2"


def test_invalid_actions_are_rejected_without_touching_the_device(phone: Device) -> None:
    obs = phone.observe()
    bad = [
        Action(type=ActionType.TAP, element=len(obs.elements)),
        Action(type=ActionType.TAP),
        Action(type=ActionType.TAP, x=5000, y=10),
        Action(type=ActionType.SCROLL),
        Action(type=ActionType.TYPE, element=0),
        # `input text` has no key for these: Android would fail and type nothing (the agent's mistake).
        Action(type=ActionType.TYPE, text="📡 Cursor (no end tag) on screen"),
        Action(type=ActionType.TYPE, element=0, text="café"),
        Action(type=ActionType.KEY),
        Action(type=ActionType.OPEN_APP, app="Flux Capacitor"),
        Action(type=ActionType.OPEN_APP, app="com.example.missing"),
    ]
    for action in bad:
        with pytest.raises(InvalidActionError):
            phone.act(action, obs)
    assert phone.observe().ui_xml == obs.ui_xml
    phone.act(Action(type=ActionType.DONE), obs)  # terminal actions do nothing


def test_state_queries(phone: Device) -> None:
    assert phone.setting("global", "wifi_on") == "1"
    assert phone.setting("global", "no_such_key") is None
    ok = phone.shell("echo hi")
    assert (ok.output.strip(), ok.exit_code) == ("hi", 0)
    assert phone.shell("no_such_program").exit_code == 127
    phone.start_activity("com.android.settings/.Settings$BluetoothDashboardActivity")
    assert phone.focused_activity() == "com.android.settings/.Settings$BluetoothDashboardActivity"
    with pytest.raises(InvalidActionError, match="cannot start"):
        phone.start_activity("com.android.settings/.NoSuchActivity")
    with pytest.raises(InvalidActionError, match="cannot start"):
        phone.start_intent("android.settings.NO_SUCH_SETTINGS")


def test_reset_loads_the_snapshot_and_without_one_goes_home_with_apps_stopped(phone: Device) -> None:
    phone.shell("settings put global bluetooth_on 1")
    phone.start_intent("android.settings.WIFI_SETTINGS")
    phone.reset("default_boot")
    assert phone.last_reset == "snapshot default_boot"
    assert phone.setting("global", "bluetooth_on") == "0"
    assert "launcher" in phone.focused_activity()
    with pytest.raises(ConfigError, match="has no snapshot 'no_such_snapshot'"):
        phone.reset("no_such_snapshot")

    phone.start_intent("android.settings.WIFI_SETTINGS")
    phone.focused_activity()
    phone.reset(None)
    assert phone.last_reset == "no snapshot"
    assert "launcher" in phone.focused_activity()
    phone.open_app("Settings")  # a force-stopped app starts on its first screen, not where it was left
    assert phone.focused_activity() == SETTINGS


def test_flaky_dumps_are_retried_and_persistent_failure_is_a_device_error(phone: Device) -> None:
    try:
        assert "KO" not in phone.emu("faults", "set", "dump_fail_rate", "0.5")
        for _ in range(3):
            assert phone.observe().elements
        phone.emu("faults", "set", "dump_fail_rate", "1.0")
        with pytest.raises(DeviceError, match="could not get idle state"):
            phone.ui_dump()
    finally:
        phone.emu("faults", "reset")


def test_a_restless_screen_still_yields_an_observation(phone: Device) -> None:
    try:
        phone.emu("faults", "set", "restless_screen", "true")
        assert phone.observe().elements
    finally:
        phone.emu("faults", "reset")


def test_unknown_and_vanished_devices_raise_device_not_found() -> None:
    with pytest.raises(DeviceNotFoundError, match=NOWHERE):
        Device(NOWHERE)
    with start_phone(range(5720, 5730)) as fleet:
        doomed = Device(fleet.serials[0], reconnect_timeout_s=1)
        obs = doomed.observe()
    # The adb server may list a vanished emulator as offline for a moment before it drops it.
    # The adb server may list a vanished emulator as offline for a moment before it drops it; the driver
    # waits a moment for it to come back before giving up.
    with pytest.raises(
        DeviceError, match=f"adb device {doomed.serial} (disappeared|went offline) while .*not back"
    ):
        doomed.act(Action(type=ActionType.KEY, key="back"), obs)
    with pytest.raises(DeviceNotFoundError, match="disappeared"):
        for _ in range(20):
            doomed.setting("global", "wifi_on")


def test_a_dropped_transport_is_waited_out_for_reads(tmp_path: Path) -> None:
    log = tmp_path / "faults.jsonl"
    faults = virtual_phone.FaultConfig(drop_transport_after=6)
    with start_phone(range(5730, 5740), faults=faults, fault_log=log) as fleet:
        flaky = Device(fleet.serials[0])
        for _ in range(8):  # the transport drops on the 7th command: every read still answers
            assert flaky.setting("global", "wifi_on") == "1"
        assert flaky.observe().elements
    assert '"drop_transport"' in log.read_text()


def test_a_serial_without_an_emulator_console_falls_back_to_stopping_apps() -> None:
    # `adb connect` gives the same phone a network serial: adb emu cannot reach a console through it,
    # like a real phone over Wi-Fi adb. Nothing in the driver may depend on the serial's form.
    adb = adbutils.adb_path()
    with start_phone(range(5740, 5750)) as fleet:
        address = f"127.0.0.1:{fleet.adb_ports[0]}"
        assert "connected" in subprocess.run([adb, "connect", address], capture_output=True, text=True).stdout
        try:
            networked = Device(address)
            emulator = Device(fleet.serials[0])
            assert not networked.has_snapshots() and emulator.has_snapshots()
            networked.open_app("Settings")
            obs = networked.observe()
            networked.act(Action(type=ActionType.TAP, element=find(obs, "Display")), obs)
            networked.reset("default_boot")
            assert networked.last_reset == "no snapshot"
            assert "launcher" in networked.focused_activity()
            networked.open_app("Settings")
            assert networked.focused_activity() == SETTINGS
        finally:
            subprocess.run([adb, "disconnect", address], capture_output=True)


@pytest.mark.slow
def test_actions_cut_off_by_a_dropped_transport_run_exactly_once(tmp_path: Path) -> None:
    log = tmp_path / "faults.jsonl"
    faults = virtual_phone.FaultConfig(drop_transport_after=5)
    with start_phone(range(5750, 5760), faults=faults, fault_log=log) as fleet:
        flaky = Device(fleet.serials[0])
        flaky.start_intent("android.settings.WIFI_SETTINGS")
        obs = flaky.observe()
        for _ in range(5):  # an odd number of toggles: a lost or doubled tap shows in the parity
            obs = act(flaky, obs, type="tap", element=find(obs, "Wi-Fi"))
        assert flaky.setting("global", "wifi_on") == "0"
    drops = [json.loads(line) for line in log.read_text().splitlines()]
    assert any(d["kind"] == "drop_transport" and d["command"].startswith("input tap") for d in drops)
