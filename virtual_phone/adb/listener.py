"""One running phone: its adbd listener on port P, its console on P-1, its registration with the adb server.

If the adb server loses the phone (restart, dropped transport), the phone announces itself again.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from concurrent.futures import Executor

from virtual_phone.adb import protocol
from virtual_phone.adb.adbd_services import Services
from virtual_phone.adb.console import Console, read_token
from virtual_phone.adb.transport import AuthPolicy, Connection
from virtual_phone.errors import PhoneStartError
from virtual_phone.faults import FaultConfig, FaultInjector, FaultLog
from virtual_phone.phone import Phone

log = logging.getLogger(__name__)
ANNOUNCE_EVERY_S = 1.0


def adb_server_port() -> int:
    return int(os.environ.get("ANDROID_ADB_SERVER_PORT", "5037"))


async def announce(adb_port: int) -> bool:
    """Tells the adb server that an emulator listens on `adb_port` (`host:emulator:PORT`; no reply)."""
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", adb_server_port())
    except OSError:
        return False
    req = f"host:emulator:{adb_port}".encode()
    writer.write(b"%04x" % len(req) + req)
    try:
        await writer.drain()
        writer.close()
        await writer.wait_closed()
    except ConnectionError:
        pass
    return True


class VirtualDevice:
    def __init__(
        self,
        adb_port: int,
        size: tuple[int, int],
        executor: Executor,
        faults: FaultConfig | None = None,
        fault_log: FaultLog | None = None,
        auth: bool = False,
    ) -> None:
        if adb_port % 2 != 1:
            raise PhoneStartError(
                f"adb port {adb_port} must be odd (the console takes the even port below it)"
            )
        self.adb_port = adb_port
        self.serial = f"emulator-{adb_port - 1}"
        self.phone = Phone(self.serial, size, FaultInjector(self.serial, faults, fault_log))
        self.phone.userland()  # the shell's sandbox now: a host that cannot run it fails at start, saying why
        self.services = Services(self.phone, executor, on_drop=self.drop_transport)
        self.console = Console(self.phone, f"virtual_phone_{adb_port - 1}", on_kill=self.kill)
        self.auth = AuthPolicy() if auth else None
        self.connections: set[Connection] = set()
        self.stopped = asyncio.Event()
        self._servers: list[asyncio.Server] = []
        self._keeper: asyncio.Task[None] | None = None
        self._last_seen = 0.0
        self._banner = protocol.banner("sdk_gphone64_x86_64", "sdk_gphone64_x86_64", "emu64x")

    async def start(self) -> None:
        try:
            self._servers.append(await asyncio.start_server(self._on_adb, "127.0.0.1", self.adb_port))
            self._servers.append(
                await asyncio.start_server(self.console.handle, "127.0.0.1", self.adb_port - 1)
            )
        except OSError as e:
            for s in self._servers:
                s.close()
            raise PhoneStartError(
                f"cannot listen on ports {self.adb_port - 1}/{self.adb_port} ({e.strerror}); "
                "another emulator or fleet uses them: pick another --base-port"
            ) from e
        read_token()  # creates the token file before any `adb emu` client looks for it, as the emulator does
        self.phone.save_snapshot("default_boot", time.time())
        self.phone.prerender_soon()
        self._keeper = asyncio.create_task(self._keep_registered())

    async def _on_adb(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            # Small messages (OKAY, then WRTE) must not wait for the host's delayed ACK.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = Connection(reader, writer, self.services.resolve, self._banner, self.auth)
        self.connections.add(conn)
        try:
            await conn.run()
        except asyncio.CancelledError:
            # The loop is shutting down; the connection ends here (asyncio would log the cancellation).
            conn.abort()
        finally:
            self.connections.discard(conn)
            self._last_seen = time.monotonic()

    async def _keep_registered(self) -> None:
        while True:
            if not self.connections and time.monotonic() - self._last_seen > ANNOUNCE_EVERY_S:
                await announce(self.adb_port)
                self._last_seen = time.monotonic()
            await asyncio.sleep(0.2)

    def drop_transport(self) -> None:
        """Fault: the TCP transport dies; the phone keeps listening and announces itself again."""
        for conn in list(self.connections):
            conn.abort()
        self._last_seen = time.monotonic() - ANNOUNCE_EVERY_S + 0.3

    def kill(self) -> None:
        asyncio.get_running_loop().create_task(self.stop())

    async def stop(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
        for s in self._servers:
            s.close()
        for conn in list(self.connections):
            conn.abort()
        self.phone.close()
        self.stopped.set()
