"""The phone's side of its Android programs: a unix socket where /system/bin/am, pm, settings, ... (links to
android_command.c) ask the phone process to run them, as those programs ask system services over binder.

Each request carries the program's stdin, stdout and stderr; the command's output is written straight to
them, so pipes and redirections in the shell work on it as on any program.
"""

from __future__ import annotations

import array
import contextlib
import os
import select
import socket
import struct
import threading
from collections.abc import Callable
from pathlib import Path

from virtual_phone.shell.program import Caller, Command, Output

SOCKET_NAME = "virtual_phone"  # /dev/socket/virtual_phone inside the sandbox
THREADS = 8  # calls served at once (a pipeline of the phone's programs runs them together; su waits in one)


class Binder:
    """Serves the programs in `commands` on `socket_dir/SOCKET_NAME` until `close`."""

    def __init__(
        self,
        socket_dir: Path,
        commands: dict[str, Command],
        caller: Callable[[str, int | None], Caller],
        su: Callable[[tuple[str, list[str]], list[int], int], int],
        peer_uid: bool,
    ) -> None:
        self.commands = commands
        self._caller = caller  # (cwd, the caller's uid or None: adbd's) → who runs the command
        self._su = su  # su.su on the phone's sandbox: (cwd, args), the client's fds, its connection
        # Whose uid counts: the client's process's (a sandbox with users), or the one it says it runs as.
        self._peer_uid = peer_uid
        self.path = socket_dir / SOCKET_NAME
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._server.bind(str(self.path))
        os.chmod(self.path, 0o666)
        self._server.listen(16)
        # A few threads each accept and serve a call: no hand-over to another thread, whose wake-up costs
        # milliseconds on a loaded host; a call that takes long leaves the others to the rest.
        self._threads = [
            threading.Thread(target=self._accept, daemon=True, name=f"binder-{n}") for n in range(THREADS)
        ]
        for t in self._threads:
            t.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return  # closed
            self._serve(conn)

    def _serve(self, conn: socket.socket) -> None:
        fds: list[int] = []
        with conn:
            try:
                msg, anc, _, _ = conn.recvmsg(65536, socket.CMSG_SPACE(3 * 4))
                for level, kind, data in anc:
                    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                        fds = list(array.array("i", data[: len(data) - len(data) % 4]))
                if len(fds) != 3:
                    return
                cwd, said_uid, name, *args = msg.decode("utf-8", "surrogateescape").split("\0")[:-1]
                if name == "su":
                    conn.send(str(self._su((cwd, args), fds, conn.fileno())).encode())
                    return
                pid, peer_uid = _peer(conn)
                uid = peer_uid if self._peer_uid else int(said_uid) if said_uid.isdigit() else None
                caller = self._caller(cwd, uid)
                caller.stdin_fd, caller.stdout_fd, caller.host_pid = fds[0], fds[1], pid
                caller.gone = lambda: _hung_up(conn)
                rc = self.run(caller, name, args, fds[1], fds[2])
                conn.send(str(rc).encode())
            except (OSError, ValueError):
                pass
            finally:
                for fd in fds:
                    os.close(fd)

    def run(self, caller: Caller, name: str, args: list[str], out_fd: int, err_fd: int) -> int:
        """Runs one command, writing its output to the fds in the order it was produced."""
        out = Output()
        fn = self.commands.get(name)
        if fn is None:
            out.err(f"{name}: not a program of this phone\n")
            rc = 127
        else:
            rc = fn(caller, args, b"", out)  # a program that reads stdin does so itself (Caller.read_stdin)
        for fd, chunk in out.chunks:
            try:
                _write_all(out_fd if fd == 1 else err_fd, chunk)
            except BrokenPipeError:
                # The reader went away (`dumpsys | head -1`): Android's program would die of SIGPIPE.
                return 141
        return rc

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the accept() (close alone does not)
        self._server.close()
        for t in self._threads:
            t.join(timeout=2)


def _peer(conn: socket.socket) -> tuple[int, int]:
    """The calling program's (host pid, uid)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", creds)
    return int(pid), int(uid)


def _hung_up(conn: socket.socket) -> bool:
    """Whether the calling program has ended: it sends nothing after its request, so a readable
    connection is its end (or an error)."""
    return bool(select.select([conn], [], [], 0)[0])


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
