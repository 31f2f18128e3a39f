"""`agent-eval validate` as a user runs it: on a phone it is given, or on one it starts itself."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from _phones import NOWHERE, port_free, start_phone

import virtual_phone
from agent_eval.task import load_tasks
from agent_eval.task.params import combinations

ROOT = Path(__file__).resolve().parents[2]
AGENT_EVAL = [str(Path(sys.executable).parent / "agent-eval")]


@pytest.fixture(scope="module")
def serial() -> Iterator[str]:
    with start_phone(range(5780, 5790)) as fleet:
        yield fleet.serials[0]


def validate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*AGENT_EVAL, "validate", *args], capture_output=True, text=True, cwd=ROOT, timeout=900
    )


def test_a_sound_task_passes(serial: str) -> None:
    done = validate("tasks/wifi_on.yaml", "--device", serial)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   wifi_on" in done.stdout
    assert "success" in done.stdout
    assert "all tasks valid" in done.stdout


def test_broken_tasks_fail_with_their_names_and_reasons(serial: str, tmp_path: Path) -> None:
    # Wi-Fi is on after the reset and nothing turns it off: the goal already holds at the start.
    (tmp_path / "already.yaml").write_text(
        "id: already_on\ngoal: Turn Wi-Fi on.\n"
        "goal_state: {setting: {namespace: global, key: wifi_on, equals: '1'}}\n"
        "oracle: [{type: done}]\n"
    )
    # The oracle toggles Wi-Fi on and straight off again: it undoes its own work.
    (tmp_path / "undo.yaml").write_text(
        "id: undoes_it\ngoal: Turn Wi-Fi on.\nstart: {intent: android.settings.WIFI_SETTINGS}\n"
        "setup: ['settings put global wifi_on 0']\n"
        "goal_state: {setting: {namespace: global, key: wifi_on, equals: '1'}}\n"
        "oracle: [{type: tap, text: Wi-Fi}, {type: tap, text: Wi-Fi}, {type: done}]\n"
    )
    # The oracle names a row that is not on the screen.
    (tmp_path / "lost.yaml").write_text(
        "id: lost\ngoal: Turn Wi-Fi on.\nsetup: ['settings put global wifi_on 0']\n"
        "goal_state: {setting: {namespace: global, key: wifi_on, equals: '1'}}\n"
        "oracle: [{type: tap, text: Teleport}, {type: done}]\n"
    )
    # The oracle answers right from the list, but the goal state is the contact's card: never reached.
    (tmp_path / "blind.yaml").write_text(
        "id: answers_blind\ngoal: What is Dana Lee's number?\n"
        "goal_state: {activity: {matches: 'QuickContactActivity$'}}\n"
        "answer: {answer: {equals: '+1 555-0142', normalize: [digits]}}\n"
        "oracle: [{type: open_app, app: Contacts}, {type: answer, text: '+1 555-0142'}]\n"
    )
    done = validate(str(tmp_path), "--device", serial)
    assert done.returncode == 1
    assert "4 task instance(s) failed" in done.stderr
    assert "answers_blind (seed 0): the oracle answered right but the goal state" in done.stderr
    assert "already_on (seed 0): " in done.stderr and "goal already holds at the start" in done.stderr
    assert "undoes_it (seed 0): the oracle ended in undone" in done.stderr
    assert "lost (seed 0): " in done.stderr and "Teleport" in done.stderr


def test_a_malformed_task_is_reported_before_touching_a_device(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("id: bad\ngoal: g\ngoal_state: {wifi: on}\n")
    done = validate(str(tmp_path), "--device", NOWHERE)
    assert done.returncode == 2
    assert "bad.yaml: goal_state: unknown predicate 'wifi'" in done.stderr
    assert "Traceback" not in done.stderr


def test_an_unknown_device_is_a_clear_error() -> None:
    done = validate("tasks/wifi_on.yaml", "--device", NOWHERE)
    assert done.returncode == 2
    assert "'emulator-5996' is not connected" in done.stderr


def test_without_a_device_it_starts_a_virtual_phone_itself() -> None:
    base = next(p for p in range(5790, 5800, 2) if port_free(p) and port_free(p + 1))
    done = validate("tasks/airplane_mode_on.yaml", "--virtual", "--phone-port", str(base))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "starting a virtual phone" in done.stderr
    assert f"emulator-{base}" in done.stdout


def test_flaky_dumps_do_not_fail_a_sound_task(tmp_path: Path) -> None:
    log = tmp_path / "faults.jsonl"
    faults = virtual_phone.FaultConfig(dump_fail_rate=0.3, seed=3)
    with start_phone(range(5790, 5800), faults=faults, fault_log=log) as fleet:
        done = validate("tasks/wifi_on.yaml", "--device", fleet.serials[0])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   wifi_on" in done.stdout
    assert '"dump_fail"' in log.read_text()  # the faults did happen, and were retried


@pytest.mark.slow
def test_every_shipped_task_validates_shared_among_two_phones_it_starts() -> None:
    base = next(p for p in range(5800, 5840, 4) if all(port_free(p + i) for i in range(4)))
    done = validate("tasks", "--phones", "2", "--phone-port", str(base))
    assert done.returncode == 0, done.stdout + done.stderr
    tasks = load_tasks([ROOT / "tasks"], recursive=True)
    assert f"validating {len(tasks)} task(s) on emulator-{base}, emulator-{base + 2}" in done.stdout
    # Every parameter combination of every task, each checked once, on one phone or the other.
    rows = [line.split()[1:3] for line in done.stdout.splitlines() if line.startswith("ok   ")]
    expected = [[t.id, str(seed)] for t in tasks for seed in range(combinations(t.params))]
    assert sorted(rows) == sorted(expected)


def test_phones_and_named_devices_together_are_refused() -> None:
    done = validate("tasks/wifi_on.yaml", "--phones", "2", "--device", NOWHERE)
    assert done.returncode == 2
    assert "--phones starts virtual phones; with --device, name every device" in done.stderr
