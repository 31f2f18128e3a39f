"""Running fleets of virtual phones: `virtual-phone start|stop` (and `agent-eval device`, the same command),
the child dying with its parent, ports already in use, and adb key authentication."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest
from _phones import ADB, adb, sh

from virtual_phone import Fleet, start_fleet
from virtual_phone.errors import ERROR_PREFIX, PhoneStartError
from virtual_phone.fleet import _tail

BASE = 5660
AGENT_EVAL = str(Path(sys.executable).parent / "agent-eval")
# The `virtual-phone` script runs `virtual_phone.cli:main`, as `python -m virtual_phone` does (checked below);
# the module form also runs where the package is importable but its scripts are not installed.
VIRTUAL_PHONE = [sys.executable, "-m", "virtual_phone"]
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def listed(serial: str) -> str | None:
    out = subprocess.run([ADB, "devices"], capture_output=True, timeout=30).stdout.decode()
    for line in out.splitlines()[1:]:
        parts = line.split()
        if parts and parts[0] == serial:
            return parts[1]
    return None


def wait_gone(serial: str, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if listed(serial) is None:
            return True
        time.sleep(0.2)
    return False


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_cli_start_prints_serials_and_stop_ends_the_fleet() -> None:
    proc = subprocess.Popen(
        [*VIRTUAL_PHONE, "start", "--count", "2", "--base-port", str(BASE), "--size", "720x1280"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().decode().strip() for _ in range(3)]
        assert lines == [f"emulator-{BASE}", f"emulator-{BASE + 2}", "ready"]
        for serial in lines[:2]:
            assert adb(serial, "wait-for-device", timeout=20).returncode == 0
            assert sh(serial, "wm size") == "Physical size: 720x1280\n"
        stop = subprocess.run(
            [*VIRTUAL_PHONE, "stop", "--base-port", str(BASE)], capture_output=True, timeout=30
        )
        assert stop.returncode == 0 and b"stopped 1 fleet" in stop.stdout
        assert proc.wait(timeout=15) == 0
        assert wait_gone(f"emulator-{BASE}") and wait_gone(f"emulator-{BASE + 2}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_sigint_stops_a_foreground_fleet_started_by_the_harness_command() -> None:
    proc = subprocess.Popen(
        [AGENT_EVAL, "device", "start", "--base-port", str(BASE + 4)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().decode().strip() == f"emulator-{BASE + 4}"
        assert proc.stdout.readline().decode().strip() == "ready"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 0
        assert wait_gone(f"emulator-{BASE + 4}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_phone_process_dies_with_its_parent(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(
        "import sys, time\n"
        "from virtual_phone import Fleet, start_fleet\n"
        f"f = start_fleet(count=1, base_port={BASE + 8})\n"
        "print(f.process.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert alive(child)
        parent.kill()  # no chance to clean up: the child must notice on its own
        parent.wait()
        deadline = time.monotonic() + 15
        while alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(child)
        assert wait_gone(f"emulator-{BASE + 8}")
    finally:
        if parent.poll() is None:
            parent.kill()


def test_phones_outlive_the_thread_that_started_them() -> None:
    box: list[Fleet] = []
    starter = threading.Thread(target=lambda: box.append(start_fleet(count=1, base_port=BASE + 20)))
    starter.start()
    starter.join()
    with box[0] as fleet:
        time.sleep(1.5)
        assert fleet.alive()
        assert sh(fleet.serials[0], "echo still here") == "still here\n"


@pytest.mark.slow
def test_busy_port_is_a_clear_error() -> None:
    with start_fleet(count=1, base_port=BASE + 12):
        with pytest.raises(PhoneStartError, match="pick another --base-port"):
            start_fleet(count=1, base_port=BASE + 12)
        done = subprocess.run(
            [*VIRTUAL_PHONE, "start", "--base-port", str(BASE + 12)], capture_output=True, timeout=30
        )
        assert done.returncode == 2
        assert (
            done.stderr.decode().startswith("virtual-phone: error: ")
            and b"pick another --base-port" in done.stderr
        )
    with pytest.raises(PhoneStartError, match="must be even"):
        start_fleet(count=1, base_port=BASE + 13)


def test_auth_handshake_with_the_adb_servers_key() -> None:
    with start_fleet(count=1, base_port=BASE + 16, auth=True) as f:
        assert listed(f.serials[0]) == "device"
        assert sh(f.serials[0], "echo authorised") == "authorised\n"


def test_the_virtual_phone_script_is_the_module_command() -> None:
    scripts = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["virtual-phone"] == "virtual_phone.cli:main"
    main_module = (PYPROJECT.parent / "virtual_phone" / "__main__.py").read_text(encoding="utf-8")
    assert "from virtual_phone.cli import main" in main_module and "sys.exit(main())" in main_module
    usage = subprocess.run([*VIRTUAL_PHONE, "start", "--size", "big"], capture_output=True, timeout=30)
    assert usage.returncode == 2 and b"give WIDTHxHEIGHT" in usage.stderr


def test_a_start_error_reaches_the_caller_with_every_line(tmp_path: Path) -> None:
    log = tmp_path / "fleet.log"
    log.write_text(
        f"starting\n{ERROR_PREFIX}old error\n{ERROR_PREFIX}app screens do not fit their data; fix them:\n"
        "  apps/x.yaml: screens.list.records.title: unknown column 'nme'\n"
        "  apps/x.yaml: screens.edit.form.fields[0]: unknown column 'nme'\n"
    )
    assert _tail(log) == (
        "app screens do not fit their data; fix them:\n"
        "  apps/x.yaml: screens.list.records.title: unknown column 'nme'\n"
        "  apps/x.yaml: screens.edit.form.fields[0]: unknown column 'nme'"
    )
    log.write_text("starting\nTraceback: boom\n")
    assert _tail(log) == "Traceback: boom"
