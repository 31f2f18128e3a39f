"""Per build: engine startup, an agent step's model time, decode and prefill tok/s, peak and settled memory.

Usage: .venv/bin/python bench/bench_engines.py [builds/default.yaml] [--build NAME ...] [--repeats 3]
The step is one action request as the agent sends it: a recorded agent prompt (tests/data's demonstration
prompts), the action schema as structured output, the build's own sampling and a seed per request.
Across engines: builds/ladder.yaml --build bf16 --build w8a8 --build gguf-q8_0 --build gguf-q4_k_m.
Serves each build in turn through `serve()` (one engine at a time), prints the table and writes JSON to
runs/bench-engines-<time>/ beside the engine logs. First checks the machine is quiet and says so.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_eval.agent.prompt import action_schema
from agent_eval.builds import load_builds, prepare, serve, unavailable_reason
from agent_eval.builds.chat_client import ChatClient
from agent_eval.builds.endpoint import Endpoint

REPO = Path(__file__).resolve().parents[1]
WORDS = [
    "settings",
    "network",
    "display",
    "battery",
    "sound",
    "storage",
    "privacy",
    "location",
    "security",
    "accounts",
    "system",
    "apps",
]


def machine_state(wait_s: float) -> dict[str, Any]:
    """Load average against the core count; waits up to `wait_s` for it to drop below half a core."""
    cores = os.cpu_count() or 1
    end = time.monotonic() + wait_s
    load = os.getloadavg()[0]
    while load > 0.5 and time.monotonic() < end:
        time.sleep(10)
        load = os.getloadavg()[0]
    quiet = load <= 0.5
    return {"load_1min": round(load, 2), "cores": cores, "quiet": quiet}


def _prompt(tokens_approx: int, salt: int) -> list[dict[str, str]]:
    # A fresh random prefix each time, so vLLM's prefix cache cannot skip the prefill being measured.
    rng = random.Random(salt)
    body = " ".join(rng.choice(WORDS) for _ in range(tokens_approx))
    return [{"role": "user", "content": f"{salt}: {body}\nSummarise the list above in one word."}]


def decode_tok_s(endpoint: Endpoint, tokens: int, repeats: int) -> float | None:
    # ignore_eos makes every answer exactly `tokens` long on vLLM; llama.cpp ignores it and may stop early.
    ep = dataclasses.replace(
        endpoint, max_tokens=tokens, extra_body=(*endpoint.extra_body, ("ignore_eos", True))
    )
    rates = []
    with ChatClient(ep, retries=0) as client:
        client.chat(_prompt(16, -1))  # warm-up
        for i in range(repeats):
            r = client.chat(_prompt(16, 1000 + i))
            if r.first_token_s is not None and r.completion_tokens > 1:
                rates.append((r.completion_tokens - 1) / (r.latency_s - r.first_token_s))
    return round(statistics.median(rates), 1) if rates else None


def prefill_tok_s(endpoint: Endpoint, words: int, repeats: int) -> tuple[float | None, int]:
    ep = dataclasses.replace(endpoint, max_tokens=1)
    rates, sizes = [], []
    with ChatClient(ep, retries=0) as client:
        for i in range(repeats):
            r = client.chat(_prompt(words, 2000 + i))
            if r.first_token_s:
                rates.append(r.prompt_tokens / r.first_token_s)
                sizes.append(r.prompt_tokens)
    return (round(statistics.median(rates), 1) if rates else None), (sizes[0] if sizes else 0)


def agent_prompts(limit: int) -> list[list[dict[str, str]]]:
    """Recorded agent prompts (system + screen), their answers dropped."""
    lines = (REPO / "tests" / "data" / "ladder_calibration.jsonl").read_text().splitlines()
    chats = [json.loads(line)["messages"] for line in lines if line.strip()]
    return [[m for m in chat if m["role"] != "assistant"] for chat in chats][:limit]


def step_s(endpoint: Endpoint, repeats: int) -> tuple[float | None, int]:
    """Median seconds of one agent step's request (prefill of the screen + the constrained action)."""
    times, tokens = [], []
    with ChatClient(endpoint, retries=0) as client:
        prompts = agent_prompts(max(2, repeats))
        client.chat(prompts[0], json_schema=action_schema(), seed=0)  # warm-up (grammar compiled once)
        for i, messages in enumerate(prompts):
            r = client.chat(messages, json_schema=action_schema(), seed=i + 1)
            times.append(r.latency_s)
            tokens.append(r.prompt_tokens)
    return round(statistics.median(times), 3), int(statistics.median(tokens))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=None)
    parser.add_argument("--build", action="append", default=None, help="Only this build (repeatable).")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--decode-tokens", type=int, default=128)
    parser.add_argument("--prefill-words", type=int, default=900, help="~1 token per word.")
    parser.add_argument(
        "--wait-quiet", type=float, default=0.0, help="Wait up to this many s for a quiet machine."
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    builds = load_builds(args.file)
    state = machine_state(args.wait_quiet)
    verdict = "quiet" if state["quiet"] else "NOT quiet: other work shares the cores, expect slower numbers"
    print(f"machine: load {state['load_1min']} on {state['cores']} cores ({verdict})", flush=True)
    run_dir = args.out or REPO / "runs" / f"bench-engines-{datetime.now(UTC):%Y%m%d-%H%M%S}"
    names = args.build or [b.name for b in builds.builds if b.engine != "endpoint"]
    prepare(builds, only=names, say=lambda line: print(f"[prepare] {line}", flush=True))

    rows: list[dict[str, Any]] = []
    for name in names:
        build = builds.get(name)
        reason = unavailable_reason(build)
        if reason:
            print(f"{name}: skipped ({reason})", flush=True)
            rows.append({"build": name, "skipped": reason})
            continue
        print(f"{name}: starting {build.engine} …", flush=True)
        with serve(build, run_dir) as served:
            step, step_prompt_tokens = step_s(served.endpoint, args.repeats)
            decode = decode_tok_s(served.endpoint, args.decode_tokens, args.repeats)
            prefill, prompt_tokens = prefill_tok_s(served.endpoint, args.prefill_words, args.repeats)
            record = served.write_record()
        rows.append(
            {
                "build": name,
                "scheme": build.scheme,
                "engine": build.engine,
                "mode": served.manifest.mode,
                "weights_hash": served.manifest.weights_hash,
                "startup_s": record.startup_s,
                "step_s": step,
                "step_prompt_tokens": step_prompt_tokens,
                "decode_tok_s": decode,
                "prefill_tok_s": prefill,
                "prefill_prompt_tokens": prompt_tokens,
                "peak_rss_mb": record.peak_rss_mb,
                "settled_rss_mb": record.settled_rss_mb,
                "load_after": round(os.getloadavg()[0], 2),
            }
        )
        print(f"{name}: done", flush=True)

    header: tuple[str, ...] = ("build", "engine", "start s", "step s", "decode tok/s", "prefill tok/s")
    header += ("peak MB", "settled MB", "load")
    print("\n" + " | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in rows:
        if "skipped" in row:
            print(f"{row['build']} | skipped: {row['skipped'][:70]}")
            continue
        cells = [row[k] for k in ("build", "engine", "startup_s", "step_s", "decode_tok_s", "prefill_tok_s")]
        cells += [row["peak_rss_mb"], row["settled_rss_mb"], row["load_after"]]
        print(" | ".join(str(c) for c in cells))
    result = {
        "machine": state,
        "settings": {k: v for k, v in vars(args).items() if k not in {"file", "out"}},
        "builds": rows,
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    out = run_dir / "bench_engines.json"
    out.write_text(json.dumps(result, indent=2, default=str) + "\n")
    print(f"\nwritten: {out}")


if __name__ == "__main__":
    sys.exit(main())
