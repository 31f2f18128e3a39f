"""Benchmark: training throughput of `tune train`'s optimiser step under each arithmetic setting.

Loads one LoRA model per setting of (attention, bf16 autocast) and runs each batch of a collected dataset
(length-grouped as training groups them) through every setting in turn, so that a busy or drifting host
slows all settings alike. Prints training tokens per second (non-padding tokens, as `tune train` counts
them) and the mean loss over the timed steps, which shows the settings learn alike.

    .venv/bin/python bench/bench_train.py runs/tune/data [--steps 30] [--warmup 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent_eval.tune.batches import collate, encode, make_batches, padding_id
from agent_eval.tune.dataset import read_dataset
from agent_eval.tune.train import TrainConfig, answer_loss, load_base

Attention = Literal["eager", "sdpa"]
SETTINGS: list[tuple[Attention, bool]] = [("sdpa", False), ("eager", False), ("sdpa", True), ("eager", True)]


@dataclass
class Trainee:
    """One setting's model and optimiser, and what its timed steps took."""

    attention: Attention
    autocast: bool
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
        return (
            f"{self.attention:5s} {lora:13s}: {self.tokens / self.seconds:6.0f} tok/s "
            f"({self.tokens} tokens), mean loss {statistics.mean(self.losses):.4f}"
        )


def trainee(base: Path, attention: Attention, autocast: bool) -> tuple[Trainee, Any]:
    import torch

    model, tokenizer = load_base(base, TrainConfig(attention=attention, bf16_autocast=autocast))
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.0)
    model.train()
    return Trainee(attention, autocast, model, optimizer), tokenizer


def main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("data", type=Path, help="a collected dataset directory (runs/tune/data)")
    ap.add_argument("--base", type=Path, default=Path("models/smollm2-135m-instruct/bf16"))
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    loaded = [trainee(args.base, attention, autocast) for attention, autocast in SETTINGS]
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
    print(f"{args.steps} steps each after {args.warmup} warm-up steps, {args.threads} threads")
    for each, _ in loaded:
        print(each.line())


if __name__ == "__main__":
    main()
