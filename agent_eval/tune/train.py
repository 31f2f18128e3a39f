"""`tune train`: LoRA (peft) on every linear layer of the base model (or of its upper decoder layers only),
bf16 on the CPU, fixed seeds.

Mixed precision: the LoRA weights and the optimiser stay float32 (peft's default), but the forward pass runs
under bf16 autocast with peft's per-layer cast of the input to float32 turned off, and attention is the eager
implementation. On ~200-token prompts on 2 cores this trains ~1.5x faster than float32 LoRA arithmetic under
SDPA (bench/bench_train.py); the first losses agree to about 0.01.

The length of a run is a token budget: `epochs` × the tokens of the first epoch, capped at `max_tokens` when
that is set (so a larger dataset does not make training longer than a user planned), and, with `max_minutes`,
a time budget: the run ends at whichever comes first, and the learning rate's schedule follows whichever is
nearer its end, so a run cut by the clock on a slow host still ends with a decayed rate. Which examples each
epoch holds is focus.py's choice (all of them, or, with `focus_loss`, mostly those still answered wrong).
Checkpoints (adapter, optimiser, step, loss curve, each example's last hardness, the epoch's batches) go to
`<out>/checkpoint/` every few steps; a stopped run continues from the last one, on the dataset it started on
only (its hash is noted in `<out>/dataset_hash`). The finished adapter is written to `<out>/adapter/`.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent_eval.chat.template import TurnFormat, turn_format
from agent_eval.errors import ConfigError
from agent_eval.tune.batches import IGNORE, Encoded, collate, encode, make_batches, padding_id
from agent_eval.tune.dataset import Example
from agent_eval.tune.focus import epoch_examples

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
DATASET_MARK = "dataset_hash"  # in <out>/: the dataset the run in <out>/checkpoint/ trains on


def settle_dataset(out_dir: Path, dataset_hash: str) -> None:
    """Refuses to continue a checkpoint on another dataset (its batches are indices into the old one);
    notes the dataset a run starts on. A checkpoint made before the note existed is continued as it was."""
    mark, started = out_dir / DATASET_MARK, (out_dir / "checkpoint" / "state.json").is_file()
    if started and mark.is_file():
        before = mark.read_text(encoding="utf-8").strip()
        if before != dataset_hash:
            raise ConfigError(
                f"{out_dir / 'checkpoint'} trains on dataset {before[:12]}, but the dataset is now "
                f"{dataset_hash[:12]}: delete that checkpoint to train afresh on the new one, or collect the "
                "old one again to continue"
            )
    elif not started:
        out_dir.mkdir(parents=True, exist_ok=True)
        mark.write_text(dataset_hash + "\n", encoding="utf-8")


@dataclass
class TrainConfig:
    rank: int = 8
    alpha: int = 16
    learning_rate: float = 1e-3
    warmup_steps: int = 10
    epochs: float = 1.0
    max_tokens: int | None = None  # cap on the run's training tokens, whatever `epochs` gives
    max_minutes: float | None = None  # cap on the run's training time (optimiser steps), whatever the tokens
    token_budget: int = 2048  # padded tokens per batch
    max_batch: int = 8
    max_length: int = 1024  # longer examples are left out (counted)
    seed: int = 0
    checkpoint_every: int = 20
    threads: int = 1  # on a busy machine one thread beats two fighting for the cores
    task_floor: int = 0  # tasks with fewer distinct examples are repeated up to about this many per epoch
    focus_loss: float | None = None  # from epoch 2: keep examples whose worst answer-token loss ≥ this ...
    easy_share: float = 0.25  # ... and this share of the others
    attention: Literal["eager", "sdpa"] = "eager"  # eager is faster on short prompts on the CPU
    bf16_autocast: bool = True  # LoRA arithmetic in bf16, float32 master weights (False: float32 arithmetic)
    # The frozen base's weights: bf16 (half the memory), or float32, whose arithmetic a CPU without native
    # bf16 (AVX2-only) may do faster; with float32, bf16_autocast False makes every product float32.
    base_dtype: Literal["bfloat16", "float32"] = "bfloat16"
    # LoRA on the decoder layers from this index up (0: every layer). The backward pass stops at the lowest
    # adapted layer, so a higher start trains faster per token (bench/bench_train.py --lora-from-layer).
    lora_from_layer: int = 0
    # Each batch's width padded up to a multiple of this (1: as long as its longest example). Fewer distinct
    # shapes: a tight-width run's rate fell within the process (docs/tuning.md), a padded one held.
    width_multiple: int = 1


@dataclass
class TrainState:
    step: int = 0
    total_steps: int = 0
    losses: list[float] = field(default_factory=list)  # mean answer-token loss per optimiser step
    tokens: int = 0
    seconds: float = 0.0
    skipped_long: int = 0
    budget_tokens: int = 0
    epoch: int = 0
    epoch_batches: list[list[int]] = field(default_factory=list)  # this epoch's batches (example indices)
    epoch_position: int = 0  # batches of this epoch done
    epoch_sizes: list[int] = field(default_factory=list)  # examples (with repeats) per epoch
    hardness: list[float | None] = field(default_factory=list)  # per example: worst answer-token loss


def learning_rate(cfg: TrainConfig, step: int, progress: float) -> float:
    """Linear warm-up over the first steps, then cosine down to a tenth over the token budget's progress."""
    if step < cfg.warmup_steps:
        return cfg.learning_rate * (step + 1) / cfg.warmup_steps
    return cfg.learning_rate * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))


