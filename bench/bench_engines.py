"""Per build: engine startup, an agent step's model time alone and with N phones asking at once, decode and
prefill tok/s, peak and settled memory.

Usage: .venv/bin/python bench/bench_engines.py [builds/default.yaml] [--build NAME ...] [--repeats 3]
    [--phones 1 --phones 4] [--llamacpp-python] [--no-prompt-cache] [--rounds 2] [--no-speeds]
The step is one action request as the agent sends it: a recorded agent prompt (the `compact-noted` prompts
shipped with the adapter, which the tuned builds are sent), the action schema as structured output, the
build's own sampling and a seed per request. With N phones, N threads each send `repeats` steps back to back
(each prompt made unique after the system prompt, so no engine answers from a cached whole prompt); the step
time is the median request's.
Across engines: builds/ladder.yaml --build bf16 --build w8a8 --build gguf-q8_0 --build gguf-q4_k_m.
A llama.cpp build is served by llama-server with a slot per phone (the most phones asked for); with
--no-prompt-cache also with its prompt cache off; with --llamacpp-python also by llama-cpp-python's server
(one request at a time: the server episodes were played on before llama-server, and the one teacher forcing
still uses). --rounds measures every build that many times, interleaved.
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
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_eval.agent.prompt import action_schema
from agent_eval.builds import Build, Serving, load_builds, prepare, serve, unavailable_reason
from agent_eval.chat.client import ChatClient
from agent_eval.chat.endpoint import Endpoint

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


PROMPTS = REPO / "adapters" / "smollm2-135m-agent" / "calibration.jsonl"  # compact-noted: the tuned builds'


def agent_prompts(limit: int, path: Path = PROMPTS) -> list[list[dict[str, str]]]:
    """Recorded agent prompts (system + screen), their answers dropped."""
    lines = path.read_text().splitlines()
    chats = [json.loads(line)["messages"] for line in lines if line.strip()]
    return [[m for m in chat if m["role"] != "assistant"] for chat in chats][:limit]


def _unique(messages: list[dict[str, str]], mark: str) -> list[dict[str, str]]:
    """The prompt with a mark at the start of its first user message: the system prompt stays shared (as
    between an agent's steps), the rest differs from every other request's."""
    out, marked = [], False
    for m in messages:
        if m["role"] == "user" and not marked:
            m, marked = {**m, "content": f"[{mark}] {m['content']}"}, True
        out.append(m)
    return out


def step_s(endpoint: Endpoint, repeats: int, phones: int = 1) -> tuple[float | None, int]:
    """Median seconds of one agent step's request (prefill of the screen + the constrained action), with
    `phones` threads sending `repeats` steps each at the same time."""
    prompts = agent_prompts(64)
    times: list[float] = []
    tokens: list[int] = []
    lock = threading.Lock()
    failures: list[BaseException] = []

    def phone(client: ChatClient, p: int) -> None:
        try:
            for i in range(repeats):
                n = p * repeats + i
                messages = _unique(prompts[n % len(prompts)], f"phone {p} step {i} of {phones}")
                r = client.chat(messages, json_schema=action_schema(), seed=n + 1)
                with lock:
                    times.append(r.latency_s)
                    tokens.append(r.prompt_tokens)
        except BaseException as e:  # re-raised below, in the caller's thread
            failures.append(e)

    with ChatClient(endpoint, retries=0) as client:
        client.chat(prompts[0], json_schema=action_schema(), seed=0)  # warm-up (grammar compiled once)
        threads = [threading.Thread(target=phone, args=(client, p)) for p in range(phones)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if failures:
        raise failures[0]
    return round(statistics.median(times), 3), int(statistics.median(tokens))


NO_PROMPT_CACHE = "llama-server, no prompt cache"


def servings(
    build: Build, phones: list[int], llamacpp_python: bool, no_prompt_cache: bool
) -> list[tuple[str, Serving]]:
    """(server label, how to serve it) for each server a build is measured on."""
    slots = Serving(slots=max(phones))
    if build.engine != "llama.cpp":
        return [(build.engine, slots)]
    both = [("llama-server", slots)]
    if no_prompt_cache:
        both.append((NO_PROMPT_CACHE, slots))
    if llamacpp_python:
        # The kind serves a build that will teacher-force on llama-cpp-python's server.
        both.append(("llama-cpp-python", Serving(slots=1, teacher_forcing=True)))
    return both


def measure(
    build: Build, label: str, serving: Serving, run_dir: Path, phones: list[int], args: argparse.Namespace
) -> dict[str, Any]:
    """One server of one build: its step time at each phone count, its speeds and memory."""
    with serve(build, run_dir, serving=serving) as served:
        endpoint = served.endpoint
        if label == NO_PROMPT_CACHE:  # every prompt prefilled whole, not from the start its slot kept
            endpoint = dataclasses.replace(
                endpoint, extra_body=(*endpoint.extra_body, ("cache_prompt", False))
            )
        steps = {n: step_s(endpoint, args.repeats, n) for n in phones}
        decode = prefill = None
        prompt_tokens = 0
        if not args.no_speeds:
            decode = decode_tok_s(endpoint, args.decode_tokens, args.repeats)
            prefill, prompt_tokens = prefill_tok_s(endpoint, args.prefill_words, args.repeats)
        record = served.write_record()
    step = {n: s for n, (s, _) in steps.items()}
    alone, most = step.get(1), step[phones[-1]]
    return {
        "build": build.name,
        "scheme": build.scheme,
        "engine": build.engine,
        "server": label,
        "slots": serving.slots,
        "mode": served.manifest.mode,
        "weights_hash": served.manifest.weights_hash,
        "startup_s": record.startup_s,
        "step_s": step,
        "slowdown": round(most / alone, 2) if alone and most else None,
        # Steps answered per second with n phones asking (each phone waits for its answer before the next).
        "steps_per_s": {n: round(n / s, 2) for n, s in step.items() if s},
        "step_prompt_tokens": steps[phones[0]][1],
        "decode_tok_s": decode,
        "prefill_tok_s": prefill,
        "prefill_prompt_tokens": prompt_tokens,
        "peak_rss_mb": record.peak_rss_mb,
        "settled_rss_mb": record.settled_rss_mb,
        "load_after": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=None)
    parser.add_argument("--build", action="append", default=None, help="Only this build (repeatable).")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--phones",
        type=int,
        action="append",
        default=None,
        help="Phones asking at once (repeatable; 1 and 4).",
    )
    parser.add_argument(
        "--llamacpp-python",
        action="store_true",
        help="Also serve llama.cpp builds on llama-cpp-python's server.",
    )
    parser.add_argument("--no-speeds", action="store_true", help="Steps only: no decode and prefill tok/s.")
    parser.add_argument(
        "--no-prompt-cache",
        action="store_true",
        help="Also measure llama-server with its prompt cache off (no slot reuses its last prompt's start).",
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="Measure every build this many times, interleaved."
    )
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

    phones = sorted(set(args.phones or [1, 4]))
    rows: list[dict[str, Any]] = []
    for round_no in range(1, args.rounds + 1):  # rounds interleave the builds: drift hits them alike
        for name in names:
            build = builds.get(name)
            reason = unavailable_reason(build)
            if reason:
                if round_no == 1:
                    print(f"{name}: skipped ({reason})", flush=True)
                    rows.append({"build": name, "skipped": reason})
                continue
            for label, serving in servings(build, phones, args.llamacpp_python, args.no_prompt_cache):
                print(f"{name}: starting {label} (round {round_no}) …", flush=True)
                rows.append(
                    measure(build, label, serving, run_dir / label, phones, args) | {"round": round_no}
                )
                print(f"{name} on {label}: {rows[-1]['step_s']}", flush=True)

    header: tuple[str, ...] = ("build", "server", "round", "start s")
    header += tuple(f"step s, {n} phone{'s' if n > 1 else ''}" for n in phones)
    header += (f"× alone at {phones[-1]}", f"steps/s at {phones[-1]}")
    header += ("decode tok/s", "prefill tok/s", "peak MB", "settled MB", "load")
    print("\n" + " | ".join(header))
    print(" | ".join("---" for _ in header))
    for row in rows:
        if "skipped" in row:
            print(f"{row['build']} | skipped: {row['skipped'][:70]}")
            continue
        cells = [row[k] for k in ("build", "server", "round", "startup_s")]
        cells += [row["step_s"].get(n) for n in phones] + [
            row["slowdown"],
            row["steps_per_s"].get(phones[-1]),
        ]
        cells += [
            row[k] for k in ("decode_tok_s", "prefill_tok_s", "peak_rss_mb", "settled_rss_mb", "load_after")
        ]
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
