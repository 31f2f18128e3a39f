"""adbd over TCP: the handshake (with optional AUTH), streams with one unacknowledged WRTE each, chunking.

A malformed message closes that connection only; the phone keeps listening for the next one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable

from virtual_phone.adb import protocol as p

log = logging.getLogger(__name__)


class StreamClosed(Exception):
    pass


class Stream:
    """One service stream: bytes in from the host's WRTEs, out as WRTEs of at most the negotiated size."""

    def __init__(self, conn: Connection, local_id: int, remote_id: int) -> None:
        self.conn = conn
        self.local_id = local_id
        self.remote_id = remote_id
        self.inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._acked = asyncio.Event()
        self._acked.set()
        self.closed = False

    async def write(self, data: bytes) -> None:
        size = self.conn.max_payload
        view = memoryview(data)
        for off in range(0, len(data), size):
            await self._acked.wait()
            if self.closed:
                raise StreamClosed
            self._acked.clear()
            self.conn.send(p.WRTE, self.local_id, self.remote_id, bytes(view[off : off + size]))
            await self.conn.drain()

    async def read(self) -> bytes | None:
        """The next chunk the host wrote, or None once the stream is closed."""
        if self.closed and self.inbox.empty():
            return None
        return await self.inbox.get()

    async def close(self) -> None:
        if self.closed:
            return
        # Let the last WRTE be acknowledged before closing, as adbd does.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._acked.wait(), timeout=10)
        if not self.closed:
            self.closed = True
            self.conn.send(p.CLSE, self.local_id, self.remote_id)
            await self.conn.drain()
        self.conn.streams.pop(self.local_id, None)

    def on_okay(self) -> None:
        self._acked.set()

    def on_close(self) -> None:
        self.closed = True
        self._acked.set()
        self.inbox.put_nowait(None)


Service = Callable[[Stream, str], Awaitable[None]]
Resolver = Callable[[str], Service | None]


class Connection:
    """One TCP connection from the adb server: handshake, then multiplexed streams."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        resolve: Resolver,
        banner: bytes,
        auth: AuthPolicy | None = None,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.resolve = resolve
        self.banner = banner
        self.auth = auth
        self.version = p.VERSION_NO_CHECKSUM
        self.max_payload = p.HANDSHAKE_MAX
        self.online = False
        self.streams: dict[int, Stream] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self._next_id = 1
        self._token = b""

    def send(self, command: int, arg0: int, arg1: int, data: bytes = b"") -> None:
        if self.writer.is_closing():
            return
        self.writer.write(p.pack(command, arg0, arg1, data, checksum=self.version < p.VERSION_NO_CHECKSUM))

    async def drain(self) -> None:
        with contextlib.suppress(ConnectionError):
            await self.writer.drain()

    async def run(self) -> None:
        try:
            while True:
                raw = await self.reader.readexactly(p.HEADER.size)
                command, arg0, arg1, length = p.parse_header(raw, p.MAX_PAYLOAD)
                data = await self.reader.readexactly(length) if length else b""
                await self.handle(p.Message(command, arg0, arg1, data))
        except p.ProtocolError as e:
            log.warning("closing adb connection: %s", e)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.abort()

    def abort(self) -> None:
        """Drops the connection and every stream on it (the host sees the transport go away)."""
        for s in list(self.streams.values()):
            s.on_close()
        self.streams.clear()
        for t in list(self.tasks):
            t.cancel()
        if not self.writer.is_closing():
            self.writer.close()

    async def handle(self, msg: p.Message) -> None:
        c = msg.command
        if c == p.CNXN:
            self.version = min(msg.arg0, p.VERSION_NO_CHECKSUM)
            if self.version < p.VERSION_CHECKSUM:
                raise p.ProtocolError(f"unsupported version {msg.arg0:#x}")
            self.max_payload = max(p.HANDSHAKE_MAX, min(msg.arg1, p.MAX_PAYLOAD))
            if self.auth is not None and not self.online:
                self._send_token()
            else:
                self._connect()
        elif c == p.AUTH:
            if self.auth is None or self.online:
                return
            if msg.arg0 == p.AUTH_SIGNATURE and self.auth.accepts(self._token, msg.data):
                self._connect()
            elif msg.arg0 == p.AUTH_RSAPUBLICKEY:
                self.auth.allow(p.parse_public_key(msg.data))  # the user taps "Allow" on the phone
                self._connect()
            elif msg.arg0 == p.AUTH_SIGNATURE:
                self._send_token()
            else:
                raise p.ProtocolError(f"unexpected AUTH type {msg.arg0}")
        elif not self.online:
            raise p.ProtocolError(f"{msg} before the handshake")
        elif c == p.OPEN:
            self._open(msg)
        elif c == p.OKAY:
            s = self.streams.get(msg.arg1)
            if s is not None:
                s.on_okay()
        elif c == p.WRTE:
            s = self.streams.get(msg.arg1)
            if s is None:
                self.send(p.CLSE, 0, msg.arg0)
                return
            s.inbox.put_nowait(msg.data)
            self.send(p.OKAY, s.local_id, s.remote_id)
        elif c == p.CLSE:
            s = self.streams.pop(msg.arg1, None)
            if s is not None:
                s.on_close()
        else:
            raise p.ProtocolError(f"unexpected {msg}")

    def _send_token(self) -> None:
        self._token = os.urandom(20)
        self.send(p.AUTH, p.AUTH_TOKEN, 0, self._token)

    def _connect(self) -> None:
        self.online = True
        self.send(p.CNXN, self.version, p.MAX_PAYLOAD, self.banner)

    def _open(self, msg: p.Message) -> None:
        if msg.arg0 == 0:
            raise p.ProtocolError("OPEN with local id 0")
        service = msg.data.rstrip(b"\0").decode("utf-8", "replace")
        handler = self.resolve(service)
        if handler is None:
            self.send(p.CLSE, 0, msg.arg0)
            return
        local_id = self._next_id
        self._next_id += 1
        stream = Stream(self, local_id, msg.arg0)
        self.streams[local_id] = stream
        self.send(p.OKAY, local_id, msg.arg0)
        task = asyncio.create_task(self._serve(handler, stream, service))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _serve(self, handler: Service, stream: Stream, service: str) -> None:
        try:
            await handler(stream, service)
        except StreamClosed:
            pass
        except Exception:
            log.exception("service %r failed", service)
        finally:
            await stream.close()


class AuthPolicy:
    """Which host keys this phone trusts; a key sent in the clear is trusted from then on."""

    def __init__(self) -> None:
        self.keys: list[p.PublicKey] = []

    def accepts(self, token: bytes, signature: bytes) -> bool:
        return any(p.verify(k, token, signature) for k in self.keys)

    def allow(self, key: p.PublicKey) -> None:
        self.keys.append(key)
