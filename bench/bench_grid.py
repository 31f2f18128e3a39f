"""Grid concurrency: K=4 virtual phones against one engine vs K=1, beside the engine's own batching gain.

Serves the bf16 build once (vLLM CPU), runs the same small grid with 1 phone and with 4, and measures in the
same session what the engine alone gains from 4 concurrent chat requests over 1 (the grid's recorded prompts).
Target: grid speedup ≥ 85 % of the engine's gain (medians over alternating repeats). Refuses to run while
another vLLM server is up (--force).

    .venv/bin/python bench/bench_grid.py [--tasks wifi_on,airplane_mode_on] [--seeds 2] [--max-steps 5]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console

from agent_eval.agent.prompt import action_schema
from agent_eval.builds import load_builds, prepare, serve
from agent_eval.chat.client import ChatClient
from agent_eval.device.driver import Device
from agent_eval.grid import GridSpec, run_grid
from virtual_phone import start_fleet

REPO = Path(__file__).resolve().parent.parent
TARGET = 0.85


def busy() -> list[str]:
    found = subprocess.run(["pgrep", "-af", "vllm.entrypoints"], capture_output=True, text=True, check=False)
    return [line for line in found.stdout.splitlines() if line.strip()]


def endpoint_builds(path: Path, base_url: str, model: str, sampling: dict[str, Any]) -> Path:
    """The served engine as an endpoint build, so both grids talk to the same running server."""
    build = {
        "name": "bf16",
        "reference": True,
        "scheme": "bf16",
        "engine": "endpoint",
        "base_url": base_url,
        "model": model,
        "sampling": sampling,
    }
    path.write_text(yaml.safe_dump({"builds": [build]}))
    return path


def grid_rate(spec: GridSpec, run_dir: Path, devices: list[Device]) -> dict[str, float]:
    """Run the grid on `devices`; its episodes, steps and wall time from the records themselves."""
    quiet = Console(file=io.StringIO(), width=200)
    result = run_grid(spec, run_dir=run_dir, console=quiet, bars=False, devices=devices, score=False)
    result.raise_for_problems()
    records = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    start = min(_t(r["started_at"]) for r in records)
    end = max(_t(r["finished_at"]) for r in records)
    steps = sum(r["steps"] for r in records)
    split = {
        part: sum(r["latency"][part] for r in records) / steps
        for part in ("model_s", "observe_s", "act_s", "check_s")
    }
    return {
        "episodes": len(records),
        "steps": steps,
        "wall_s": end - start,
        "steps_per_s": steps / (end - start),
        "model_s": split["model_s"],
        "phone_s": split["observe_s"] + split["act_s"] + split["check_s"],
    }


def describe(k: int, rate: dict[str, float]) -> str:
    return (
        f"K={k}: {rate['episodes']:.0f} episodes, {rate['steps']:.0f} steps in {rate['wall_s']:.1f} s = "
        f"{rate['steps_per_s']:.3f} steps/s; per step: model {rate['model_s']:.2f} s, "
        f"phone {rate['phone_s']:.2f} s"
    )


def _t(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp).timestamp()


def prompts_of(run_dir: Path, count: int) -> list[list[dict[str, Any]]]:
    """`count` recorded prompts spread over the run (early and late steps, several tasks)."""
    rows = []
    for path in sorted((run_dir / "episodes").rglob("steps.jsonl")):
        rows += [json.loads(line)["prompt"] for line in path.read_text().splitlines()]
    stride = max(1, len(rows) // count)
    return rows[::stride][:count]


def engine_gain(client: ChatClient, prompts: list[list[dict[str, Any]]], rounds: int) -> dict[str, float]:
    """Requests/s and generated tok/s of the prompts sent one by one, then all at once, `rounds` times."""
    schema = action_schema()

    def ask(messages: list[dict[str, Any]], seed: int, out: list[int]) -> None:
        out.append(client.chat(messages, json_schema=schema, seed=seed).completion_tokens)

    one, many = [], []
    for r in range(rounds):
        tokens: list[int] = []
        started = time.perf_counter()
        for i, messages in enumerate(prompts):
            ask(messages, r * 100 + i, tokens)
        one.append(
            (len(prompts) / (time.perf_counter() - started), sum(tokens) / (time.perf_counter() - started))
        )
        tokens = []
        threads = [threading.Thread(target=ask, args=(m, r * 100 + i, tokens)) for i, m in enumerate(prompts)]
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
        many.append((len(prompts) / elapsed, sum(tokens) / elapsed))
    req_1 = statistics.mean(x for x, _ in one)
    req_k = statistics.mean(x for x, _ in many)
    return {
        "req_s_1": req_1,
        "req_s_k": req_k,
        "tok_s_1": statistics.mean(y for _, y in one),
        "tok_s_k": statistics.mean(y for _, y in many),
        # Each round's two halves run back to back, so their ratio is the least disturbed by other load.
        "gain": statistics.median(
            k_rate / one_rate for (one_rate, _), (k_rate, _) in zip(one, many, strict=True)
        ),
    }


def engine_line(k: int, g: dict[str, float]) -> str:
    return (
        f"  engine alone: 1 at a time {g['req_s_1']:.3f} req/s, {g['tok_s_1']:.1f} tok/s; "
        f"{k} at once {g['req_s_k']:.3f} req/s, {g['tok_s_k']:.1f} tok/s → gain {g['gain']:.2f}×"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", default="wifi_on,airplane_mode_on,bluetooth_on,location_off")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--max-steps", type=int, default=5)
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3, help="engine-only rounds per measurement")
    ap.add_argument("--repeats", type=int, default=2, help="K=1 / K=4 pairs of grid runs")
    ap.add_argument("--phone-port", type=int, default=5950)
    ap.add_argument("--engine-port", type=int, default=8250)
    ap.add_argument("--force", action="store_true", help="run even if another vLLM server is up")
    ap.add_argument("--out", type=Path, help="also write the numbers here as JSON")
    args = ap.parse_args()
    others = busy()
    if others and not args.force:
        print("another vLLM server is running; the numbers would be meaningless. Wait, or pass --force:")
        print("\n".join("  " + line for line in others))
        return 1

    builds = load_builds()
    bf16 = builds.get("bf16")
    prepare(builds, only=["bf16"], say=lambda line: print(f"  prepare: {line}"))
    k = args.devices
    with tempfile.TemporaryDirectory(prefix="bench-grid-") as tmp_name:
        tmp = Path(tmp_name)
        t0 = time.perf_counter()
        with serve(bf16, tmp / "engine", port=args.engine_port) as served:
            print(f"bf16 served at {served.endpoint.base_url} in {time.perf_counter() - t0:.0f} s")
            file = endpoint_builds(
                tmp / "builds.yaml",
                served.endpoint.base_url,
                served.endpoint.model,
                bf16.sampling.model_dump(),
            )
            spec = GridSpec(
                tasks=args.tasks.split(","),
                builds_file=str(file),
                seeds=args.seeds,
                adaptive={"enabled": False},
                max_steps=args.max_steps,
                devices=k,
            )
            with (
                start_fleet(count=k, base_port=args.phone_port) as fleet,
                ChatClient(served.endpoint) as client,
            ):
                devices = [Device(s) for s in fleet.serials]
                # K=1, engine, K=4, engine, again: alternating so the other load on the machine falls on both.
                singles, multis, gains = [], [], []
                for r in range(args.repeats):
                    singles.append(grid_rate(spec, tmp / f"k1-{r}", devices[:1]))
                    print(describe(1, singles[-1]))
                    prompts = prompts_of(tmp / "k1-0", k)
                    gains.append(engine_gain(client, prompts, args.rounds))
                    print(engine_line(k, gains[-1]))
                    multis.append(grid_rate(spec, tmp / f"k{k}-{r}", devices))
                    print(describe(k, multis[-1]))
                    gains.append(engine_gain(client, prompts, args.rounds))
                    print(engine_line(k, gains[-1]))
    gain = statistics.median(g["gain"] for g in gains)
    speedups = [m["steps_per_s"] / s["steps_per_s"] for s, m in zip(singles, multis, strict=True)]
    speedup = statistics.median(speedups)
    print(
        f"grid speedup K={k} vs K=1 (steps/s): {speedup:.2f}× "
        f"(each repeat: {', '.join(f'{x:.2f}×' for x in speedups)})"
    )
    print(f"engine batching gain, {k} concurrent requests vs 1: {gain:.2f}× (median of {len(gains)})")
    print(
        "the grid overlaps phone time with model time, so its speedup can exceed the engine's own gain "
        "when the phones take a large share of a step"
    )
    share = speedup / gain
    verdict = "meets" if share >= TARGET else "misses"
    print(f"grid speedup / engine gain = {share * 100:.0f} % ({verdict} the {TARGET * 100:.0f} % target)")
    print(f"machine load average while it ran: {os.getloadavg()[0]:.1f} (2 cores)")
    if args.out:
        numbers = {"k1": singles, f"k{k}": multis, "engine": gains}
        numbers |= {"speedup": speedup, "engine_gain": gain, "share": share}
        args.out.write_text(json.dumps(numbers, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
