"""Joining the Ray cluster a grid names, and checking it has what the grid asks for before anything runs.

Ray is the optional extra `[cluster]`; everything here fails with a ClusterError that says what is missing.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from typing import Any

from agent_eval.builds import Build
from agent_eval.errors import ClusterError

PHONE = "phone"  # the custom resource a node declares per phone it can run
CONNECT_TIMEOUT_S = 5.0
_HOUSEKEEPING = {"memory", "object_store_memory"}  # every node has them; they only clutter a message


def ray_module() -> Any:
    try:
        import ray
    except ImportError:
        raise ClusterError(
            "running on a cluster needs Ray: pip install -e '.[cluster]' (scripts/setup.sh does)"
        ) from None
    return ray


def _check_reachable(address: str) -> None:
    """A plain TCP connect first: Ray itself retries an unreachable address for a long time."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"cluster address {address!r} is not host:port, ray://host:port or auto")
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as e:
        raise ClusterError(
            f"no Ray cluster answers at {address} ({e.strerror or e}); start its head with "
            f"`ray start --head` there, or fix `cluster:` / --cluster"
        ) from None


def connect(address: str) -> None:
    """Join the cluster at `address` (`auto`: the one this host belongs to) as the grid's driver."""
    ray = ray_module()
    _check_reachable(address)
    if ray.is_initialized():
        return
    try:
        ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ClusterError(
            f"cannot join the Ray cluster at {address}: {first}; start one with `ray start --head` "
            f"(or give its address) and rerun"
        ) from None


def disconnect() -> None:
    ray = ray_module()
    if ray.is_initialized():
        ray.shutdown()


def nodes() -> list[dict[str, Any]]:
    """The cluster's live nodes: {ip, id, resources}."""
    ray = ray_module()
    return [
        {"ip": n["NodeManagerAddress"], "id": n["NodeID"], "resources": dict(n.get("Resources", {}))}
        for n in ray.nodes()
        if n.get("Alive")
    ]


def _describe(found: Sequence[Mapping[str, Any]]) -> str:
    parts = []
    for n in found:
        shown = {k: v for k, v in n["resources"].items() if k not in _HOUSEKEEPING and ":" not in k}
        res = ", ".join(f"{k}: {v:g}" for k, v in sorted(shown.items()))
        parts.append(f"{n['ip']} ({n['id'][:8]}) has {{{res}}}")
    return "; ".join(parts) or "no live node"


def phone_slots(found: Sequence[Mapping[str, Any]]) -> int:
    return int(sum(n["resources"].get(PHONE, 0) for n in found))


def check_phones(found: Sequence[Mapping[str, Any]]) -> int:
    """How many phones the cluster's nodes declare; ClusterError when none does."""
    slots = phone_slots(found)
    if slots < 1:
        raise ClusterError(
            f"no node of the cluster declares a `{PHONE}` resource, so there is nowhere to run phones "
            f"({_describe(found)}); start phone hosts with `ray start --resources='{{\"{PHONE}\": 4}}'`"
        )
    return slots


def engine_options(build: Build) -> dict[str, Any]:
    """The actor options that place `build`'s engine: its `resources:` (CPU apart), else anywhere."""
    wanted = dict(build.resources or {})
    cpus = wanted.pop("CPU", 0.0)
    return {"num_cpus": cpus, "resources": wanted}


def check_engines(builds: Sequence[Build], found: Sequence[Mapping[str, Any]]) -> None:
    """ClusterError naming each served build whose `resources:` no single node has."""
    missing = []
    for build in builds:
        if not build.kind.starts_server or not build.resources:
            continue
        if not any(all(n["resources"].get(k, 0) >= v for k, v in build.resources.items()) for n in found):
            asked = ", ".join(f"{k}: {v:g}" for k, v in build.resources.items())
            missing.append(f"build {build.name!r} asks for {{{asked}}}")
    if missing:
        raise ClusterError(
            f"{'; '.join(missing)}, and no node of the cluster has that ({_describe(found)}); "
            "declare it on an engine host (`ray start --resources=...`) or change the build's `resources:`"
        )
