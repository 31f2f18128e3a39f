"""Running Ray inside a network namespace of the test's own (only 127.0.0.1 exists there, nothing leaves).

`in_namespace(script, *args)` re-executes a helper script under `unshare -n` with the loopback up; the helper
starts a local Ray cluster (ray.cluster_utils.Cluster) and writes what it saw as JSON for the test to check.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def namespace_ok() -> str | None:
    """Why Ray tests cannot run here (None: they can)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "Ray is not installed (pip install -e '.[cluster]')"
    if not (shutil.which("unshare") and shutil.which("ip")):
        return "needs `unshare` and `ip` for a private network namespace"
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        return f"cannot create a network namespace: {probe.stderr.decode().strip()}"
    return None


needs_namespace = pytest.mark.skipif(namespace_ok() is not None, reason=str(namespace_ok()))


def in_namespace(script: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Run `python script args...` in a new network namespace, niced, with the repo on PYTHONPATH."""
    env = {
        **os.environ,
        "PYTHONPATH": f"{REPO}:{REPO / 'tests'}",
        "HF_HUB_OFFLINE": "1",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    command = " ".join([sys.executable, str(script), *args])
    return subprocess.run(
        ["nice", "-n", "10", "unshare", "-n", "sh", "-c", f"ip link set lo up && exec {command}"],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def result_of(proc: subprocess.CompletedProcess[str], path: Path) -> dict[str, Any]:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    data: dict[str, Any] = json.loads(path.read_text())
    return data
