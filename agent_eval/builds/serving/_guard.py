"""Runs an engine server as its child and kills the engine's whole process group once the harness is gone.

Started by `serve()` as the leader of a new session: `python _guard.py HARNESS_PID -- CMD...`. Stdlib only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

GRACE_S = 10.0


def _kill_group(grace_s: float, child: subprocess.Popen[bytes]) -> None:
    # SIGTERM lets the server stop its own workers; whatever is left after the grace period is killed.
    pgid = os.getpgrp()
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.1)
    time.sleep(0.2)
    os.killpg(pgid, signal.SIGKILL)


def _kill_rest_of_group() -> None:
    pgid, me = os.getpgrp(), os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            if os.getpgid(int(entry)) == pgid:
                os.kill(int(entry), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue


def main() -> None:
    harness = int(sys.argv[1])
    command = sys.argv[sys.argv.index("--") + 1 :]
    stopping = False

    def on_term(signum: int, frame: object) -> None:
        nonlocal stopping
        stopping = True

    # The harness stops the engine with killpg(SIGTERM), which reaches this process too.
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    child = subprocess.Popen(command)
    while True:
        code = child.poll()
        if code is not None:
            # The server is gone; take any worker it left behind with it, and pass on its exit code.
            _kill_rest_of_group()
            sys.exit(code if code >= 0 else 128 - code)
        if stopping or os.getppid() != harness:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            _kill_group(GRACE_S, child)
        time.sleep(0.25)


if __name__ == "__main__":
    main()
