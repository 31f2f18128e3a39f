"""The process that hosts a fleet of phones in the foreground: ports, adb server registration, clean shutdown.

`virtual-phone start` (also `python -m virtual_phone start`, which start_fleet spawns) runs here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import adbutils

from virtual_phone.adb.listener import VirtualDevice, adb_server_port, announce
from virtual_phone.errors import PhoneStartError
from virtual_phone.faults import FaultConfig, FaultLog

log = logging.getLogger(__name__)


def pid_file(base_port: int) -> Path:
    runtime = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return Path(runtime) / f"virtual-phone-{os.getuid()}-{base_port}.pid"


def ensure_adb_server() -> None:
    """Starts the adb server (the adbutils-bundled binary unless another is configured) if none answers."""
    import socket

    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", adb_server_port()), timeout=1):
        return
    adb = adbutils.adb_path()
    try:
        subprocess.run([adb, "start-server"], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        raise PhoneStartError(
            f"cannot start the adb server with {adb}: {e}; start it with `adb start-server`"
        ) from e


def faults_per_phone(faults: FaultConfig | list[FaultConfig] | None, count: int) -> list[FaultConfig]:
    if faults is None:
        return [FaultConfig() for _ in range(count)]
    if isinstance(faults, FaultConfig):
        return [faults.model_copy() for _ in range(count)]
    if len(faults) == 1:
        return [faults[0].model_copy() for _ in range(count)]
    if len(faults) != count:
        raise PhoneStartError(f"{len(faults)} fault configs for {count} phones: give one, or one per phone")
    return list(faults)


async def run_fleet(
    count: int,
    base_port: int,
    size: tuple[int, int],
    faults: list[FaultConfig],
    fault_log: Path | None,
    auth: bool,
    on_ready: Callable[[list[str]], None],
    stop: asyncio.Event,
) -> None:
    """Runs `count` phones on port pairs from `base_port` until `stop` is set or every phone was killed."""
    if base_port % 2:
        raise PhoneStartError(
            f"--base-port {base_port} must be even (console port; adb uses the odd port above)"
        )
    ensure_adb_server()
    executor = ThreadPoolExecutor(max_workers=max(4, 2 * count), thread_name_prefix="phone")
    flog = FaultLog(fault_log)
    devices = [
        VirtualDevice(base_port + 2 * i + 1, size, executor, faults[i], flog, auth) for i in range(count)
    ]
    started: list[VirtualDevice] = []
    try:
        for d in devices:
            await d.start()
            started.append(d)
        for d in devices:
            await announce(d.adb_port)
        on_ready([d.serial for d in devices])

        async def all_killed() -> None:
            for d in devices:
                await d.stopped.wait()

        waits = [asyncio.ensure_future(all_killed()), asyncio.ensure_future(stop.wait())]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for w in waits:
            w.cancel()
    finally:
        for d in started:
            await d.stop()
        executor.shutdown(wait=False, cancel_futures=True)


def serve(
    count: int,
    base_port: int,
    size: tuple[int, int],
    faults: list[FaultConfig],
    fault_log: Path | None,
    auth: bool = False,
    watch_stdin: bool = False,
    write_pid: bool = True,
) -> None:
    """Runs a fleet in the foreground; returns after SIGINT/SIGTERM (or stdin EOF when `watch_stdin`)."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        if watch_stdin:
            parent = os.getppid()

            def wait_eof() -> None:
                # A raw read: a buffered stdin would hold a lock that blocks interpreter shutdown.
                with contextlib.suppress(OSError):
                    while os.read(sys.stdin.fileno(), 4096):
                        pass
                with contextlib.suppress(RuntimeError):  # the loop may be gone already
                    loop.call_soon_threadsafe(stop.set)

            def watch_parent() -> None:
                # Also covers a parent whose stdin pipe end lives on in a forked grandchild: once the parent
                # exits, this process is re-parented.
                while os.getppid() == parent:
                    time.sleep(0.5)
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(stop.set)

            threading.Thread(target=watch_parent, daemon=True, name="parent-watch").start()
            threading.Thread(target=wait_eof, daemon=True, name="stdin-eof").start()

        def ready(serials: list[str]) -> None:
            if write_pid:
                pid_file(base_port).write_text(f"{os.getpid()}\n")
            for s in serials:
                print(s, flush=True)
            print("ready", flush=True)

        await run_fleet(count, base_port, size, faults, fault_log, auth, ready, stop)

    try:
        asyncio.run(main())
    finally:
        if write_pid:
            with contextlib.suppress(OSError):
                pf = pid_file(base_port)
                if pf.read_text().strip() == str(os.getpid()):
                    pf.unlink()


def stop_fleets(base_port: int | None = None) -> list[int]:
    """Sends SIGTERM to the fleets started by `virtual-phone start` (all, or the one on `base_port`)."""
    runtime = pid_file(0).parent
    files = (
        [pid_file(base_port)]
        if base_port is not None
        else sorted(runtime.glob(f"virtual-phone-{os.getuid()}-*.pid"))
    )
    stopped = []
    for f in files:
        try:
            pid = int(f.read_text().strip())
        except (OSError, ValueError):
            continue
        try:
            os.kill(pid, signal.SIGTERM)
            stopped.append(pid)
        except ProcessLookupError:
            f.unlink(missing_ok=True)
    return stopped