def base_tokenizer(base_dir: Path, examples: list[Example]) -> tuple[Any, TurnFormat]:
    """The base's tokenizer and how its chat template closes an answer, checked on the first example's
    prompt: a base whose template cannot carry the agent's prompt is refused before any weight is read."""
    from transformers import AutoTokenizer

    if not (base_dir / "config.json").is_file():
        raise ConfigError(f"no base checkpoint at {base_dir}: run `agent-eval builds prepare` first")
    if not examples:
        raise ConfigError("no training examples: collect demonstrations first (`agent-eval tune collect`)")
    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    return tokenizer, turn_format(tokenizer, examples[0].messages, base_dir)


def load_base(base_dir: Path, cfg: TrainConfig) -> tuple[Any, Any]:
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not (base_dir / "config.json").is_file():
        raise ConfigError(f"no base checkpoint at {base_dir}: run `agent-eval builds prepare` first")
    torch.manual_seed(cfg.seed)
    random.seed(cfg.seed)
    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    model = AutoModelForCausalLM.from_pretrained(
        base_dir, dtype=getattr(torch, cfg.base_dtype), attn_implementation=cfg.attention
    )
    peft_model = get_peft_model(model, lora_config(cfg, model.config.num_hidden_layers))
    if cfg.bf16_autocast:
        _keep_inputs_in_bf16(peft_model)
    return peft_model, tokenizer


def lora_config(cfg: TrainConfig, layers: int) -> Any:
    """peft's LoRA on every linear layer of the decoder layers `cfg.lora_from_layer` .. `layers` - 1."""
    from peft import LoraConfig

    if not 0 <= cfg.lora_from_layer < layers:
        raise ConfigError(
            f"LoRA from layer {cfg.lora_from_layer}: the base has decoder layers 0-{layers - 1}; choose a "
            f"start in that range (0: every layer)"
        )
    chosen = list(range(cfg.lora_from_layer, layers)) if cfg.lora_from_layer else None
    return LoraConfig(
        r=cfg.rank,
        lora_alpha=cfg.alpha,
        lora_dropout=0.0,
        target_modules=list(LORA_TARGETS),
        bias="none",
        layers_to_transform=chosen,
    )


def _keep_inputs_in_bf16(model: Any) -> None:
    """Turns off peft's cast of each LoRA layer's input to the adapter's float32 (autocast does the
    arithmetic in bf16 instead; the float32 weights are what the optimiser updates)."""
    from peft.tuners.lora import LoraLayer

    for module in model.modules():
        if isinstance(module, LoraLayer):
            module.cast_input_dtype_enabled = False


def _epoch(items: list[Encoded], tasks: list[str], state: TrainState, cfg: TrainConfig) -> list[list[int]]:
    """The batches of epoch `state.epoch` (indices into `items`), length-grouped and shuffled."""
    chosen = epoch_examples(
        tasks,
        state.hardness,
        epoch=state.epoch,
        task_floor=cfg.task_floor,
        focus_loss=cfg.focus_loss,
        easy_share=cfg.easy_share,
        seed=cfg.seed,
    )
    batches = make_batches(
        [items[i] for i in chosen],
        token_budget=cfg.token_budget,
        max_batch=cfg.max_batch,
        seed=cfg.seed + state.epoch,
    )
    return [[chosen[j] for j in batch] for batch in batches]


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
    tokenizer, turn = base_tokenizer(base_dir, examples)
    model, _ = load_base(base_dir, cfg)
    encoded = [encode(ex, tokenizer, turn) for ex in examples]
    kept = [i for i, e in enumerate(encoded) if len(e.input_ids) <= cfg.max_length]
    items, tasks = [encoded[i] for i in kept], [examples[i].task_id for i in kept]
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.learning_rate, weight_decay=0.0)
    ckpt = out_dir / "checkpoint"
    state = _resume(model, optimizer, ckpt)
    state.skipped_long = len(encoded) - len(items)
    if len(state.hardness) != len(items):
        state.hardness = [None] * len(items)
    state.budget_tokens = _budget_tokens(items, tasks, state, cfg)
    pad = padding_id(tokenizer)
    model.train()
    bar = _progress_bar(state.budget_tokens, state.tokens, progress)
    while not finished(state, cfg):
        if state.epoch_position >= len(state.epoch_batches):
            state.epoch += 1 if state.epoch_batches else 0
            state.epoch_batches, state.epoch_position = _epoch(items, tasks, state, cfg), 0
            state.epoch_sizes.append(sum(len(b) for b in state.epoch_batches))
        started = time.perf_counter()
        indices = state.epoch_batches[state.epoch_position]
        batch = batch_of(items, indices, pad, cfg)
        lr = learning_rate(cfg, state.step, budget_used(state, cfg))
        value = _optimizer_step(model, optimizer, params, batch, lr, indices, state, cfg.bf16_autocast)
        tokens = int(batch["attention_mask"].sum())
        elapsed = time.perf_counter() - started
        state.epoch_position += 1
        state.step, state.tokens, state.seconds = (
            state.step + 1,
            state.tokens + tokens,
            state.seconds + elapsed,
        )
        state.losses.append(round(value, 5))
        bar.update(tokens)
        bar.set_postfix(loss=f"{value:.4f}", tok_s=f"{tokens / elapsed:.0f}", epoch=state.epoch + 1)
        if state.step % cfg.checkpoint_every == 0 or finished(state, cfg):
            state.total_steps = state.step
            _save_checkpoint(model, optimizer, state, ckpt)
            state.seconds += time.perf_counter() - started - elapsed  # the run's time counts its saves
    bar.close()
    state.total_steps = state.step
    model.save_pretrained(out_dir / "adapter")
    (out_dir / "train_state.json").write_text(json.dumps(asdict(state)), encoding="utf-8")
    return state


