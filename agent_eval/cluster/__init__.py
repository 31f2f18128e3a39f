"""Grids on a Ray cluster: phones and engines as actors on the cluster's nodes, the grid itself on the head.

`Cluster` is another way to get a grid's phones and engines (see docs/cluster.md); the plan, pairing, order,
top-up and the run store stay on the head, which alone writes the run directory.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from agent_eval.builds import Build, Serving
from agent_eval.chat.client import Usage, add_usage
from agent_eval.chat.endpoint import Endpoint
from agent_eval.cluster.connect import check_engines, check_phones, connect, disconnect, nodes
from agent_eval.cluster.engines import ClusterEngines
from agent_eval.cluster.phones import RemoteSeat, Say, cluster_phones
from agent_eval.records import BuildManifest

__all__ = ["Cluster", "ClusterEngines", "RemoteSeat"]


class Cluster:
    """A joined Ray cluster, checked to have phones and every served build's resources."""

    def __init__(self, address: str, builds: Sequence[Build]) -> None:
        connect(address)
        try:
            found = nodes()
            check_phones(found)
            check_engines(builds, found)
        except BaseException:
            disconnect()
            raise
        self.address = address
        self.seats: list[RemoteSeat] = []

    @contextlib.contextmanager
    def phones(
        self, count: int, serials: list[str] | None, base_port: int, say: Say
    ) -> Iterator[list[RemoteSeat]]:
        with cluster_phones(count, serials, base_port, say) as seats:
            self.seats = list(seats)
            yield seats

    def usage_of(self, endpoint: Endpoint) -> Usage:
        total = Usage()
        for seat in self.seats:
            total = add_usage(total, seat.usage(endpoint))
        return total

    def engines(
        self, run_dir: Path, manifests: Sequence[BuildManifest], say: Say, serving: Serving
    ) -> ClusterEngines:
        return ClusterEngines(run_dir, {m.name: m for m in manifests}, self.usage_of, say, serving)

    def close(self) -> None:
        disconnect()
