"""Grids on a Ray cluster: scheduling overhead per episode (Ray vs local), throughput of 4 phone actors vs 1.

Runs itself inside a private network namespace (`unshare -n`, loopback only), starts a two-node local Ray
cluster (head + worker, 4 `phone` each) and plays airplane_mode_on episodes against a scripted endpoint.

- Overhead: the head's wall time of each attempt minus the episode's own time (its record's started_at →
  finished_at, measured where it was played). Locally that is the loop's own cost; through Ray it adds the
  actor call, shipping the record and step files back and writing them. Target ≤ 50 ms per episode.
- Throughput: the endpoint answers after a fixed delay; the same cells on 1 phone actor and on 4.
  Target ≥ 3.5× (the scheduler is not the bottleneck).

    .venv/bin/python bench/bench_cluster.py [--episodes 16] [--delay 2.0]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the scripted endpoint and the goal-playing agent are test helpers

from _goal_agents import GoalAgent  # noqa: E402

from agent_eval.agent.llm import LLMPolicy  # noqa: E402
from agent_eval.chat.client import ChatClient  # noqa: E402
from agent_eval.chat.endpoint import Endpoint  # noqa: E402
from agent_eval.cluster.phones import cluster_phones  # noqa: E402
from agent_eval.device.driver import Device  # noqa: E402
from agent_eval.records import EpisodeRecord  # noqa: E402
from agent_eval.rundir import RunStore  # noqa: E402
from agent_eval.runner.loop import Attempt, BuildAgent, Cell, LocalSeat, Seat, run_cells  # noqa: E402
from agent_eval.task import load_task  # noqa: E402
from virtual_phone import start_fleet  # noqa: E402

MARKER = "AGENT_EVAL_BENCH_IN_NAMESPACE"


class Timed:
    """A seat that notes, per attempt, the head's wall time and the episode's own time."""

    def __init__(self, seat: Seat) -> None:
        self.seat = seat
        self.overheads: list[float] = []

    @property
    def serial(self) -> str:
        return self.seat.serial

    def play(self, cell: Cell, agent: BuildAgent, attempt: Attempt) -> EpisodeRecord:
        t0 = time.perf_counter()
        record = self.seat.play(cell, agent, attempt)
        wall = time.perf_counter() - t0
        self.overheads.append(wall - (record.finished_at - record.started_at).total_seconds())
        return record

    def still_online(self) -> bool:
        return self.seat.still_online()


def cells(count: int) -> list[Cell]:
    task = load_task(REPO / "tasks" / "airplane_mode_on.yaml")
    return [Cell("good", task, seed) for seed in range(count)]


def play(seats: list[Any], agent: BuildAgent, count: int, root: Path, name: str) -> float:
    """Wall seconds to play `count` cells on `seats` into a fresh run directory."""
    store = RunStore(root / name)
    store.run_dir.mkdir(parents=True)
    t0 = time.perf_counter()
    summary = run_cells(cells(count), seats, {"good": agent}, store)
    wall = time.perf_counter() - t0
    assert summary.complete and sum(summary.outcomes.values()) == count, summary
    return wall


def overhead(agent: BuildAgent, count: int, root: Path) -> tuple[list[float], list[float]]:
    with start_fleet(count=1, base_port=5800) as fleet:
        local = Timed(LocalSeat(Device(fleet.serials[0])))
        play([local], agent, count, root, "local")
    with cluster_phones(1, None, 5810, print) as seats:
        remote = Timed(seats[0])
        play([remote], agent, count, root, "ray")
    return local.overheads, remote.overheads


def throughput(agent: BuildAgent, count: int, root: Path) -> dict[int, float]:
    rates = {}
    for actors in (1, 4):
        with cluster_phones(actors, None, 5820 + 10 * actors, print) as seats:
            wall = play(list(seats), agent, count, root, f"actors-{actors}")
        rates[actors] = count / wall
        print(f"{actors} phone actor(s): {count} episodes in {wall:.1f} s = {rates[actors]:.3f} episodes/s")
    return rates


def ms(values: list[float]) -> str:
    return f"median {1000 * statistics.median(values):.1f} ms, mean {1000 * statistics.mean(values):.1f} ms"


def bench(args: argparse.Namespace) -> int:
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "resources": {"phone": 4}})
    cluster.add_node(num_cpus=1, resources={"phone": 4})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="WARNING", log_to_driver=False)
    server = GoalAgent(model="good").start()
    try:
        endpoint = Endpoint(base_url=server.url, model="good")
        client = ChatClient(endpoint)
        policy = LLMPolicy(client)
        agent = BuildAgent("good", lambda instance: policy, None, endpoint)
        with tempfile.TemporaryDirectory(prefix="bench-cluster-") as tmp:
            local, remote = overhead(agent, args.episodes, Path(tmp))
            print(f"overhead per episode, local: {ms(local)}")
            print(f"overhead per episode, Ray:   {ms(remote)}")
            extra = statistics.median(remote) - statistics.median(local)
            print(f"Ray adds {1000 * extra:.1f} ms per episode (target ≤ 50 ms)")
            server.delay_s = args.delay
            rates = throughput(agent, args.episodes, Path(tmp))
            gain = rates[4] / rates[1]
            print(f"4 actors vs 1: {gain:.2f}× (target ≥ 3.5×), endpoint delay {args.delay:g} s per answer")
    finally:
        server.stop()
        ray.shutdown()
        cluster.shutdown()
    return 0


def main() -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--delay", type=float, default=2.0, help="the endpoint's seconds per answer")
    args = parser.parse_args()
    if os.environ.get(MARKER) != "1":
        # Ray only inside a network namespace of our own: 127.0.0.1 is all there is, nothing leaves.
        me = f"{sys.executable} {Path(__file__).resolve()} {' '.join(sys.argv[1:])}"
        inner = f"ip link set lo up && exec {me}"
        env = {**os.environ, MARKER: "1", "RAY_USAGE_STATS_ENABLED": "0"}
        return subprocess.run(["unshare", "-n", "sh", "-c", inner], env=env, check=False).returncode
    code = bench(args)
    from cluster_scenarios import stop_adb_server

    stop_adb_server()
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
