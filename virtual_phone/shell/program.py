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
    """Who runs a command: on which phone, as root or not, from which folder."""

    phone: Phone
    root: bool = False
    cwd: str = "/"
    stdin_fd: int | None = None  # the program's stdin, for the few that read it (`sqlite3 DB` without SQL)

    def read_stdin(self) -> bytes:
        if self.stdin_fd is None:
            return b""
        chunks = []
        while chunk := os.read(self.stdin_fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)


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
