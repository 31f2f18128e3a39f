"""Runs inside the phone's sandbox for the phone's lifetime and starts its shell processes on request.

One bubblewrap per phone instead of one per command: bwrap's namespaces cost milliseconds to set up, a
spawn from here costs well under one. This file runs as its own program on the host's Python standard
library only (no virtual_phone inside the sandbox). Protocol on the fd its one argument names, a
SOCK_SEQPACKET socket to the phone:
- request  `run ID\\0UID\\0CWD\\0ARG\\0ARG...` with 4 fds (stdin, stdout, stderr, status) → the process
  starts in its own session as user UID in folder CWD (when the sandbox has users, argv[2] `users`; else it
  stays the zygote's user, told UID in $VIRTUAL_PHONE_UID); when it ends, its status (as a shell prints `$?`:
  128+N for signal N; 127 if it could not start) is written to the status fd, which is then closed;
- request  `tty ID\\0UID\\0CWD\\0ARG...`: the same, fd 0 a terminal that becomes its controlling tty;
- request  `kill ID` → SIGKILL to that process's group.
"""

from __future__ import annotations

import array
import contextlib
import os
import select
import signal
import socket
import sys


def _status(wait_status: int) -> int:
    return 128 + os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) else os.WEXITSTATUS(wait_status)


def _report(status_fd: int, status: int) -> None:
    with contextlib.suppress(OSError):  # nobody waits for it any more
        os.write(status_fd, str(status).encode())
    os.close(status_fd)


NAMES = {0: "root", 2000: "shell", 1000: "system"}
# Starts a program as a user (spawn_as.c): posix_spawn itself can neither change users nor take a
# controlling tty, and a fork of this Python process costs milliseconds where posix_spawn costs a fraction.
SPAWN_AS = "/system/libexec/spawn_as"


def _spawn(
    argv: list[str], env: dict[str, str], stdio: list[int], who: tuple[int, str], users: bool, tty: bool
) -> int:
    """posix_spawn of spawn_as, which becomes `who` (uid, folder) and runs argv in a new session; a program
    name without a folder is looked up in $PATH."""
    uid, cwd = who
    name = NAMES.get(uid, f"u0_a{uid - 10000}" if uid >= 10000 else str(uid))
    env = env | {"USER": name, "LOGNAME": name, "VIRTUAL_PHONE_UID": str(uid)}
    helper = [SPAWN_AS, str(uid) if users else "-", cwd, "1" if tty else "0", *argv]
    actions = [(os.POSIX_SPAWN_DUP2, fd, n) for n, fd in enumerate(stdio)]
    return os.posix_spawn(SPAWN_AS, helper, env, file_actions=actions, setsid=True)


def _readable(*fds: int, timeout_ms: int | None = None) -> list[int]:
    """The fds with something to read (poll: select() refuses fds above 1023, which a phone process that
    has opened many files hands on)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, _ in poller.poll(timeout_ms)]


def _recv(sock: socket.socket) -> tuple[bytes, list[int]]:
    fds = array.array("i")
    msg, anc, _, _ = sock.recvmsg(65536, socket.CMSG_SPACE(4 * fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    return msg, list(fds)


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    sock.set_inheritable(False)  # the shells it starts must not talk to the phone in its name
    env = dict(os.environ)
    running: dict[int, tuple[str, int]] = {}  # pid → (request id, status fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    users = sys.argv[2:] == ["users"]
    os.chdir("/")
    # adbd's umask is 0 (packages/modules/adb/daemon/main.cpp); shared storage's modes come from its ACLs
    # (state/owners.py). Without users there are no ACLs: 007 gives its files rw-rw---- as Android shows them.
    os.umask(0 if users else 0o007)
    while True:
        ready = _readable(sock.fileno(), wake_r)
        if wake_r in ready:
            os.read(wake_r, 512)
            while running:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                entry = running.pop(pid, None)
                if entry is not None:
                    _report(entry[1], _status(wait_status))
        if sock.fileno() not in ready:
            continue
        msg, fds = _recv(sock)
        if not msg:
            return  # the phone went away: as the namespace's init, leaving ends every process in it
        kind, _, rest = msg.partition(b" ")
        if kind in (b"run", b"tty"):
            ident, uid, cwd, *argv = rest.decode("utf-8", "surrogateescape").split("\0")
            *stdio, status_fd = fds
            try:
                pid = _spawn(argv, env, stdio, (int(uid), cwd), users, kind == b"tty")
                running[pid] = (ident, status_fd)
            except OSError as e:
                os.write(stdio[2], f"{argv[0]}: {e.strerror}\n".encode())
                _report(status_fd, 127)
            finally:
                for fd in stdio:
                    os.close(fd)
        elif kind == b"kill":
            for pid, (ident, _) in running.items():
                if ident == rest.decode():
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(0)
