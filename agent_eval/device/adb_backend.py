"""The adb device backend: named serials, else a connected device, else virtual phones started here.

Also the port search for a phone started here, so two runs on one host never take the same adb port.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

from agent_eval.device.backend import (
    DeviceBackend,
    DeviceRequest,
    EpisodeDevice,
    Say,
    register_device_backend,
)
from agent_eval.device.driver import Device, online_serials
from agent_eval.errors import DeviceError, InfraError


def free_phone_port(start: int, count: int = 1) -> int:
    """The first even port from `start` on where `count` phones' consoles (P, P+2, …) and adb ports (P+1, …)
    are all free: another run's phones on those ports are skipped, not collided with."""
    for base in range(start - start % 2, start + 400, 2):
        try:
            for port in range(base, base + 2 * count):
                with socket.socket() as s:
                    # Ports a stopped phone left in TIME_WAIT are free to a new one (it reuses addresses too).
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise InfraError(f"no free port pair for a virtual phone in {start}..{start + 400}; pass --device")


@contextlib.contextmanager
def _started(count: int, base_port: int) -> Iterator[list[EpisodeDevice]]:
    from virtual_phone import start_fleet  # the phone package loads only when a phone is started
    from virtual_phone.errors import VirtualPhoneError

    try:
        fleet = start_fleet(count=count, base_port=base_port)
    except VirtualPhoneError as e:  # the phone has its own errors; here they are the harness's device errors
        raise DeviceError(str(e)) from e
    with fleet:
        yield [Device(serial) for serial in fleet.serials]


class AdbBackend:
    """Devices the local adb server knows, and virtual phones that register with it."""

    name = "adb"

    @contextlib.contextmanager
    def devices(self, request: DeviceRequest, say: Say) -> Iterator[list[EpisodeDevice]]:
        if request.serials:
            yield [Device(serial) for serial in dict.fromkeys(request.serials)]
            return
        if request.count > 0:
            base = free_phone_port(request.phone_port, request.count)
            say(f"starting {request.count} virtual phone(s) on adb ports from {base}")
            with _started(request.count, base) as phones:
                say(f"phones up: {', '.join(p.serial for p in phones)}")
                yield phones
            return
        connected = [] if request.started_only else sorted(online_serials())
        if connected:
            if len(connected) > 1:
                say(f"{len(connected)} devices connected; using {connected[0]} (pick with --device)")
            yield [Device(connected[0])]
            return
        base = free_phone_port(request.phone_port)
        reason = "as asked" if request.started_only else "no device connected"
        say(f"{reason}: starting a virtual phone on adb port {base + 1}")
        with _started(1, base) as phones:
            say(f"virtual phone {phones[0].serial} is up")
            yield phones


ADB: DeviceBackend = AdbBackend()
register_device_backend(ADB)
