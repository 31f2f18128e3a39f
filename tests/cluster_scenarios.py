"""Helper of test_cluster.py, run inside a private network namespace: `python cluster_scenarios.py NAME OUT`.

Each scenario starts a local two-node Ray cluster (head + one worker), runs grids on it and writes what it
saw to OUT/result.json; the test asserts on that.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from _goal_agents import GoalAgent, builds_file, start_agents
from rich.console import Console
from scripted_endpoint import free_port

from agent_eval.errors import AgentEvalError
from agent_eval.grid import GridResult, load_grid, run_grid


def stop_adb_server() -> None:
    """The phones started an adb server in this namespace; it would outlive us (and keep the namespace)."""
    import adbutils

    subprocess.run([adbutils.adb_path(), "kill-server"], capture_output=True, timeout=30, check=False)


QUICK_HEALTH = {"health_check_period_ms": 500, "health_check_failure_threshold": 4}


def two_nodes(head_phones: int = 2, worker_phones: int = 2) -> Any:
    from ray.cluster_utils import Cluster

    head: dict[str, Any] = {"num_cpus": 1, "_system_config": QUICK_HEALTH}
    if head_phones:
        head["resources"] = {"phone": head_phones}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    worker = cluster.add_node(num_cpus=1, resources={"phone": worker_phones} if worker_phones else {})
    cluster.wait_for_nodes()
    return cluster, worker


def grid_file(out: Path, name: str, servers: dict[str, GoalAgent], **fields: Any) -> Path:
    data = {
        "tasks": ["wifi_on", "airplane_mode_on"],
        "builds_file": str(builds_file(out / "builds.yaml", servers)),
        "seeds": 3,
        "adaptive": {"enabled": True, "schedule": [5]},
        "devices": 2,
        "serving": "side-by-side",
        "run_dir": str(out / name),
        **fields,
    }
    path = out / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run(path: Path) -> tuple[GridResult | None, str]:
    console = Console(file=io.StringIO(), width=200, force_terminal=False, record=True)
    try:
        result = run_grid(load_grid(path), console=console, bars=False, html=False)
    except AgentEvalError as e:
        return None, f"{type(e).__name__}: {e}"
    return result, console.export_text()


def episodes(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "episodes.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _files(directory: Path) -> dict[str, Any]:
    """The episode's step files by name, and each step's prompt hash and answer (from steps.jsonl)."""
    lines = (directory / "steps.jsonl").read_text().splitlines()
    steps = [json.loads(line) for line in lines if line.strip()]
    return {
        "files": sorted(p.name for p in directory.iterdir()),
        "answers": [(st["prompt_hash"], st["raw_answer"]) for st in steps],
    }


def summary(result: GridResult | None, text: str, run_dir: Path) -> dict[str, Any]:
    steps = {
        f"{e['build']}/{e['task_id']}/{e['seed']}": _files(run_dir / e["episode_dir"])
        for e in episodes(run_dir)
        if e["outcome"] != "infra_error"
    }
    return {
        "problems": result.problems if result else None,
        "targets": {f"{b}/{t}": n for (b, t), n in result.targets.items()} if result else None,
        "episodes": episodes(run_dir),
        "step_files": steps,
        "text": text,
        "run_dir_exists": run_dir.exists(),
        "run_dir_files": sorted(p.name for p in run_dir.iterdir()) if run_dir.exists() else [],
    }


def scripted(out: Path) -> dict[str, Any]:
    """The same grid on a two-node cluster (4 phone actors) and locally (2 phones)."""
    servers = start_agents()
    cluster, _ = two_nodes()
    on_cluster = grid_file(out, "cluster", servers, cluster=cluster.address, devices=4, phone_base_port=5700)
    result, text = run(on_cluster)
    cluster.shutdown()
    here = grid_file(out, "local", servers, phone_base_port=5720)
    local, local_text = run(here)
    return {
        "cluster": summary(result, text, out / "cluster"),
        "local": summary(local, local_text, out / "local"),
    }


def kill_worker(out: Path) -> dict[str, Any]:
    """A grid whose worker node's raylet is SIGKILLed once an episode ran there."""
    servers = start_agents()
    for server in servers.values():
        server.delay_s = 0.3
    cluster, worker = two_nodes()
    path = grid_file(out, "killed", servers, cluster=cluster.address, devices=4, phone_base_port=5740)
    raylet = worker.all_processes["raylet"][0].process.pid
    worker_id = worker.node_id[:8]
    killed_after: list[int] = []
    killed_at: list[str] = []

    def killer() -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            done = episodes(out / "killed")
            if any(worker_id in e["device"] for e in done):
                killed_after.append(len(done))
                os.kill(raylet, signal.SIGKILL)
                killed_at.append(datetime.now(UTC).isoformat())
                return
            time.sleep(0.05)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    result, text = run(path)
    thread.join(timeout=5)
    cluster.shutdown()
    seen = summary(result, text, out / "killed")
    return {**seen, "killed_after": killed_after, "killed_at": killed_at, "worker_node": worker_id}


