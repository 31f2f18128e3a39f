"""Grids on a Ray cluster (agent_eval/cluster), each test inside a network namespace of its own.

A helper script (cluster_scenarios.py) runs under `unshare -n` with only the loopback up, starts a local
two-node Ray cluster (head + one worker, both declaring `phone`), runs grids against scripted endpoints and
writes what it saw; these tests check it. See docs/cluster.md.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from _cluster import in_namespace, needs_namespace, result_of

pytestmark = [pytest.mark.slow, needs_namespace]

SCENARIOS = Path(__file__).resolve().parents[1] / "cluster_scenarios.py"
# What must be the same, episode by episode, wherever an episode ran.
SAME = ("outcome", "reached", "success", "said", "said_at_step", "steps", "invalid_actions", "goal_timeline")


def scenario(name: str, tmp_path: Path) -> dict[str, Any]:
    return result_of(in_namespace(SCENARIOS, name, str(tmp_path)), tmp_path / "result.json")


def by_cell(episodes: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, Any]]:
    scored = [e for e in episodes if e["outcome"] != "infra_error"]
    keys = Counter((e["build"], e["task_id"], e["seed"]) for e in scored)
    assert all(n == 1 for n in keys.values()), [k for k, n in keys.items() if n > 1]
    return {(e["build"], e["task_id"], e["seed"]): e for e in scored}


def test_a_grid_on_a_two_node_cluster_plays_every_episode_as_the_local_grid(tmp_path: Path) -> None:
    seen = scenario("scripted", tmp_path)
    cluster, local = seen["cluster"], seen["local"]
    assert cluster["problems"] == [] and local["problems"] == [], cluster["text"][-2000:]
    assert cluster["targets"] == local["targets"]  # the same top-up decisions
    mine, theirs = by_cell(cluster["episodes"]), by_cell(local["episodes"])
    # Every build still undecided after 3 seeds grows to 5: 3 builds x 2 tasks x 5 seeds.
    assert mine.keys() == theirs.keys() and len(mine) == sum(cluster["targets"].values()) == 30
    for key, episode in mine.items():
        assert {f: episode[f] for f in SAME} == {f: theirs[key][f] for f in SAME}, key
    # The step files came back to the head: same files, same prompts, same answers as the local run.
    assert cluster["step_files"] == local["step_files"]
    assert all(len(v["files"]) == 2 * v_steps + 1 for v, v_steps in _with_steps(cluster, mine))
    # Both nodes played (four phone actors spread over two nodes), each phone named with its node.
    nodes = {e["device"].rsplit("/", 1)[1] for e in cluster["episodes"]}
    assert len(nodes) == 2
    assert "phones up:" in cluster["text"] and "joining the Ray cluster" in cluster["text"]


def _with_steps(seen: dict[str, Any], cells: dict[tuple[str, str, int], dict[str, Any]]) -> list[Any]:
    return [(seen["step_files"][f"{b}/{t}/{s}"], e["steps"]) for (b, t, s), e in cells.items()]


def test_a_worker_node_killed_mid_grid_leaves_every_cell_played_once_on_the_other(tmp_path: Path) -> None:
    seen = scenario("kill_worker", tmp_path)
    worker = seen["worker_node"]
    assert seen["killed_after"], "the worker never played an episode"
    cells = by_cell(seen["episodes"])  # no cell scored twice
    assert len(cells) == sum(seen["targets"].values()) == 30  # none lost
    # Whatever started after the kill ran on the head's phones (the worker's last episodes died with it).
    killed_at = datetime.fromisoformat(seen["killed_at"][0])
    late = [e for e in cells.values() if datetime.fromisoformat(e["started_at"]) > killed_at]
    assert late and all(worker not in e["device"] for e in late)
    lost = [e for e in seen["episodes"] if e["outcome"] == "infra_error"]
    assert lost and all(worker in e["device"] and "died" in e["error"] for e in lost)
    for e in lost:  # the attempt the dead node was playing was played again, elsewhere
        again = cells[(e["build"], e["task_id"], e["seed"])]
        assert worker not in again["device"] and again["attempt"] > e["attempt"]
    # The loss is in the grid's summary, naming each phone that lost an attempt (the worker's only). A
    # worker phone that finished its episode and was never asked again (the kill came at the grid's tail,
    # the requeued cell went to a head phone) lost nothing and cannot be known dead: it is not named.
    assert len(seen["problems"]) == 1 and seen["problems"][0].startswith("device(s) lost: ")
    named = seen["problems"][0].removeprefix("device(s) lost: ").split(", ")
    assert len(named) == len(set(named)) and set(named) == {e["device"] for e in lost}, seen["problems"]
    assert all(worker in n for n in named)


def test_bad_cluster_input_is_named_before_the_run_directory_is_touched(tmp_path: Path) -> None:
    seen = scenario("bad_input", tmp_path)
    absent = seen.pop("absent_phone")  # found only once phone actors start on their nodes
    assert absent["problems"] is None and "episodes.jsonl" not in absent["run_dir_files"]
    assert (
        "no phone could start on the cluster: node 127.0.0.1 declares `phone` but none of the phones "
        in (absent["text"])
    )
    assert "['emulator-5998'] is free in its adb server (connected there: none)" in absent["text"]
    for case in seen.values():
        assert case["problems"] is None and not case["run_dir_exists"], case
    assert seen["unreachable"]["text"].startswith("ClusterError: no Ray cluster answers at 127.0.0.1:")
    no_phones = seen["no_phones"]["text"]
    assert "no node of the cluster declares a `phone` resource" in no_phones
    assert "ray start --resources" in no_phones
    greedy = seen["no_resources"]["text"]
    assert "build 'big' asks for {CPU: 64, engine_host: 1}, and no node of the cluster has that" in greedy
    assert "phone: 2" in greedy  # what the nodes do have
