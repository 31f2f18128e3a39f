"""The emulator console of the virtual phone: auth against the token file, snapshots through `adb emu`
(save/load/list/delete restore the whole state), KO errors, and two phones side by side, independent."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from _phones import adb, dump, reset, row_of, sh, tap

from virtual_phone import Fleet, start_fleet
from virtual_phone.adb.console import read_token, token_path

BASE = 5630
A, B = f"emulator-{BASE}", f"emulator-{BASE + 2}"


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    with start_fleet(count=2, base_port=BASE) as f:
        yield f


@pytest.fixture
def phones(fleet: Fleet) -> tuple[str, str]:
    reset(A)
    reset(B)
    return A, B


def emu(serial: str, *words: str) -> str:
    done = adb(serial, "emu", *words)
    assert done.returncode == 0  # adb emu always exits 0; errors are in the text
    return done.stdout.decode()


def console_session(port: int, lines: list[str]) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        for line in lines:
            s.sendall(line.encode() + b"\n")
        s.sendall(b"quit\n")
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode()


def test_console_greets_and_requires_the_token(phones: tuple[str, str]) -> None:
    token = read_token()
    assert token and token_path().read_text().strip() == token
    out = console_session(BASE, ["avd snapshot list", "auth wrong-token", f"auth {token}", "ping"])
    lines = out.split("\r\n")
    assert lines[0] == "Android Console: Authentication required"
    assert "KO: unknown command, try 'help'" in lines  # before auth
    assert any(ln.startswith("KO: authentication token does not match") for ln in lines)
    assert "I am alive!" in lines


def test_snapshot_save_load_restores_settings_and_screen(phones: tuple[str, str]) -> None:
    a, _ = phones
    sh(a, "am start -a android.settings.WIFI_SETTINGS")
    tap(a, row_of(dump(a), "Wi-Fi"))
    assert sh(a, "settings get global wifi_on") == "0\n"
    sh(a, "echo kept > /sdcard/note.txt")
    assert emu(a, "avd", "snapshot", "save", "wifi_off").strip() == "OK"

    sh(
        a,
        "svc wifi enable; rm /sdcard/note.txt; input keyevent KEYCODE_HOME; settings put global low_power 1",
    )
    assert "wifi_off" in emu(a, "avd", "snapshot", "list")
    assert emu(a, "avd", "snapshot", "load", "wifi_off").strip() == "OK"
    assert adb(a, "get-state").stdout.decode().strip() == "device"
    assert sh(a, "getprop sys.boot_completed") == "1\n"
    assert sh(a, "settings get global wifi_on; settings get global low_power") == "0\n0\n"
    assert sh(a, "cat /sdcard/note.txt") == "kept\n"
    assert "NetworkProviderSettingsActivity" in sh(a, "dumpsys window | grep mCurrentFocus")
    nodes = dump(a)
    wifi_row = row_of(nodes, "Wi-Fi")
    switch = next(n for n in nodes if n.cls == "android.widget.Switch" and n.bounds[1] >= wifi_row.bounds[1])
    assert not switch.checked

    assert emu(a, "avd", "snapshot", "load", "default_boot").strip() == "OK"
    assert sh(a, "settings get global wifi_on") == "1\n"
    assert "NexusLauncherActivity" in sh(a, "dumpsys window | grep mCurrentFocus")
    assert sh(a, "ls /sdcard/note.txt 2>&1") == "ls: /sdcard/note.txt: No such file or directory\n"

    assert emu(a, "avd", "snapshot", "delete", "wifi_off").strip() == "OK"
    assert emu(a, "avd", "snapshot", "load", "wifi_off").startswith("KO: ")
    assert emu(a, "avd", "snapshot", "delete", "wifi_off").startswith("KO: ")


def test_unknown_console_command_answers_ko(phones: tuple[str, str]) -> None:
    assert emu(phones[0], "frobnicate").startswith("KO: unknown command")
    assert emu(phones[0], "avd", "snapshot", "load").startswith("KO: ")


def test_two_phones_are_independent(phones: tuple[str, str]) -> None:
    a, b = phones
    sh(a, "settings put global airplane_mode_on 1; am start -a android.settings.DISPLAY_SETTINGS")
    assert sh(b, "settings get global airplane_mode_on") == "0\n"
    assert "NexusLauncherActivity" in sh(b, "dumpsys window | grep mCurrentFocus")
    assert "DisplaySettingsActivity" in sh(a, "dumpsys window | grep mCurrentFocus")
    emu(b, "avd", "snapshot", "save", "only_b")
    assert "only_b" not in emu(a, "avd", "snapshot", "list")


def test_kill_stops_that_phone_only() -> None:
    with start_fleet(count=2, base_port=BASE + 6) as f:
        first, second = f.serials
        assert emu(first, "kill").startswith("OK: killing emulator")
        done = adb(first, "shell", "echo hi", timeout=10)
        for _ in range(50):
            if done.returncode != 0:
                break
            done = adb(first, "shell", "echo hi", timeout=10)
        assert done.returncode != 0
        assert sh(second, "echo still here") == "still here\n"
        assert f.alive()
