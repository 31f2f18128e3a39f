"""Benchmark: training throughput of `tune train`'s optimiser step under each arithmetic setting (and LoRA's
lowest layer).

Loads one LoRA model per setting of (attention, bf16 autocast, the base's dtype) and runs each batch of a
collected dataset (length-grouped as training groups them) through every setting in turn, so that a busy or
drifting host slows all settings alike. Prints training tokens per second (non-padding tokens, as `tune
train` counts them) and the mean loss over the timed steps, which shows the settings learn alike.

    .venv/bin/python bench/bench_train.py runs/tune/data [--steps 30] [--warmup 3] [--settings 3,4]
        [--lora-from-layer 0,10,15]

With several `--lora-from-layer` starts, each setting is timed with LoRA on the decoder layers from each
start up: the backward pass stops at the lowest adapted layer.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent_eval.tune.batches import collate, encode, make_batches, padding_id
from agent_eval.tune.dataset import read_dataset
from agent_eval.tune.train import TrainConfig, answer_loss, load_base

Attention = Literal["eager", "sdpa"]
BaseDtype = Literal["bfloat16", "float32"]
SETTINGS: list[tuple[Attention, bool, BaseDtype]] = [
    ("sdpa", False, "bfloat16"),
    ("eager", False, "bfloat16"),
    ("sdpa", True, "bfloat16"),
    ("eager", True, "bfloat16"),  # the shipped recipe
    ("eager", False, "float32"),  # every product in float32: no bf16 arithmetic for a CPU that lacks it
    ("sdpa", False, "float32"),
]


@dataclass
class Trainee:
    """One setting's model and optimiser, and what its timed steps took."""

    attention: Attention
    autocast: bool
    base_dtype: BaseDtype
    from_layer: int
    model: Any
    optimizer: Any
    tokens: int = 0
    seconds: float = 0.0
    losses: list[float] = field(default_factory=list)

    def step(self, batch: dict[str, Any], timed: bool) -> None:
        started = time.perf_counter()
        loss, _ = answer_loss(self.model, batch, bf16_autocast=self.autocast)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        if timed:
            self.seconds += time.perf_counter() - started
            self.tokens += int(batch["attention_mask"].sum())
            self.losses.append(float(loss.detach()))

    def line(self) -> str:
        lora = "bf16 autocast" if self.autocast else "float32 LoRA"
        layers = f"LoRA from layer {self.from_layer:2d}" if self.from_layer else "LoRA on every layer"
        return (
            f"{self.attention:5s} {lora:13s} {self.base_dtype:8s} base, {layers}: "
            f"{self.tokens / self.seconds:6.0f} tok/s "
            f"({self.tokens} tokens), mean loss {statistics.mean(self.losses):.4f}"
        )


def trainee(
    base: Path, attention: Attention, autocast: bool, dtype: BaseDtype, from_layer: int
) -> tuple[Trainee, Any]:
    import torch

    cfg = TrainConfig(
        attention=attention, bf16_autocast=autocast, base_dtype=dtype, lora_from_layer=from_layer
    )
    model, tokenizer = load_base(base, cfg)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.0)
    model.train()
    return Trainee(attention, autocast, dtype, from_layer, model, optimizer), tokenizer


def main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("data", type=Path, help="a collected dataset directory (runs/tune/data)")
    ap.add_argument("--base", type=Path, default=Path("models/smollm2-135m-instruct/bf16"))
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--settings",
        default=",".join(str(i) for i in range(len(SETTINGS))),
        help="which SETTINGS to time, by index (e.g. 3,4: the shipped recipe against float32 throughout)",
    )
    ap.add_argument(
        "--lora-from-layer",
        default="0",
        help="LoRA starts at each of these decoder layers (e.g. 0,10,15), each with every chosen setting",
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    chosen = [SETTINGS[int(i)] for i in args.settings.split(",")]
    starts = [int(k) for k in args.lora_from_layer.split(",")]
    loaded = [trainee(args.base, *setting, start) for setting in chosen for start in starts]
    tokenizer = loaded[0][1]
    examples, _ = read_dataset(args.data)
    items = [encode(ex, tokenizer) for ex in examples]
    defaults = TrainConfig()  # batches as `tune train` makes them
    batches = make_batches(items, token_budget=defaults.token_budget, max_batch=defaults.max_batch, seed=0)
    pad = padding_id(tokenizer)
    for n, indices in enumerate(batches[: args.warmup + args.steps]):
        batch = collate([items[i] for i in indices], pad)
        for each, _ in loaded:  # every setting on the same batch, one after the other: drift hits all alike
            each.step(batch, timed=n >= args.warmup)
        print(f"step {n + 1} of {args.warmup + args.steps} done", file=sys.stderr, flush=True)
    print(f"{args.steps} steps each after {args.warmup} warm-up steps, {args.threads} threads")
    for each, _ in loaded:
        print(each.line())


if __name__ == "__main__":
    main()
