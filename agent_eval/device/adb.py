"""Talking to the adb server itself: which devices it lists, starting it, and `adb emu` console commands.

Shared plumbing of the driver; everything about one device's screen lives in driver.py.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

import adbutils

from agent_eval.errors import DeviceError


@dataclass(frozen=True)
class ShellResult:
    output: str  # stdout and stderr as the device produced them
    exit_code: int

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def short_component(component: str) -> str:
    """`pkg/pkg.Act` → `pkg/.Act`, the form `am` and `dumpsys activity` print."""
    package, _, cls = component.partition("/")
    if cls.startswith(package + "."):
        cls = cls[len(package) :]
    return f"{package}/{cls}" if cls else package


def listed_devices(client: adbutils.AdbClient) -> dict[str, str]:
    """serial → state as `adb devices` lists them; starts the adb server (as adb does) if none runs."""
    try:
        return {info.serial: info.state for info in client.list()}
    except (adbutils.AdbError, OSError) as first:
        if client.host not in ("127.0.0.1", "localhost"):
            raise DeviceError(
                f"cannot reach the adb server at {client.host}:{client.port}: {first}"
            ) from first
        server = [adbutils.adb_path(), "-P", str(client.port), "start-server"]
        try:
            subprocess.run(server, capture_output=True, timeout=30, check=False)
            return {info.serial: info.state for info in client.list()}
        except (adbutils.AdbError, OSError, subprocess.TimeoutExpired) as e:
            raise DeviceError(
                f"cannot reach or start the adb server on port {client.port}: {e}; try `adb start-server`"
            ) from e


def online_serials(adb: adbutils.AdbClient | None = None) -> list[str]:
    """Serials the adb server lists in state `device` (online and authorised)."""
    return [
        serial for serial, state in listed_devices(adb or adbutils.AdbClient()).items() if state == "device"
    ]


def run_emu(client: adbutils.AdbClient, serial: str, args: list[str], timeout_s: float) -> tuple[int, str]:
    """`adb -s SERIAL emu ARGS…` via the adb CLI (adbutils has no console client): exit code, output."""
    cmd = [adbutils.adb_path(), "-H", client.host, "-P", str(client.port), "-s", serial, "emu", *args]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as e:
        raise DeviceError(f"adb device {serial}: `adb emu {' '.join(args)}` timed out") from e
    return done.returncode, done.stdout + done.stderr
