"""`tune train`: LoRA (peft) on every linear layer of the base model, bf16 on the CPU, fixed seeds.

Checkpoints (adapter, optimiser, step, loss curve) go to `<out>/checkpoint/` every few steps; a stopped run
continues from the last one. The finished adapter is written to `<out>/adapter/`.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent_eval.errors import ConfigError
from agent_eval.tune.batches import IGNORE, Encoded, collate, encode, make_batches
from agent_eval.tune.dataset import Example

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class TrainConfig:
    rank: int = 8
    alpha: int = 16
    learning_rate: float = 1e-3
    warmup_steps: int = 10
    epochs: float = 1.0
    token_budget: int = 2048  # padded tokens per batch
    max_batch: int = 8
    max_length: int = 1024  # longer examples are left out (counted)
    seed: int = 0
    checkpoint_every: int = 20
    threads: int = 1  # on a busy machine one thread beats two fighting for the cores


@dataclass
class TrainState:
    step: int = 0
    total_steps: int = 0
    losses: list[float] = field(default_factory=list)  # mean answer-token loss per optimiser step
    tokens: int = 0
    seconds: float = 0.0
    skipped_long: int = 0


def learning_rate(cfg: TrainConfig, step: int, total: int) -> float:
    """Linear warm-up, then cosine down to a tenth."""
    if step < cfg.warmup_steps:
        return cfg.learning_rate * (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(total - cfg.warmup_steps, 1)
    return cfg.learning_rate * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))


def load_base(base_dir: Path, cfg: TrainConfig) -> tuple[Any, Any]:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not (base_dir / "config.json").is_file():
        raise ConfigError(f"no base checkpoint at {base_dir}: run `agent-eval builds prepare` first")
    torch.manual_seed(cfg.seed)
    random.seed(cfg.seed)
    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.bfloat16)
    lora = LoraConfig(
        r=cfg.rank, lora_alpha=cfg.alpha, lora_dropout=0.0, target_modules=list(LORA_TARGETS), bias="none"
    )
    return get_peft_model(model, lora), tokenizer


def _schedule(items: list[Encoded], cfg: TrainConfig) -> list[list[int]]:
    """All epochs' batches in order (a fractional last epoch takes the first part of its shuffle)."""
    batches: list[list[int]] = []
    whole = math.floor(cfg.epochs)
    for epoch in range(math.ceil(cfg.epochs)):
        epoch_batches = make_batches(
            items, token_budget=cfg.token_budget, max_batch=cfg.max_batch, seed=cfg.seed + epoch
        )
        if epoch >= whole:
            epoch_batches = epoch_batches[: round(len(epoch_batches) * (cfg.epochs - whole))]
        batches.extend(epoch_batches)
    return batches


def _save_checkpoint(model: Any, optimizer: Any, state: TrainState, ckpt: Path) -> None:
    import torch

    tmp = ckpt.with_name(ckpt.name + ".tmp")
    model.save_pretrained(tmp)
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    (tmp / "state.json").write_text(json.dumps(asdict(state)), encoding="utf-8")
    if ckpt.exists():
        old = ckpt.with_name(ckpt.name + ".old")
        ckpt.rename(old)
        tmp.rename(ckpt)
        _remove_tree(old)
    else:
        tmp.rename(ckpt)


def _remove_tree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def _resume(model: Any, optimizer: Any, ckpt: Path) -> TrainState:
    import torch
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    if not (ckpt / "state.json").is_file():
        return TrainState()
    set_peft_model_state_dict(model, load_file(str(ckpt / "adapter_model.safetensors")))
    optimizer.load_state_dict(torch.load(ckpt / "optimizer.pt"))
    return TrainState(**json.loads((ckpt / "state.json").read_text(encoding="utf-8")))


def train(
    examples: list[Example], base_dir: Path, out_dir: Path, cfg: TrainConfig, *, progress: bool = True
) -> TrainState:
    """Trains (or continues training) a LoRA adapter on `examples`; returns the final state."""
    import torch

    torch.set_num_threads(cfg.threads)
    model, tokenizer = load_base(base_dir, cfg)
    encoded = [encode(ex, tokenizer) for ex in examples]
    items = [e for e in encoded if len(e.input_ids) <= cfg.max_length]
    batches = _schedule(items, cfg)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=0.0)
    ckpt = out_dir / "checkpoint"
    state = _resume(model, optimizer, ckpt)
    state.total_steps, state.skipped_long = len(batches), len(encoded) - len(items)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model.train()
    bar = _progress_bar(len(batches), state.step, progress)
    for step in range(state.step, len(batches)):
        started = time.perf_counter()
        batch = collate([items[i] for i in batches[step]], pad)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(cfg, step, len(batches))
        loss = answer_loss(model, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        elapsed = time.perf_counter() - started
        tokens = int(batch["attention_mask"].sum())
        state.step, state.tokens, state.seconds = step + 1, state.tokens + tokens, state.seconds + elapsed
        state.losses.append(round(float(loss.detach()), 5))
        bar.update(1)
        bar.set_postfix(loss=f"{float(loss):.4f}", tok_s=f"{tokens / elapsed:.0f}")
        if state.step % cfg.checkpoint_every == 0 or state.step == len(batches):
            _save_checkpoint(model, optimizer, state, ckpt)
    bar.close()
    model.save_pretrained(out_dir / "adapter")
    (out_dir / "train_state.json").write_text(json.dumps(asdict(state)), encoding="utf-8")
    return state


def answer_loss(model: Any, batch: dict[str, Any]) -> Any:
    """Mean cross-entropy over the answer tokens, with the vocabulary projection run only where needed."""
    import torch

    causal_lm = model.get_base_model()
    hidden = causal_lm.model(
        input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
    ).last_hidden_state
    targets = batch["labels"][:, 1:]
    where = targets != IGNORE
    logits = causal_lm.lm_head(hidden[:, :-1][where]).float()
    return torch.nn.functional.cross_entropy(logits, targets[where])


def _progress_bar(total: int, initial: int, enabled: bool) -> Any:
    from tqdm import tqdm  # type: ignore[import-untyped]

    return tqdm(total=total, initial=initial, disable=not enabled, file=sys.stderr, unit="step")
