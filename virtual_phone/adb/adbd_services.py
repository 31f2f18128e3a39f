"""The adbd services a phone offers on a stream: shell (v2 and legacy), exec, and sync (push/pull/ls).

Commands run on worker threads so that one slow command never blocks the other streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import struct
from collections.abc import Callable
from concurrent.futures import Executor

from virtual_phone.adb.interactive_shell import interactive, v2_packet
from virtual_phone.adb.transport import Service, Stream, StreamClosed
from virtual_phone.phone import Phone
from virtual_phone.shell.command_line import Shell, program_names
from virtual_phone.shell.commands import command_table
from virtual_phone.shell.program import Output
from virtual_phone.shell.sandbox import Run
from virtual_phone.state.appdata import AppDatabase, DataError
from virtual_phone.state.storage import PhoneError

SYNC_DATA_MAX = 64 * 1024


class Services:
    """Resolves a service name to its handler for one phone."""

    def __init__(self, phone: Phone, executor: Executor, on_drop: Callable[[], None]) -> None:
        self.phone = phone
        self.executor = executor
        self.on_drop = on_drop
        self.commands = command_table()

    def resolve(self, service: str) -> Service | None:
        if service.startswith("shell"):
            head, sep, cmd = service.partition(":")
            if not sep:
                return None
            opts = head.split(",")[1:]
            v2 = "v2" in opts
            pty = "pty" in opts or ("raw" not in opts and not cmd)
            return lambda s, _svc: self._shell(s, cmd, v2, pty)
        if service.startswith("exec:"):
            return lambda s, _svc: self._exec(s, service[5:])
        if service == "sync:":
            return self._sync
        if service.startswith("reboot:"):
            return self._reboot
        if service in ("root:", "unroot:"):
            return self._root
        return None

    async def _root(self, stream: Stream, service: str) -> None:
        """`adb root` / `adb unroot`: adbd restarts as (non) root, so the transport drops and comes back
        (the adb client waits for that after a "restarting" answer)."""
        want = service == "root:"
        if self.phone.root == want:
            await stream.write(
                b"adbd is already running as root\n" if want else b"adbd not running as root\n"
            )
            return
        self.phone.root = want
        await stream.write(b"restarting adbd as root\n" if want else b"restarting adbd as non root\n")
        await stream.close()
        asyncio.get_running_loop().call_later(0.1, self.on_drop)

    async def _reboot(self, stream: Stream, _service: str) -> None:
        """`adb reboot`: settings and files survive, apps restart on the home screen, the transport drops."""
        self.phone.reboot()
        await asyncio.sleep(0.05)
        self.on_drop()

    async def _run(
        self,
        stream: Stream,
        line: str,
        one_stream: bool,
        v2: bool = False,
        pty: bool = False,
        raw_stdin: bool = False,
    ) -> tuple[Output, int] | None:
        """Runs one command line with the phone's faults; None if the transport was dropped instead. If the
        client closes the stream first (a timeout, ^C), the command and what it started are killed. Over
        shell v2 the client's stdin packets are the command's stdin (`echo SQL | adb shell sqlite3 DB`),
        over exec: the stream's bytes are (`adb install` streams the APK to `cmd package install -S N`).
        What a program started in the sandbox writes goes to the client as it comes; the Output returned
        holds what a program run in the phone's process wrote."""
        faults = self.phone.faults
        if faults.should_drop(line):
            self.on_drop()
            return None
        delay = faults.latency_for(program_names(line), line)
        if delay:
            await asyncio.sleep(delay)
        loop = asyncio.get_running_loop()
        runs: list[Run] = []
        stdin_r, stdin_w = os.pipe() if v2 or raw_stdin else (None, None)
        relay = _relay_raw if raw_stdin else _relay_stdin
        queue: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue()
        forwarder = asyncio.ensure_future(_forward(stream, queue, v2, pty))

        def sink(fd: int, data: bytes) -> None:  # on the worker thread
            loop.call_soon_threadsafe(queue.put_nowait, (fd, data))

        shell = Shell(self.phone)
        work = loop.run_in_executor(self.executor, shell.run, line, one_stream, runs.append, stdin_r, sink)
        watcher: asyncio.Future[object] = asyncio.ensure_future(
            _until_closed(stream) if stdin_w is None else relay(stream, stdin_w, self.executor)
        )
        waiting: list[asyncio.Future[object]] = [work, watcher]  # type: ignore[list-item]
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        if watcher in done:
            for run in runs:
                run.kill()
        watcher.cancel()
        result = await work
        queue.put_nowait(None)  # after every chunk the sink queued (they were scheduled before the result)
        await forwarder
        return result

    async def _exec(self, stream: Stream, cmd: str) -> None:
        result = await self._run(stream, cmd, one_stream=True, raw_stdin=True)
        if result is None:
            return
        out, _ = result
        # exec: has no separate stderr; like adbd, both go to the one stream in production order.
        await stream.write(b"".join(d for _, d in out.chunks))

    async def _shell(self, stream: Stream, cmd: str, v2: bool, pty: bool) -> None:
        if not cmd:
            await interactive(self.phone, self.executor, stream, v2, pty)
            return
        result = await self._run(stream, cmd, one_stream=not v2, v2=v2, pty=pty)
        if result is None:
            return
        out, rc = result
        frames = [_frame(fd, d, v2, pty) for fd, d in out.chunks if d]
        if v2:
            frames.append(v2_packet(3, bytes([rc & 0xFF])))
        await stream.write(b"".join(frames))

    async def _sync(self, stream: Stream, _service: str) -> None:
        reader = _Reader(stream)
        while True:
            try:
                head = await reader.exactly(8)
            except EOFError:
                return
            ident, length = head[:4], struct.unpack("<I", head[4:])[0]
            if ident == b"QUIT":
                return
            if length > 4096:
                await stream.write(_fail("path too long"))
                return
            arg = (await reader.exactly(length)).decode("utf-8", "replace")
            if ident == b"STAT":
                await stream.write(b"STAT" + struct.pack("<3I", *self._stat(arg)))
            elif ident == b"LIST":
                await stream.write(self._sync_list(arg))
            elif ident == b"RECV":
                await stream.write(self._sync_recv(arg))
            elif ident == b"SEND":
                if not await self._sync_send(reader, stream, arg):
                    return
            else:
                await stream.write(_fail(f"unknown sync request {ident!r}"))
                return

    def _sync_list(self, arg: str) -> bytes:
        """LIST: a DENT per entry (with . and ..), then DONE."""
        storage = self.phone.storage
        out = bytearray()
        if storage.is_dir(arg):
            for name in [".", "..", *storage.listdir(arg)]:
                mode, size, mtime = self._stat(
                    posixpath.join(arg, name) if name != ".." else posixpath.dirname(arg)
                )
                out += b"DENT" + struct.pack("<4I", mode, size, mtime, len(name.encode())) + name.encode()
        out += b"DONE" + struct.pack("<4I", 0, 0, 0, 0)
        return bytes(out)

    def _database(self, path: str) -> AppDatabase | None:
        """The app database whose file is at `path` when adbd runs as root (unreadable otherwise)."""
        return self.phone.data.by_path(path) if self.phone.root else None

    def _sync_recv(self, arg: str) -> bytes:
        """RECV: the file in DATA chunks then DONE, or FAIL. An app database comes as a SQLite file."""
        storage = self.phone.storage
        db = self._database(arg)
        data = db.snapshot() if db is not None else storage.read(arg)
        if data is None:
            reason = "Is a directory" if storage.is_dir(arg) else "No such file or directory"
            return _fail(f"open failed: {reason}")
        out = bytearray()
        for off in range(0, len(data), SYNC_DATA_MAX):
            part = data[off : off + SYNC_DATA_MAX]
            out += b"DATA" + struct.pack("<I", len(part)) + part
        out += b"DONE" + struct.pack("<I", 0)
        return bytes(out)

    async def _sync_send(self, reader: _Reader, stream: Stream, arg: str) -> bool:
        """SEND "path,mode": DATA chunks until DONE, then OKAY or FAIL. False: the sync session ends."""
        path = arg.rsplit(",", 1)[0]
        buf = bytearray()
        mtime = None
        while True:
            h = await reader.exactly(8)
            n = struct.unpack("<I", h[4:])[0]
            if h[:4] == b"DATA":
                if n > SYNC_DATA_MAX:
                    await stream.write(_fail("data chunk too large"))
                    return False
                buf += await reader.exactly(n)
            elif h[:4] == b"DONE":
                mtime = n or None  # DONE carries the file's mtime, which adbd gives the pushed file
                break
            else:
                await stream.write(_fail(f"invalid data message {h[:4]!r}"))
                return False
        try:
            db = self._database(path)
            if db is not None:
                db.restore(bytes(buf))  # a pushed .db file replaces the app's database, as on a device
            else:
                self.phone.storage.make_dirs(posixpath.dirname(path))
                self.phone.storage.write(path, bytes(buf), mtime_s=mtime)
        except (PhoneError, DataError) as e:
            await stream.write(_fail(f"couldn't create file: {e}"))
            return True
        await stream.write(b"OKAY" + struct.pack("<I", 0))
        return True

    def _stat(self, path: str) -> tuple[int, int, int]:
        """Mode, size and mtime as the file in the tree has them (zeros: none the shell user may see)."""
        db = self._database(path)
        found = self.phone.storage.stat(
            db.path if db is not None and db.path else path, as_root=db is not None
        )
        return found or (0, 0, 0)


