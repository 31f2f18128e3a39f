"""The phone's sandbox: bubblewrap over the phone's tree, holding a zygote (zygote.py) that starts Android's
own shell (mksh) and userland (toybox) there, one process per request.

It starts on the first shell command and lives as long as the phone; it has no network and sees the host only
through read-only /usr (the programs and their libraries).

Users: a phone started as root gets Android's users (`users`): the sandbox is a mount, pid, network, IPC and
UTS namespace without a user namespace, its processes run as the uids Android uses (shell 2000, root 0, ...),
so the kernel itself refuses the shell what Android refuses it (`ls /data/data`: Permission denied). Its root
keeps only the capabilities that file ownership needs (no mounts, devices, clock or module loading), /proc/sys
and /proc/sysrq-trigger are read-only, and no program gains privileges on exec (bwrap sets no_new_privs).
A phone started as another user cannot hand out uids (a user namespace maps that one user only, unless
newuidmap and /etc/subuid are set up for it): every process runs as root in a user namespace, and `su` and
`adb root` change only what the phone's own programs allow (sqlite3 on app databases, adb pull).
"""

from __future__ import annotations

import array
import contextlib
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

from virtual_phone.errors import PhoneStartError
from virtual_phone.state.tree import BUGREPORTS

# Where the shell looks for programs, as on an Android 14 emulator (`echo $PATH`).
PATH = (
    ":".join(
        f"/{d}/bin"
        for d in ("product", "apex/com.android.runtime", "apex/com.android.art", "system_ext", "system")
    )
    + ":/system/xbin:/odm/bin:/vendor/bin:/vendor/xbin"
)
ENV = {
    "PATH": PATH,
    "HOME": "/",
    "USER": "shell",
    "SHELL": "/system/bin/sh",
    "HOSTNAME": "emu64x",
    "TMPDIR": "/data/local/tmp",
    "EXTERNAL_STORAGE": "/sdcard",
    "ANDROID_DATA": "/data",
    "ANDROID_ROOT": "/system",
    "ANDROID_STORAGE": "/storage",
    "ENV": "/system/etc/mkshrc",  # read by interactive shells only, as Android's mksh reads it
}  # no TZ: programs read the phone's zone from /etc/localtime (state/phone_clock.py keeps it)
PACKAGES = "apt-get install mksh toybox bubblewrap sqlite3 faketime gcc"


