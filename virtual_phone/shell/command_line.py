"""`adb shell CMD` on the phone: Android's shell (mksh) runs CMD in the phone's sandbox, as `sh -c CMD`, and
everything it writes comes back in the order it was written.
"""

from __future__ import annotations

import os
import re
import selectors
from collections.abc import Callable
from typing import TYPE_CHECKING

from virtual_phone.shell.program import Caller, Output
from virtual_phone.shell.sandbox import Run
from virtual_phone.state.owners import ROOT, SHELL

if TYPE_CHECKING:
    from virtual_phone.phone import Phone

SH = "/system/bin/sh"
# Programs that run as processes even when named alone: what they record (log: its pid) or how long they
# run (a streaming logcat, until its client goes) needs the process.
AS_PROCESSES = frozenset({"log", "logcat"})
Sink = Callable[[int, bytes], None]  # (1 stdout | 2 stderr, data) as the program writes it
# Words the shell passes on unchanged (no quotes, expansions, globs, operators, assignments, comments).
_PLAIN = re.compile(r"[ \t]*[A-Za-z0-9_./:,@%+-]+([ \t]+[A-Za-z0-9_./:=,@%+-]+)*[ \t]*")


class Shell:
    """Runs command lines on one phone."""

    def __init__(self, phone: Phone) -> None:
        self.phone = phone

    def run(
        self,
        line: str,
        one_stream: bool = False,
        started: Callable[[Run], None] = lambda _run: None,
        stdin_fd: int | None = None,
        sink: Sink | None = None,
    ) -> tuple[Output, int]:
        """Runs a command line to its end; returns everything written and the exit code. `one_stream`:
        stdout and stderr are one pipe (as adbd gives legacy shells and exec:), so their order is exact.
        `stdin_fd` (closed here once handed on; default /dev/null) is the command's stdin. `sink`, if
        given, gets what the program writes as it comes (a streaming logcat), which Output then lacks."""
        userland = self.phone.userland()
        words = line.split()
        if _PLAIN.fullmatch(line) and words[0] in userland.binder.commands and words[0] not in AS_PROCESSES:
            # A plain word list naming one of the phone's programs: mksh would only look the program up in
            # /system/bin and exec it, and the program would only hand its fds to the phone. The phone runs
            # it directly, saving two processes (a few ms on a loaded host) on every observation's screencap.
            out = Output()
            caller = Caller(self.phone, root=self.phone.root, stdin_fd=stdin_fd, uid=adbd_uid(self.phone))
            try:
                rc = userland.binder.commands[words[0]](caller, words[1:], b"", out)
            finally:
                if stdin_fd is not None:
                    os.close(stdin_fd)
            self.phone.shell_ran()
            return out, rc
        return self.run_program([SH, "-c", line], one_stream, started, stdin_fd, sink)

    def run_program(
        self,
        argv: list[str],
        one_stream: bool = False,
        started: Callable[[Run], None] = lambda _run: None,
        stdin_fd: int | None = None,
        sink: Sink | None = None,
    ) -> tuple[Output, int]:
        """Runs a program in the sandbox to its end; `started` gets it first (to kill it from elsewhere)."""
        sandbox = self.phone.userland().sandbox
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe() if not one_stream else (-1, out_w)
        null = os.open(os.devnull, os.O_RDONLY) if stdin_fd is None else stdin_fd
        try:
            run = sandbox.start(argv, (null, out_w, err_w), adbd_uid(self.phone))
        finally:
            for fd in {null, out_w, err_w}:
                os.close(fd)
        started(run)
        out = Output()
        streams = {out_r: 1} if one_stream else {out_r: 1, err_r: 2}
        try:
            _collect(out, streams, diagnostics=1 if one_stream else 2, sink=sink)
        finally:
            for fd in streams:
                os.close(fd)
        rc = run.wait()
        self.phone.shell_ran()
        return out, 255 if rc is None else rc


def adbd_uid(phone: Phone) -> int:
    """Whom adbd starts its shells as: root after `adb root`, else shell (2000)."""
    return ROOT if phone.root else SHELL


# Debian's mksh (R59 2023) starts its diagnostics with `E: ` (errors) or `W: ` (warnings); Android's (AOSP
# external/mksh, R59 2020/05/16: main.c error_prefix) starts them with the shell's name alone:
# `/system/bin/sh: nosuch: inaccessible or not found`. The prefix is taken off the shell's own lines.
_DEBIAN_PREFIX = re.compile(rb"(?m)^[EW]: (?=(?:/system/bin/)?sh: |su: )")


def _collect(out: Output, streams: dict[int, int], diagnostics: int = 2, sink: Sink | None = None) -> None:
    """Reads the fds (→ 1 or 2) until each ends, keeping the order in which their data arrived; the
    stream `diagnostics` carries the shell's messages. With a `sink`, data goes there as it arrives."""
    with selectors.DefaultSelector() as sel:
        for fd, which in streams.items():
            sel.register(fd, selectors.EVENT_READ, which)
        open_fds = len(streams)
        while open_fds:
            for key, _ in sel.select():
                data = os.read(key.fd, 65536)
                if key.data == diagnostics:
                    data = _DEBIAN_PREFIX.sub(b"", data)
                if data and sink is not None:
                    sink(key.data, data)
                elif data and out.chunks and out.chunks[-1][0] == key.data:
                    # toybox writes a line in pieces: one chunk per run of one stream reads as the device's
                    out.chunks[-1] = (key.data, out.chunks[-1][1] + data)
                elif data:
                    out.chunks.append((key.data, data))
                else:
                    sel.unregister(key.fd)
                    open_fds -= 1


def program_names(line: str) -> list[str]:
    """The programs a command line names first in each of its parts (for latency faults only): a rough cut
    at the shell's operators, not a parse; mksh does the real one."""
    parts = re.split(r"&&|\|\||[;|&\n]|\$\(|`|\bthen\b|\bdo\b|\belse\b", line)
    return [p.split()[0].rsplit("/", 1)[-1] for p in parts if p.split()]
