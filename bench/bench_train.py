"""Benchmark: training throughput of `tune train`'s optimiser step under each arithmetic setting.

Runs the same batches of a collected dataset (length-grouped as training groups them) through LoRA steps
with each setting of (attention, bf16 autocast) and prints training tokens per second (non-padding tokens,
as `tune train` counts them) and the mean loss over the timed steps, which shows the settings learn alike.

    .venv/bin/python bench/bench_train.py runs/tune/data [--steps 40] [--warmup 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Literal

from agent_eval.tune.batches import collate, encode, make_batches
from agent_eval.tune.dataset import read_dataset
from agent_eval.tune.train import TrainConfig, answer_loss, load_base

Attention = Literal["eager", "sdpa"]
SETTINGS: list[tuple[Attention, bool]] = [("sdpa", False), ("eager", False), ("sdpa", True), ("eager", True)]


def measure(data: Path, base: Path, attention: Attention, autocast: bool, steps: int, warmup: int) -> str:
    import torch

    cfg = TrainConfig(threads=2, attention=attention, bf16_autocast=autocast)
    torch.set_num_threads(cfg.threads)
    model, tokenizer = load_base(base, cfg)
    examples, _ = read_dataset(data)
    items = [encode(ex, tokenizer) for ex in examples]
    batches = make_batches(items, token_budget=cfg.token_budget, max_batch=cfg.max_batch, seed=0)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.0)
    model.train()
    tokens, seconds, losses = 0, 0.0, []
    for n, indices in enumerate(batches[: warmup + steps]):
        batch = collate([items[i] for i in indices], pad)
        started = time.perf_counter()
        loss, _ = answer_loss(model, batch, bf16_autocast=autocast)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if n >= warmup:
            seconds += time.perf_counter() - started
            tokens += int(batch["attention_mask"].sum())
            losses.append(float(loss.detach()))
    lora = "bf16 autocast" if autocast else "float32 LoRA"
    return (
        f"{attention:5s} {lora:13s}: {tokens / seconds:6.0f} tok/s over {steps} steps "
        f"({tokens} tokens), mean loss {statistics.mean(losses):.4f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("data", type=Path, help="a collected dataset directory (runs/tune/data)")
    ap.add_argument("--base", type=Path, default=Path("models/smollm2-135m-instruct/bf16"))
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    args = ap.parse_args()
    for attention, autocast in SETTINGS:
        print(measure(args.data, args.base, attention, autocast, args.steps, args.warmup), flush=True)


if __name__ == "__main__":
    main()
