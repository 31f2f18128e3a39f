"""The real engine on a Ray cluster: the bf16 build's vLLM server as an actor on the worker node, phones on
the head, against the same grid run locally (one vLLM server at a time), inside a private network namespace.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _cluster import in_namespace, needs_namespace, result_of
from _engines import prepared_default_builds

pytestmark = [pytest.mark.engine, pytest.mark.slow, needs_namespace]

SCENARIOS = Path(__file__).resolve().parents[1] / "cluster_scenarios.py"
SAME = ("outcome", "reached", "success", "said", "said_at_step", "steps", "invalid_actions", "goal_timeline")


@pytest.mark.timeout(1800)  # two vLLM starts; a concurrent `builds prepare` holds the models lock a while
def test_the_bf16_engine_as_a_cluster_actor_plays_every_episode_as_the_local_engine(tmp_path: Path) -> None:
    _, ready = prepared_default_builds()
    assert "bf16" in ready
    ran = in_namespace(SCENARIOS, "real_engine", str(tmp_path), timeout=1700)
    seen = result_of(ran, tmp_path / "result.json")
    cluster, local = seen["cluster"], seen["local"]
    assert cluster["problems"] == [] and local["problems"] == [], cluster["text"][-3000:]
    mine = {(e["build"], e["task_id"], e["seed"]): e for e in cluster["episodes"]}
    theirs = {(e["build"], e["task_id"], e["seed"]): e for e in local["episodes"]}
    assert len(cluster["episodes"]) == len(mine) == 2 and mine.keys() == theirs.keys()
    for key, episode in mine.items():
        assert {f: episode[f] for f in SAME} == {f: theirs[key][f] for f in SAME}, key
    # The same prompts got the same answers from the engine wherever it ran.
    assert cluster["step_files"] == local["step_files"]
    # The engine ran on the worker (the only node with engine_host), with the launcher's pinning and memory
    # sampling, and its record and log came back to the head's run directory.
    answers = r"bf16 answers at http://127\.0\.0\.1:\d+/v1 \(node [\d.]+/(\w+)\)"
    engine_node = re.search(answers, cluster["text"])
    assert engine_node is not None, cluster["text"][:2000]
    phone_nodes = {e["device"].rsplit("/", 1)[1] for e in cluster["episodes"]}
    assert phone_nodes and engine_node.group(1) not in phone_nodes  # engine on the worker, phones on the head
    engine = cluster["engine"]
    assert engine["pinning"]["cpus"] == "0-1" and engine["peak_rss_mb"] > 100 and engine["startup_s"] > 0
    assert engine["requests"] >= sum(e["steps"] for e in mine.values()) and engine["restarts"] == 0
    assert "agent-eval: starting bf16" in cluster["engine_log"]