def batch_of(items: list[Encoded], indices: list[int], pad: int, cfg: TrainConfig) -> dict[str, Any]:
    """The padded tensors of one batch, its width a multiple of `cfg.width_multiple`."""
    return collate([items[i] for i in indices], pad, width_multiple=cfg.width_multiple)


def budget_used(state: TrainState, cfg: TrainConfig) -> float:
    """How far the run is through its budget, 0 to 1: of its tokens, or of its time when that is nearer."""
    by_tokens = state.tokens / state.budget_tokens if state.budget_tokens else 1.0
    if cfg.max_minutes is None:
        return by_tokens
    return max(by_tokens, state.seconds / (60 * cfg.max_minutes))


def finished(state: TrainState, cfg: TrainConfig) -> bool:
    return budget_used(state, cfg) >= 1.0


def _budget_tokens(items: list[Encoded], tasks: list[str], state: TrainState, cfg: TrainConfig) -> int:
    """`cfg.epochs` times the first epoch's tokens, at most `cfg.max_tokens`. Recomputed on every start, so
    that a finished run continues when asked for more epochs or tokens."""
    first = epoch_examples(
        tasks, state.hardness, epoch=0, task_floor=cfg.task_floor, focus_loss=None, easy_share=1.0, seed=0
    )
    by_epochs = round(cfg.epochs * sum(len(items[i].input_ids) for i in first))
    return by_epochs if cfg.max_tokens is None else min(by_epochs, cfg.max_tokens)


def _optimizer_step(
    model: Any,
    optimizer: Any,
    params: list[Any],
    batch: dict[str, Any],
    lr: float,
    indices: list[int],
    state: TrainState,
    bf16_autocast: bool,
) -> float:
    """One update on `batch` at learning rate `lr`; records each example's hardness; returns the loss."""
    import torch

    for group in optimizer.param_groups:
        group["lr"] = lr
    loss, worst = answer_loss(model, batch, bf16_autocast=bf16_autocast)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    for i, w in zip(indices, worst, strict=True):
        state.hardness[i] = round(w, 4)
    return float(loss.detach())


def answer_loss(model: Any, batch: dict[str, Any], *, bf16_autocast: bool) -> tuple[Any, list[float]]:
    """Mean cross-entropy over the answer tokens (the vocabulary projection run only where needed), and per
    example its worst answer-token loss (how wrong its hardest decision still is). The model runs under bf16
    autocast when asked; the loss is taken in float32, on logits soft-capped where the model's config says."""
    import torch

    causal_lm = model.get_base_model()
    targets = batch["labels"][:, 1:]
    where = targets != IGNORE
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16_autocast):
        hidden = causal_lm.model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
        ).last_hidden_state
        logits = causal_lm.lm_head(hidden[:, :-1][where])
    logits = logits.float()
    if cap := getattr(causal_lm.config, "final_logit_softcapping", None):  # as the model's own forward does
        logits = torch.tanh(logits / cap) * cap
    per_token = torch.nn.functional.cross_entropy(logits, targets[where], reduction="none")
    return per_token.mean(), worst_per_row(per_token.detach(), where)


def worst_per_row(per_token: Any, where: Any) -> list[float]:
    """The largest of each row's selected values (`where` marks them, row-major as `per_token` lists them)."""
    import torch

    rows = torch.nonzero(where)[:, 0]
    worst = torch.full((where.shape[0],), float("-inf"))
    worst = worst.scatter_reduce(0, rows, per_token.float(), reduce="amax")
    return [float(x) if x != float("-inf") else 0.0 for x in worst]


def _progress_bar(total: int, initial: int, enabled: bool) -> Any:
    from tqdm import tqdm  # type: ignore[import-untyped]

    return tqdm(total=total, initial=initial, disable=not enabled, file=sys.stderr, unit="tok")
