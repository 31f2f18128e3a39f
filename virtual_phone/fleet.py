"""Starting phones from Python: `start_fleet` spawns the phone process and waits until adb lists every phone.

The phones run in a child process, so the caller does not carry their CPU load; it dies with its parent.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import adbutils

from virtual_phone.adb.listener import adb_server_port
from virtual_phone.adb.serve import faults_per_phone
from virtual_phone.errors import ERROR_PREFIX, PhoneStartError
from virtual_phone.faults import FaultConfig


@dataclass(eq=False)  # compared and hashed by identity, as one running fleet
class Fleet:
    """Phones running in a child process; `serials` are online in the adb server. Stop it (or use `with`)."""

    process: subprocess.Popen[bytes]
    serials: list[str]
    base_port: int
    log_path: Path | None
    scratch: Path | None = None  # a temp dir we made for the log: removed on stop

    @property
    def adb_ports(self) -> list[int]:
        return [int(s.split("-")[1]) + 1 for s in self.serials]

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None

    def __enter__(self) -> Fleet:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.stop(timeout=2)


def _write_faults(faults: FaultConfig | list[FaultConfig], directory: Path) -> Path:
    import yaml

    items = faults if isinstance(faults, list) else [faults]
    path = directory / "faults.yaml"
    path.write_text(yaml.safe_dump([f.model_dump() for f in items]), encoding="utf-8")
    return path


def start_fleet(
    count: int = 1,
    base_port: int = 5554,
    faults: FaultConfig | list[FaultConfig] | None = None,
    size: tuple[int, int] = (1080, 2400),
    log_dir: Path | None = None,
    fault_log: Path | None = None,
    auth: bool = False,
    timeout: float = 30.0,
) -> Fleet:
    """Starts `count` phones (emulator-BASE, emulator-BASE+2, ...); returns once adb lists them online."""
    if faults is not None:
        faults = faults_per_phone(faults, count)  # a wrong count fails here, before spawning
    scratch = None if log_dir is not None else Path(tempfile.mkdtemp(prefix="virtual-phone-fleet-"))
    workdir = log_dir or scratch
    assert workdir is not None
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / f"fleet-{base_port}.log"
    cmd = [
        sys.executable,
        "-m",
        "virtual_phone",
        "start",
        "--count",
        str(count),
        "--base-port",
        str(base_port),
        "--size",
        f"{size[0]}x{size[1]}",
        "--watch-stdin",
        "--no-pid-file",
    ]
    if faults is not None:
        cmd += ["--faults", str(_write_faults(faults, workdir))]
    if fault_log is not None:
        cmd += ["--fault-log", str(fault_log)]
    if auth:
        cmd.append("--auth")
    with log_path.open("ab") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    fleet = Fleet(proc, [], base_port, log_path, scratch)
    try:
        assert proc.stdout is not None
        serials = []
        for raw in proc.stdout:
            line = raw.decode().strip()
            if line == "ready":
                break
            serials.append(line)
        else:
            raise PhoneStartError(f"the phone process exited before it was ready: {_tail(log_path)}")
        fleet.serials = serials
        _wait_online(serials, timeout, fleet)
    except BaseException:
        fleet.stop()
        raise
    return fleet


def _tail(path: Path) -> str:
    """The phone process's own error message, all its lines, if it printed one, else the last line of its log.

    The message is the last line that starts with the error prefix and every line after it (the process
    exits after printing it): a screen check lists each screen to fix on a line of its own.
    """
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    starts = [k for k, ln in enumerate(lines) if ln.startswith(ERROR_PREFIX)]
    if starts:
        return "\n".join(lines[starts[-1] :]).removeprefix(ERROR_PREFIX)
    return lines[-1] if lines else "(empty log)"


def _wait_online(serials: list[str], timeout: float, fleet: Fleet) -> None:
    client = adbutils.AdbClient(host="127.0.0.1", port=adb_server_port())
    deadline = time.monotonic() + timeout
    states: dict[str, str] = {}
    while time.monotonic() < deadline:
        if not fleet.alive():
            raise PhoneStartError(
                f"the phone process died: {_tail(fleet.log_path) if fleet.log_path else ''}"
            )
        with contextlib.suppress(adbutils.AdbError, OSError):
            states = {d.serial: d.state for d in client.list()}
            if all(states.get(s) == "device" for s in serials):
                return
        time.sleep(0.1)
    raise PhoneStartError(f"phones not online in the adb server after {timeout:.0f} s: {states}")
