"""What one of the phone's Android programs (am, pm, settings, ...) is given and gives back.

Each runs in the phone process when its program in the sandbox's /system/bin asks (binder.py); the tables of
them are in commands.py.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from virtual_phone.phone import Phone


@dataclass
class Output:
    """What a command wrote, in production order: (1, bytes) for stdout, (2, bytes) for stderr."""

    chunks: list[tuple[int, bytes]] = field(default_factory=list)

    def out(self, data: bytes | str) -> None:
        self.chunks.append((1, data.encode() if isinstance(data, str) else data))

    def err(self, data: bytes | str) -> None:
        self.chunks.append((2, data.encode() if isinstance(data, str) else data))

    def stdout(self) -> bytes:
        return b"".join(d for fd, d in self.chunks if fd == 1)

    def stderr(self) -> bytes:
        return b"".join(d for fd, d in self.chunks if fd == 2)


@dataclass
class Caller:
    """Who runs a command: on which phone, as root or not, from which folder, from which process."""

    phone: Phone
    root: bool = False
    cwd: str = "/"
    stdin_fd: int | None = None  # the program's stdin, for the few that read it (`sqlite3 DB` without SQL)

    # The program's process (its host pid; 0: run in the phone's process) and its stdout, for a program that
    # writes as it goes until its process ends (a streaming logcat).
    host_pid: int = 0
    uid: int = 2000
    stdout_fd: int | None = None
    gone: Callable[[], bool] = lambda: False  # the program's process has ended (its caller killed it)

    @property
    def pid(self) -> int:
        """The program's pid as the sandbox sees it (the last of /proc/PID/status's NSpid), looked up only
        by the programs that record it (`log`); 0: run in the phone's process."""
        if not self.host_pid:
            return 0
        try:
            with open(f"/proc/{self.host_pid}/status") as status:
                for line in status:
                    if line.startswith("NSpid:"):
                        return int(line.split()[-1])
        except (OSError, ValueError):
            pass
        return self.host_pid

    def read_stdin(self, size: int | None = None) -> bytes:
        """The program's stdin to its end, or its first `size` bytes (fewer if it ends first)."""
        if self.stdin_fd is None:
            return b""
        chunks, got = [], 0
        while size is None or got < size:
            chunk = os.read(self.stdin_fd, 65536 if size is None else min(65536, size - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def write_now(self, data: bytes) -> bool:
        """Writes to the program's stdout at once; False if there is none, or its reader went away."""
        if self.stdout_fd is None:
            return False
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.stdout_fd, view) :]
        except OSError:  # EPIPE: the reader went away
            return False
        return True


Command = Callable[[Caller, list[str], bytes, Output], int]  # (caller, args, stdin, output) -> exit code


def command_table(*commands: Command, **aliases: Command) -> dict[str, Command]:
    """A module's commands, each named by its function (`_grep` → `grep`), plus other names for some."""
    return {fn.__name__.lstrip("_"): fn for fn in commands} | aliases


def exception(io: Output, cmd: str, exc: str, msg: str) -> int:
    """How a Java shell command reports an exception (ShellCommand.exec): two lines on stderr, exit 255."""
    io.err(f"Exception occurred while executing '{cmd}':\n{exc}: {msg}\n")
    return 255


def object_hash(s: str) -> str:
    """A stable 7-hex-digit identity hash, as Android prints for objects (`Window{4f3c1a2 ...}`)."""
    return format(zlib.crc32(s.encode()) & 0xFFFFFFF, "07x")