async def _relay_stdin(stream: Stream, fd: int, executor: Executor) -> None:
    """Writes the client's v2 stdin packets to `fd` (closed at close-stdin, or when this ends); returns when
    the client closes the stream."""
    loop = asyncio.get_running_loop()
    pending = bytearray()
    try:
        while (chunk := await stream.read()) is not None:
            pending += chunk
            while len(pending) >= 5:
                kind, n = struct.unpack_from("<BI", pending)
                if len(pending) < 5 + n:
                    break
                data = bytes(pending[5 : 5 + n])
                del pending[: 5 + n]
                if kind == 0 and fd >= 0:
                    try:
                        await loop.run_in_executor(executor, _write_all, fd, data)
                    except OSError:  # the command is gone or closed its stdin: the rest goes nowhere
                        os.close(fd)
                        fd = -1
                elif kind == 4 and fd >= 0:  # close-stdin
                    os.close(fd)
                    fd = -1
    finally:
        if fd >= 0:
            os.close(fd)


async def _relay_raw(stream: Stream, fd: int, executor: Executor) -> None:
    """Writes what the client sends on an exec: stream to `fd` as it is (closed when the stream closes);
    returns when the client closes the stream."""
    loop = asyncio.get_running_loop()
    try:
        while (chunk := await stream.read()) is not None:
            if fd >= 0:
                try:
                    await loop.run_in_executor(executor, _write_all, fd, chunk)
                except OSError:  # the command is gone or closed its stdin
                    os.close(fd)
                    fd = -1
    finally:
        if fd >= 0:
            os.close(fd)


