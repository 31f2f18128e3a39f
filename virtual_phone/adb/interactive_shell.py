"""`adb shell` with no command: an interactive mksh in the phone's sandbox, on a terminal (pty) when the
client asks for one, else on pipes, its input and output relayed over the adb stream as they come."""

from __future__ import annotations

import asyncio
import contextlib
import os
import struct
from collections.abc import AsyncIterator
from concurrent.futures import Executor

from virtual_phone.adb.transport import Stream
from virtual_phone.phone import Phone
from virtual_phone.shell.command_line import SH, adbd_uid
from virtual_phone.shell.sandbox import Run, Sandbox


def v2_packet(packet_id: int, data: bytes) -> bytes:
    """A shell protocol v2 packet: 0 stdin, 1 stdout, 2 stderr, 3 exit, 4 close-stdin."""
    return struct.pack("<BI", packet_id, len(data)) + data


async def _stdin(stream: Stream, v2: bool) -> AsyncIterator[bytes]:
    """What the client types, unwrapping shell v2 packets; ends at EOF or close-stdin."""
    pending = bytearray()
    while True:
        chunk = await stream.read()
        if chunk is None:
            return
        if not v2:
            yield chunk
            continue
        pending.extend(chunk)
        while len(pending) >= 5:
            pid, n = struct.unpack_from("<BI", pending)
            if len(pending) < 5 + n:
                break
            data = bytes(pending[5 : 5 + n])
            del pending[: 5 + n]
            if pid == 0 and data:
                yield data
            elif pid == 4:
                return


def _start_shell(phone: Phone, sandbox: Sandbox, pty: bool) -> tuple[Run, int, dict[int, int]]:
    """The interactive shell, started: (its run, the fd its input goes to, output fd → v2 stream id)."""
    if pty:
        master, slave = os.openpty()
        # The terminal becomes the shell's controlling tty (job control, ^C), as on a device.
        run = sandbox.start([SH, "-i"], (slave, slave, slave), adbd_uid(phone), terminal=True)
        os.close(slave)
        return run, master, {master: 1}
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    run = sandbox.start([SH], (in_r, out_w, err_w), adbd_uid(phone))
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    return run, in_w, {out_r: 1, err_r: 2}


async def interactive(phone: Phone, executor: Executor, stream: Stream, v2: bool, pty: bool) -> None:
    loop = asyncio.get_running_loop()
    sandbox = (await loop.run_in_executor(executor, phone.userland)).sandbox
    run, stdin_fd, outputs = _start_shell(phone, sandbox, pty)
    queue: asyncio.Queue[tuple[int, bytes]] = asyncio.Queue()

    def readable(fd: int) -> None:
        try:
            data = os.read(fd, 65536)
        except OSError:  # a pty's master reads EIO once the shell has gone
            data = b""
        if not data:
            loop.remove_reader(fd)
        queue.put_nowait((outputs[fd], data))

    for fd in outputs:
        os.set_blocking(fd, False)
        loop.add_reader(fd, readable, fd)

    async def pump() -> None:
        async for data in _stdin(stream, v2):
            await loop.run_in_executor(executor, _write_all, stdin_fd, data)
        if pty:
            await loop.run_in_executor(executor, _write_all, stdin_fd, b"\x04")  # ^D: EOF to the shell
        else:
            os.close(stdin_fd)

    typing = asyncio.create_task(pump())
    try:
        open_outputs = len(outputs)
        while open_outputs:
            which, data = await queue.get()
            if not data:
                open_outputs -= 1
            elif v2:
                await stream.write(v2_packet(which, data))
            else:
                await stream.write(data)
        rc = await loop.run_in_executor(executor, run.wait)
        if v2:
            await stream.write(v2_packet(3, bytes([(255 if rc is None else rc) & 0xFF])))
    finally:
        typing.cancel()
        run.kill()  # the client went away mid-session: the shell and its children go too
        for fd in outputs:
            loop.remove_reader(fd)
            os.close(fd)
        if pty is False:
            with contextlib.suppress(OSError):
                os.close(stdin_fd)
        phone.shell_ran()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            continue
        except OSError:
            return  # the shell has exited: what is typed after goes nowhere
