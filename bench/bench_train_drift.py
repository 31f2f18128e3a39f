"""Benchmark: does `tune train`'s rate hold over a long run? Runs the shipped recipe's optimiser steps on a
collected dataset's batches (one epoch's order, as `tune train` makes it) for some minutes in one process and
prints, every chunk of steps, the chunk's training tokens per second, the process's resident memory and how
many distinct batch shapes it has met.

    .venv/bin/python bench/bench_train_drift.py runs/tune/data [--minutes 6] [--chunk 40]
        [--width-multiple 1] [--lora-from-layer 0]

Run it under another allocator by preloading it (e.g. `LD_PRELOAD=<libjemalloc.so.2>`); the first line says
which allocator the process has mapped.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from agent_eval.builds.serving.memory import status_kib
from agent_eval.tune.batches import collate, encode, make_batches, padding_id
from agent_eval.tune.dataset import read_dataset
from agent_eval.tune.train import TrainConfig, TrainState, _optimizer_step, load_base


def allocator() -> str:
    maps = Path("/proc/self/maps").read_text()
    for name in ("jemalloc", "tcmalloc"):
        if name in maps:
            return name
    return "glibc malloc"


def main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("data", type=Path, help="a collected dataset directory (runs/tune/data)")
    ap.add_argument("--base", type=Path, default=Path("models/smollm2-135m-instruct/bf16"))
    ap.add_argument("--minutes", type=float, default=6.0)
    ap.add_argument("--chunk", type=int, default=40, help="steps per printed line")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--width-multiple", type=int, default=1, help="pad each batch's width to a multiple")
    ap.add_argument("--lora-from-layer", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = TrainConfig(threads=args.threads, lora_from_layer=args.lora_from_layer)
    model, tokenizer = load_base(args.base, cfg)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.0)
    model.train()
    examples, _ = read_dataset(args.data)
    items = [encode(ex, tokenizer) for ex in examples]
    pad = padding_id(tokenizer)
    print(f"{allocator()}, width multiple {args.width_multiple}, {args.threads} threads", flush=True)
    shapes: set[tuple[int, ...]] = set()
    state = TrainState(hardness=[None] * len(items))  # `tune train`'s step records each example's hardness
    begun, tokens, seconds, epoch = time.perf_counter(), 0, 0.0, 0
    deadline = begun + 60 * args.minutes
    while time.perf_counter() < deadline:
        batches = make_batches(items, token_budget=cfg.token_budget, max_batch=cfg.max_batch, seed=epoch)
        for indices in batches:
            batch = collate([items[i] for i in indices], pad, width_multiple=args.width_multiple)
            shapes.add(tuple(batch["input_ids"].shape))
            started = time.perf_counter()
            _optimizer_step(model, optimizer, params, batch, 1e-4, indices, state, cfg.bf16_autocast)
            seconds += time.perf_counter() - started
            tokens += int(batch["attention_mask"].sum())
            state.step += 1
            if state.step % args.chunk == 0:
                minute = (time.perf_counter() - begun) / 60
                resident = status_kib(os.getpid(), "VmRSS") / 1024
                print(
                    f"{minute:5.1f} min  step {state.step:5d}  {tokens / seconds:6.0f} tok/s  "
                    f"{resident:7.0f} MiB resident  {len(shapes):4d} shapes",
                    flush=True,
                )
                tokens, seconds = 0, 0.0
            if time.perf_counter() >= deadline:
                break
        epoch += 1


if __name__ == "__main__":
    main()