def _frame(fd: int, data: bytes, v2: bool, pty: bool) -> bytes:
    """Output as the client gets it: a v2 packet, a terminal's \r\n lines, or the bytes alone."""
    if pty:
        data = data.replace(b"\n", b"\r\n")  # a terminal has one output stream and turns \n into \r\n
    return v2_packet(1 if pty else fd, data) if v2 else data


async def _forward(
    stream: Stream, queue: asyncio.Queue[tuple[int, bytes] | None], v2: bool, pty: bool
) -> None:
    """Sends the queued output to the client in order, until None; after the client went, it is dropped."""
    while (item := await queue.get()) is not None:
        if not stream.closed:
            with contextlib.suppress(StreamClosed):
                await stream.write(_frame(*item, v2, pty))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def _until_closed(stream: Stream) -> None:
    """Returns when the client closes the stream (what it sends meanwhile, e.g. stdin, is dropped)."""
    while await stream.read() is not None:
        pass


def _fail(msg: str) -> bytes:
    return b"FAIL" + struct.pack("<I", len(msg.encode())) + msg.encode()


class _Reader:
    """Exact reads over a stream whose WRTE boundaries do not align with sync requests."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.buf = bytearray()

    async def exactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = await self.stream.read()
            if chunk is None:
                raise EOFError
            self.buf += chunk
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out
