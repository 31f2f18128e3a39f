"""`su [WHO [COMMAND [ARG...]]]` of a userdebug image: runs COMMAND (default /system/bin/sh) as WHO (default
root), keeping the caller's folder, fds and groups, as AOSP `system/extras/su/su.cpp` does (WHO: a user name
or number; an unknown name: `su: invalid uid/gid 'NAME'`, exit 1; an unknown program: `su: failed to exec
NAME: No such file or directory`, exit 1; `su -h`: its usage on stderr, exit 0).

su cannot change users from inside the sandbox (no program gains privileges there), so /system/bin/su is a
link to the phone's client like `am`, and the phone asks the sandbox's zygote to start the command as WHO on
the client's fds, then answers with its exit status. A client that goes away takes the command with it.
"""

from __future__ import annotations

import os
from pathlib import Path

from virtual_phone.shell.sandbox import PATH, Sandbox, readable

USAGE = (
    "usage: su [WHO [COMMAND...]]\n\n"
    "Switch to WHO (default 'root') and run the given COMMAND (default sh).\n\n"
    "WHO is a comma-separated list of user, group, and supplementary groups\nin that order.\n\n"
)


def _uid(who: str, names: dict[str, int]) -> int | None:
    user = who.split(",", 1)[0]
    if user in names:
        return names[user]
    return int(user) if user.isdigit() else None


def _found(tree: Path, cwd: str, program: str) -> bool:
    """Whether `program` names a file the sandbox would run (a path, or a name in $PATH)."""
    if "/" in program:
        path = program if program.startswith("/") else f"{cwd}/{program}"
        return (tree / path.lstrip("/")).exists()
    return any((tree / d.lstrip("/") / program).exists() for d in PATH.split(":"))


def su(
    sandbox: Sandbox, names: dict[str, int], request: tuple[str, list[str]], fds: list[int], conn: int
) -> int:
    """Runs one `su` request (cwd, args) on the client's fds; `conn` reads EOF when the client goes away."""
    cwd, args = request
    if args[:1] in (["-h"], ["--help"]):
        os.write(fds[2], USAGE.encode())
        return 0
    uid = _uid(args[0], names) if args else 0
    if uid is None:
        os.write(fds[2], f"su: invalid uid/gid '{args[0].split(',', 1)[0]}'\n".encode())
        return 1
    argv = args[1:] or ["/system/bin/sh"]
    if not _found(sandbox.root, cwd, argv[0]):
        os.write(fds[2], f"su: failed to exec {argv[0]}: No such file or directory\n".encode())
        return 1
    run = sandbox.start(argv, (fds[0], fds[1], fds[2]), uid, cwd=cwd)
    while True:
        ready = readable([run.status_fd, conn])
        if run.status_fd in ready:
            status = run.wait()
            return 255 if status is None else status
        run.kill()  # the client ended (killed with the shell that ran it): so does the command
        status = run.wait()
        return 255 if status is None else status
