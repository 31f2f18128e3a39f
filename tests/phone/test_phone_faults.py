"""Fault injection on the virtual phone: dump failures with Android's idle-state error, added latency,
a dropped transport that comes back, a restless screen; set at start or at run time, and always logged."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import adbutils
import pytest
from _phones import adb, device, parse_dump, reset, screenshot, sh, tap

from virtual_phone import FaultConfig, Fleet, start_fleet
from virtual_phone.errors import PhoneStartError

BASE = 5640
SERIAL = f"emulator-{BASE}"


@pytest.fixture(scope="module")
def log_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("faults") / "faults.jsonl"


@pytest.fixture(scope="module")
def fleet(log_path: Path) -> Iterator[Fleet]:
    with start_fleet(count=1, base_port=BASE, faults=FaultConfig(seed=3), fault_log=log_path) as f:
        yield f


@pytest.fixture
def serial(fleet: Fleet) -> Iterator[str]:
    reset(SERIAL)
    yield SERIAL
    emu("faults", "reset")


def emu(*words: str) -> str:
    return adb(SERIAL, "emu", *words).stdout.decode()


def logged(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_faults_are_off_by_default_and_shown_by_the_console(serial: str) -> None:
    shown = emu("faults", "show")
    assert "dump_fail_rate: 0.0" in shown and "restless_screen: False" in shown and shown.endswith("OK\r\n")
    assert emu("faults", "set", "no_such_fault", "1").startswith("KO: unknown fault")
    assert emu("faults", "set", "dump_fail_rate", "7").startswith("KO: ")


def test_dump_failure_has_androids_message_and_is_logged(serial: str, log_path: Path) -> None:
    assert emu("faults", "set", "dump_fail_rate", "1").strip() == "OK"
    done = adb(serial, "shell", "uiautomator dump /sdcard/x.xml")
    assert done.returncode == 0
    assert done.stdout == b""
    assert done.stderr == b"ERROR: could not get idle state.\n"
    with pytest.raises(adbutils.AdbError):
        device(serial).dump_hierarchy()
    entries = [e for e in logged(log_path) if e["kind"] == "dump_fail"]
    assert len(entries) >= 2
    assert entries[-1]["serial"] == SERIAL and "uiautomator dump" in str(entries[-1]["command"])
    emu("faults", "set", "dump_fail_rate", "0")
    assert device(serial).dump_hierarchy().startswith("<?xml")


def test_dump_failures_follow_the_seed(serial: str) -> None:
    def pattern() -> list[bool]:
        emu("faults", "set", "seed", "11")
        return [b"ERROR" in adb(serial, "shell", "uiautomator dump").stderr for _ in range(12)]

    emu("faults", "set", "dump_fail_rate", "0.5")
    first = pattern()
    assert pattern() == first
    assert any(first) and not all(first)


def test_latency_only_for_the_named_commands(serial: str, log_path: Path) -> None:
    emu("faults", "set", "added_latency_s", "0.6")
    emu("faults", "set", "latency_commands", "screencap")
    t = time.monotonic()
    screenshot(serial)
    assert time.monotonic() - t >= 0.6
    before = len(logged(log_path))
    sh(serial, "echo quick")
    assert len(logged(log_path)) == before  # echo was not delayed, so nothing was logged
    kinds = [(e["kind"], e["command"]) for e in logged(log_path)]
    assert ("latency", "screencap '-p'") in kinds or ("latency", "screencap -p") in kinds


def test_dropped_transport_comes_back(serial: str, log_path: Path) -> None:
    emu("faults", "set", "drop_transport_after", "2")
    assert sh(serial, "echo 1") == "1\n"
    assert sh(serial, "echo 2") == "2\n"
    dropped = adb(serial, "shell", "echo 3")
    assert dropped.returncode != 0 and dropped.stdout == b""
    assert any(e["kind"] == "drop_transport" and e["command"] == "echo 3" for e in logged(log_path))
    emu("faults", "set", "drop_transport_after", "none")
    # The phone announces itself again; the adb server reconnects as it does for a restarted emulator.
    assert adb(serial, "wait-for-device", timeout=20).returncode == 0
    assert sh(serial, "echo back") == "back\n"


def test_restless_screen_never_settles(serial: str, log_path: Path) -> None:
    d = device(serial)
    assert d.dump_hierarchy() == d.dump_hierarchy()
    emu("faults", "set", "restless_screen", "true")
    assert d.dump_hierarchy() != d.dump_hierarchy()
    assert screenshot(serial).tobytes() != screenshot(serial).tobytes()
    assert any(e["kind"] == "restless_screen" for e in logged(log_path))
    # Also while a dialog has focus (uiautomator then dumps only the dialog).
    sh(serial, "am start -a android.settings.DISPLAY_SETTINGS")
    timeout_row = next(n for n in parse_dump(d.dump_hierarchy()) if n.text == "Screen timeout")
    tap(serial, timeout_row)
    first, second = d.dump_hierarchy(), d.dump_hierarchy()
    assert 'resource-id="android:id/alertTitle"' in first and first != second
    emu("faults", "set", "restless_screen", "false")
    assert d.dump_hierarchy() == d.dump_hierarchy()


def test_faults_given_at_start(tmp_path: Path) -> None:
    log = tmp_path / "start.jsonl"
    with start_fleet(count=1, base_port=BASE + 4, faults=FaultConfig(dump_fail_rate=1.0), fault_log=log) as f:
        done = adb(f.serials[0], "shell", "uiautomator dump")
        assert done.stderr == b"ERROR: could not get idle state.\n"
    assert [e["kind"] for e in logged(log)] == ["dump_fail"]


def test_one_fault_config_per_phone(tmp_path: Path) -> None:
    faults = [FaultConfig(dump_fail_rate=1.0), FaultConfig()]
    with start_fleet(count=2, base_port=BASE + 6, faults=faults, fault_log=tmp_path / "log.jsonl") as f:
        flaky, healthy = f.serials
        assert adb(flaky, "shell", "uiautomator dump").stderr == b"ERROR: could not get idle state.\n"
        assert adb(healthy, "shell", "uiautomator dump").stdout.startswith(b"UI hierchary dumped to:")
    assert {e["serial"] for e in logged(tmp_path / "log.jsonl")} == {flaky}
    with pytest.raises(PhoneStartError, match="3 fault configs for 2 phones"):
        start_fleet(count=2, base_port=BASE + 6, faults=[FaultConfig()] * 3)