def require_tools() -> dict[str, str]:
    """The host programs the sandbox needs, by name; PhoneStartError saying what to install if one is
    missing or user namespaces are off."""
    tools = {name: shutil.which(name) for name in ("bwrap", "mksh", "toybox", "sqlite3", "cc")}
    # The same mksh linked statically starts in half the time (no dynamic loading), where Debian ships it.
    tools["mksh"] = shutil.which("mksh-static") or tools["mksh"]
    faketime = sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1")) + sorted(
        Path("/usr/lib").glob("faketime/libfaketime.so.1")
    )
    tools["libfaketime"] = str(faketime[0]) if faketime else None
    missing = [name for name, path in tools.items() if path is None]
    if missing:
        raise PhoneStartError(
            f"the phone's shell needs {', '.join(missing)} on this host: install them ({PACKAGES})"
        )
    probe = subprocess.run(
        [str(tools["bwrap"]), "--unshare-all", "--ro-bind", "/", "/", "true"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        raise PhoneStartError(
            "bubblewrap cannot make a sandbox here (user namespaces off?): "
            f"{probe.stderr.strip()}; enable them (sysctl kernel.unprivileged_userns_clone=1) or run as root"
        )
    return {name: str(path) for name, path in tools.items()}


def _system_dirs() -> list[str]:
    """bwrap arguments giving the sandbox the host's programs and libraries, read-only, as the host has them
    (on a merged-/usr host /lib is a symlink into /usr)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/lib", "/lib64", "/lib32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    prefix = os.path.realpath(sys.base_prefix)
    if not prefix.startswith("/usr/"):  # a Python outside /usr (pyenv) for the zygote
        args += ["--ro-bind", prefix, prefix]
    return args


class Run:
    """A program started in the sandbox: `wait` gives its exit status, `kill` ends it and its session."""

    def __init__(self, sandbox: Sandbox, ident: str, status_fd: int) -> None:
        self._sandbox = sandbox
        self.ident = ident
        self.status_fd = status_fd  # readable (EOF after the status) once the program has ended
        self._status: int | None = None

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit status (as `$?` shows it: 128+N after signal N), or None if still running."""
        if self._status is None:
            if timeout is not None and not readable([self.status_fd], timeout):
                return None
            data = b""
            while chunk := os.read(self.status_fd, 64):
                data += chunk
            os.close(self.status_fd)
            # No status at all: the sandbox went away with the program in it.
            self._status = int(data) if data.strip().isdigit() else 255
        return self._status

    def kill(self) -> None:
        self._sandbox.kill(self.ident)


# Root's capabilities in a sandbox with users: what owning files takes (chown, chmod, reading and writing any
# file of the tree) and changing users (su); not mounting, devices, the clock, tracing or modules.
ROOT_CAPS = (
    *("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL"),
    *("CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP"),
)


def _namespaces(users: bool) -> list[str]:
    """bwrap arguments for the namespaces: every one (a user namespace too) without users; with users all but
    the user namespace, root's capabilities cut down and the kernel's knobs in /proc read-only."""
    if not users:
        return ["--unshare-all"]
    args = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    args += ["--cap-drop", "ALL", *[a for cap in ROOT_CAPS for a in ("--cap-add", cap)]]
    return args


class Sandbox:
    """One bwrap + zygote. `start` starts a program there with the given fds, as a user."""

    def __init__(self, root: Path, socket_dir: Path, tools: dict[str, str], users: bool) -> None:
        self.root = root
        self.users = users  # processes run as Android's uids (see the module's docstring)
        self._lock = threading.Lock()
        self._next = 0
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        zygote = (Path(__file__).parent / "zygote.py").read_text()
        proc = ["--ro-bind", "/proc/sys", "/proc/sys"]
        if os.path.exists("/proc/sysrq-trigger"):  # kernels without magic SysRq have none
            proc += ["--ro-bind", "/dev/null", "/proc/sysrq-trigger"]
        args = [
            tools["bwrap"],
            *_namespaces(users),
            "--die-with-parent",
            "--as-pid-1",  # the zygote is the namespace's init: when it ends, every process in there ends
            "--hostname",
            "localhost",
            *_system_dirs(),
            "--bind", str(root / "storage"), "/storage",
            "--bind", str(root / "data"), "/data",
            "--ro-bind", str(root / "system"), "/system",
            "--symlink", "/storage/self/primary", "/sdcard",
            "--symlink", "/system/etc", "/etc",
            "--symlink", BUGREPORTS, "/bugreports",
            "--proc", "/proc",
            *(proc if users else []),
            "--dev", "/dev",
            "--bind", str(socket_dir), "/dev/socket",
            "--remount-ro", "/",  # as Android's root: /sdcard and the rest cannot be removed or added to
            "--chdir", "/",
            "--clearenv",
            *[a for k, v in ENV.items() for a in ("--setenv", k, v)],
            os.path.realpath(sys.executable), "-I", "-S", "-c", zygote, str(theirs.fileno()),
            *(["users"] if users else []),
        ]  # fmt: skip
        self._proc = subprocess.Popen(args, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        theirs.close()

    def start(
        self, argv: list[str], fds: tuple[int, int, int], uid: int, terminal: bool = False, cwd: str = "/"
    ) -> Run:
        """Starts argv (a path inside the sandbox, or a name looked up in $PATH, first) as user `uid` in
        folder `cwd` with fds as its 0, 1, 2; `terminal`: fd 0 is a terminal that becomes its controlling
        tty."""
        with self._lock:
            self._next += 1
            ident = str(self._next)
        status_r, status_w = os.pipe()
        kind = "tty " if terminal else "run "
        request = (kind + "\0".join([ident, str(uid), cwd, *argv])).encode("utf-8", "surrogateescape")
        try:
            self._sock.sendmsg([request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, _ints((*fds, status_w)))])
        except OSError:
            pass  # the sandbox is gone: the status pipe ends empty, and wait() says 255
        finally:
            os.close(status_w)
        return Run(self, ident, status_r)

    def kill(self, ident: str) -> None:
        """Ends a program and everything it started (its session)."""
        with contextlib.suppress(OSError):
            self._sock.send(f"kill {ident}".encode())

    def alive(self) -> bool:
        return self._proc.poll() is None

    def close(self) -> None:
        """Ends the sandbox and every process in it: the zygote ends when its socket closes, and with it,
        as the namespace's init, everything in the sandbox. (The same happens when the phone process dies.)"""
        self._sock.close()
        try:
            self._proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def readable(fds: list[int], timeout: float | None = None) -> list[int]:
    """The fds with something to read, or that ended (poll: select() refuses fds above 1023)."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, select.POLLIN)
    return [fd for fd, _ in poller.poll(None if timeout is None else int(timeout * 1000))]


def _ints(values: tuple[int, ...]) -> bytes:
    return array.array("i", values).tobytes()