def bad_input(out: Path) -> dict[str, Any]:
    """An unreachable address, a build asking for resources no node has, nodes without phones."""
    servers = start_agents()
    seen: dict[str, Any] = {}
    nowhere = grid_file(out, "nowhere", servers, cluster=f"127.0.0.1:{free_port()}")
    seen["unreachable"] = summary(*run(nowhere), out / "nowhere")
    cluster, _ = two_nodes(head_phones=0, worker_phones=0)
    no_phones = grid_file(out, "no_phones", servers, cluster=cluster.address)
    seen["no_phones"] = summary(*run(no_phones), out / "no_phones")
    cluster.shutdown()
    cluster, _ = two_nodes()
    absent = grid_file(out, "absent", servers, cluster=cluster.address, devices=["emulator-5998"])
    seen["absent_phone"] = summary(*run(absent), out / "absent")
    file = out / "builds.yaml"
    greedy = grid_file(out, "greedy", servers, cluster=cluster.address)
    data = yaml.safe_load(file.read_text())
    data["builds"].append(
        {
            "name": "big",
            "scheme": "bf16",
            "engine": "vllm-cpu",
            "model_path": "smollm2-135m-instruct/bf16",
            "resources": {"engine_host": 1, "CPU": 64},
        }
    )
    grid = yaml.safe_load(greedy.read_text())
    grid["builds_file"] = str(out / "greedy-builds.yaml")
    grid["builds"] = ["good", "big"]
    (out / "greedy-builds.yaml").write_text(yaml.safe_dump(data))
    greedy.write_text(yaml.safe_dump(grid))
    seen["no_resources"] = summary(*run(greedy), out / "greedy")
    cluster.shutdown()
    return seen


def real_engine(out: Path) -> dict[str, Any]:
    """The bf16 build on vLLM: its engine an actor on the worker (engine_host), then the same grid locally."""
    from agent_eval.builds import load_builds

    # The prepared reference as bring-your-own weights: its recipe names other builds of the default file.
    bf16 = load_builds().get("bf16").model_dump(mode="json", exclude_none=True, exclude={"prepare"})
    (out / "builds.yaml").write_text(yaml.safe_dump({"builds": [{**bf16, "resources": {"engine_host": 1}}]}))
    base = {"tasks": ["airplane_mode_on"], "builds_file": str(out / "builds.yaml"), "seeds": 2}
    base |= {"adaptive": {"enabled": False}, "max_steps": 3, "devices": 1}
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "resources": {"phone": 1}, "_system_config": QUICK_HEALTH},
    )
    cluster.add_node(num_cpus=1, resources={"engine_host": 1})
    cluster.wait_for_nodes()
    seen: dict[str, Any] = {}
    runs = (
        ("cluster", {"cluster": cluster.address, "phone_base_port": 5760}),
        ("local", {"phone_base_port": 5780}),
    )
    for name, extra in runs:
        path = out / f"{name}.yaml"
        path.write_text(yaml.safe_dump({**base, **extra, "run_dir": str(out / name)}))
        if name == "local":
            cluster.shutdown()  # one vLLM server at a time
        seen[name] = summary(*run(path), out / name)
        engine = out / name / "engines" / "bf16.json"
        seen[name]["engine"] = json.loads(engine.read_text()) if engine.exists() else None
        log = out / name / "engines" / "bf16.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        seen[name]["engine_log"] = text[:500] + text[-3000:]
    return seen


SCENARIOS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "scripted": scripted,
    "kill_worker": kill_worker,
    "bad_input": bad_input,
    "real_engine": real_engine,
}

if __name__ == "__main__":
    name, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    try:
        found = SCENARIOS[name](out)
        (out / "result.json").write_text(json.dumps(found, default=str))
    finally:
        stop_adb_server()
    os._exit(0)  # scripted endpoints' threads and Ray's leftovers must not hold the namespace open
