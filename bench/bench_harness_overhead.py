"""Harness overhead per agent step: prompt building, parsing, recording (all but the model and the device).

Plays wifi_on episodes on a virtual phone against an instant scripted endpoint, reads each step's latency
split from steps.jsonl, and compares the harness share with the step time of the default model. That step
time comes from --endpoint (a real served build, measured) or else from the prompt's token count and
the engine study's speeds for bf16 SmolLM2-135M on vLLM CPU (prefill ~250 tok/s, decode ~21 tok/s).
Target: harness ≤ 2 % of step time.

    .venv/bin/python bench/bench_harness_overhead.py [--episodes 6] [--endpoint URL --model NAME]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the scripted endpoint is a test helper

from scripted_endpoint import DONE, ScriptedEndpoint, tap  # noqa: E402

from agent_eval.agent.llm import LLMPolicy  # noqa: E402
from agent_eval.chat.client import ChatClient  # noqa: E402
from agent_eval.chat.endpoint import Endpoint  # noqa: E402
from agent_eval.device.driver import Device  # noqa: E402
from agent_eval.runner.episode import run_episode  # noqa: E402
from agent_eval.task import load_task  # noqa: E402
from virtual_phone import start_fleet  # noqa: E402

PREFILL_TOK_S = 252.0  # engine study: bf16 SmolLM2-135M, vLLM CPU eager, quiet machine
DECODE_TOK_S = 20.7
TOKENIZER = REPO / "models" / "smollm2-135m-instruct" / "bf16" / "tokenizer.json"
SCRIPT = [tap("Settings"), tap("Network & internet"), tap("Internet"), tap("Wi-Fi"), DONE]


def token_counter() -> tuple[Any, str]:
    try:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(TOKENIZER))
        return (lambda text: len(tok.encode(text).ids)), "SmolLM2 tokenizer"
    except Exception:  # the model is not prepared here: fall back to a rough estimate
        return (lambda text: max(1, round(len(text) / 3.6))), "estimate (chars / 3.6)"


def chatml_tokens(count: Any, messages: list[dict[str, Any]], answer: str) -> tuple[int, int]:
    prompt = sum(count(str(m["content"])) + 5 for m in messages) + 3  # ChatML markers per message
    return prompt, count(answer) + 1  # + end-of-turn


def measured_step_s(url: str, model: str, prompts: list[list[dict[str, Any]]]) -> list[float]:
    """Model time per step on a real endpoint, replaying the recorded prompts."""
    client = ChatClient(Endpoint(base_url=url, model=model))
    from agent_eval.agent.prompt import action_schema

    times = []
    for messages in prompts:
        times.append(client.chat(messages, json_schema=action_schema(), seed=0).latency_s)
    client.close()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--endpoint", help="a served build to time real model calls against")
    ap.add_argument("--model", default="bf16")
    ap.add_argument("--base-port", type=int, default=5890)
    args = ap.parse_args()

    task = load_task(REPO / "tasks" / "wifi_on.yaml")
    rows: list[dict[str, Any]] = []
    with (
        start_fleet(count=1, base_port=args.base_port) as fleet,
        ScriptedEndpoint(SCRIPT) as server,
        tempfile.TemporaryDirectory() as tmp,
    ):
        device = Device(fleet.serials[0])
        client = ChatClient(Endpoint(base_url=server.url, model="scripted"))
        policy = LLMPolicy(client)
        for seed in range(args.episodes):
            episode_dir = Path(tmp) / str(seed)
            episode_dir.mkdir()
            record = run_episode(
                device, task.instantiate(seed), policy, build="bench", run_id="bench", episode_dir=episode_dir
            )
            assert record.outcome.value == "success", record
            rows += [json.loads(line) for line in (episode_dir / "steps.jsonl").read_text().splitlines()]
        client.close()

    def ms(values: list[float]) -> str:
        return f"median {statistics.median(values) * 1000:7.2f} ms   p90 {_p90(values) * 1000:7.2f} ms"

    harness = [r["latency"]["harness_s"] for r in rows]
    device_s = [r["latency"]["observe_s"] + r["latency"]["act_s"] + r["latency"]["check_s"] for r in rows]
    http = [r["latency"]["model_s"] for r in rows]
    count, how = token_counter()
    tokens = [chatml_tokens(count, r["prompt"], r["raw_answer"]) for r in rows]
    model_est = [p / PREFILL_TOK_S + c / DECODE_TOK_S for p, c in tokens]

    print(f"{len(rows)} steps, {args.episodes} wifi_on episodes, virtual phone, instant scripted endpoint")
    print(f"  harness (prompt, parse, record)   {ms(harness)}")
    print(f"  device (observe + act + check)    {ms(device_s)}")
    print(f"  HTTP round trip, instant answer   {ms(http)}   (client overhead, inside model time)")
    print(f"  prompt tokens ({how}): median {statistics.median(p for p, _ in tokens):.0f}")
    if args.endpoint:
        model = measured_step_s(args.endpoint, args.model, [r["prompt"] for r in rows])
        source = f"measured on {args.endpoint}"
    else:
        model = model_est
        source = f"estimated: {PREFILL_TOK_S:g} tok/s prefill, {DECODE_TOK_S:g} tok/s decode (engine study)"
    print(f"  model time per step ({source})   {ms(model)}")
    step = [h + d + m for h, d, m in zip(harness, device_s, model, strict=True)]
    share = [h / s for h, s in zip(harness, step, strict=True)]
    print(f"  step time with the default model   {ms(step)}")
    print(
        f"harness share of step time: median {statistics.median(share) * 100:.2f} %, "
        f"p90 {_p90(share) * 100:.2f} %, overall {sum(harness) / sum(step) * 100:.2f} %  (target ≤ 2 %)"
    )


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"(bench took {time.perf_counter() - t0:.1f} s)")
