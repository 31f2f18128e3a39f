"""`tune train`'s arithmetic: LoRA weights stay float32 for the optimiser, while under bf16 autocast each LoRA
layer computes in bf16 (peft's cast of its input to float32 is off), and the loss agrees with float32 LoRA
arithmetic. Runs on a tiny random Llama, no weights needed. And a checkpoint continues only on the dataset it
started on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from agent_eval.errors import ConfigError
from agent_eval.tune.batches import IGNORE
from agent_eval.tune.train import (
    DATASET_MARK,
    LORA_TARGETS,
    _keep_inputs_in_bf16,
    answer_loss,
    settle_dataset,
)


def tiny_lora_model(attention: str) -> Any:
    import transformers
    from peft import LoraConfig, get_peft_model

    hf: Any = transformers  # its stubs do not know every model class's keywords
    torch.manual_seed(0)
    config = hf.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
    )
    model = hf.AutoModelForCausalLM.from_config(config, attn_implementation=attention, dtype=torch.bfloat16)
    assert model.config._attn_implementation == attention
    lora = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=list(LORA_TARGETS))
    peft_model = get_peft_model(model, lora)
    for name, param in peft_model.named_parameters():
        if "lora_B" in name:  # peft starts B at zero; give the adapter something to contribute
            torch.nn.init.normal_(param, std=0.5)
    return peft_model


def batch() -> dict[str, Any]:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 64, (2, 12), generator=g)
    labels = torch.full_like(ids, IGNORE)
    labels[:, 9:] = ids[:, 9:]
    mask = torch.ones_like(ids)
    mask[1, 10:] = 0
    labels[1, 10:] = IGNORE
    return {"input_ids": ids, "labels": labels, "attention_mask": mask}


def lora_input_dtypes(model: Any, *, bf16_autocast: bool) -> tuple[set[torch.dtype], float]:
    seen: set[torch.dtype] = set()
    hooks = [
        module.register_forward_hook(lambda _m, args, _out: seen.add(args[0].dtype))
        for name, module in model.named_modules()
        if name.endswith("lora_A.default")
    ]
    loss, _ = answer_loss(model, batch(), bf16_autocast=bf16_autocast)
    for hook in hooks:
        hook.remove()
    loss.backward()
    return seen, float(loss.detach())


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_bf16_autocast_keeps_float32_weights_and_the_same_loss(attention: str) -> None:
    reference = tiny_lora_model(attention)
    dtypes, reference_loss = lora_input_dtypes(reference, bf16_autocast=False)
    assert dtypes == {torch.float32}  # peft's default: the input is cast up to the adapter's float32

    fast = tiny_lora_model(attention)
    _keep_inputs_in_bf16(fast)
    dtypes, fast_loss = lora_input_dtypes(fast, bf16_autocast=True)
    assert dtypes == {torch.bfloat16}
    trainable = [(n, p) for n, p in fast.named_parameters() if p.requires_grad]
    assert trainable and all(p.dtype == torch.float32 for _, p in trainable)
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for _, p in trainable)
    assert any(float(p.grad.abs().sum()) > 0 for n, p in trainable if "lora_A" in n)
    assert fast_loss == pytest.approx(reference_loss, rel=0.02)


def test_the_token_cap_shortens_a_run_that_epochs_alone_would_make_longer() -> None:
    from agent_eval.tune.batches import Encoded
    from agent_eval.tune.train import TrainConfig, TrainState, _budget_tokens

    items = [Encoded(input_ids=list(range(100)), labels=[IGNORE] * 100) for _ in range(10)]
    tasks = ["a"] * 5 + ["b"] * 5
    state = TrainState(hardness=[None] * 10)
    assert _budget_tokens(items, tasks, state, TrainConfig(epochs=3.0)) == 3000
    assert _budget_tokens(items, tasks, state, TrainConfig(epochs=3.0, max_tokens=1200)) == 1200
    # A cap above what the epochs give changes nothing.
    assert _budget_tokens(items, tasks, state, TrainConfig(epochs=3.0, max_tokens=10_000)) == 3000


def test_the_time_cap_ends_a_run_and_its_schedule_before_the_tokens_do() -> None:
    from agent_eval.tune.train import TrainConfig, TrainState, budget_used, finished, learning_rate

    tokens_only = TrainConfig(learning_rate=1e-3, warmup_steps=0)
    capped = TrainConfig(learning_rate=1e-3, warmup_steps=0, max_minutes=10)
    early = TrainState(budget_tokens=1000, tokens=100, seconds=300.0)  # 10 % of the tokens, half the time
    assert budget_used(early, tokens_only) == pytest.approx(0.1)
    assert budget_used(early, capped) == pytest.approx(0.5)  # the nearer end sets the schedule
    assert learning_rate(capped, 50, budget_used(early, capped)) == pytest.approx(1e-3 * 0.55)
    late = TrainState(budget_tokens=1000, tokens=400, seconds=600.0)
    assert finished(late, capped) and not finished(late, tokens_only)
    assert learning_rate(capped, 90, budget_used(late, capped)) == pytest.approx(1e-4)  # decayed to its end
    # Tokens still end a run the clock has not: a fast host trains the budget and stops.
    assert finished(TrainState(budget_tokens=1000, tokens=1000, seconds=60.0), capped)


def test_a_run_the_clock_ended_well_short_of_its_budget_is_warned_about() -> None:
    from agent_eval.commands.tune import short_of_budget
    from agent_eval.tune.train import TrainState

    # The shipped adapter's run: 86 % of its budget in 57 minutes, no warning.
    assert short_of_budget(TrainState(budget_tokens=2_300_000, tokens=1_981_661)) is None
    assert short_of_budget(TrainState(budget_tokens=2_300_000, tokens=2_300_000)) is None
    # A slow host's run: a third of the budget; the warning says how much and what to pass.
    warning = short_of_budget(TrainState(budget_tokens=2_300_000, tokens=760_000))
    assert warning is not None and "33%" in warning and "--max-minutes 0" in warning


def test_a_checkpoint_is_not_continued_on_another_dataset(tmp_path: Path) -> None:
    out = tmp_path / "train"
    settle_dataset(out, "a" * 64)  # a new run notes its dataset
    (out / "checkpoint").mkdir()
    (out / "checkpoint" / "state.json").write_text("{}", encoding="utf-8")
    settle_dataset(out, "a" * 64)  # the same dataset continues
    with pytest.raises(
        ConfigError, match=r"trains on dataset aaaaaaaaaaaa, but the dataset is now bbbbbbbbbbbb"
    ):
        settle_dataset(out, "b" * 64)
    assert (out / DATASET_MARK).read_text(encoding="utf-8").strip() == "a" * 64


def test_a_checkpoint_older_than_the_note_continues_as_before(tmp_path: Path) -> None:
    (tmp_path / "checkpoint").mkdir()
    (tmp_path / "checkpoint" / "state.json").write_text("{}", encoding="utf-8")
    settle_dataset(tmp_path, "b" * 64)
    assert not (tmp_path / DATASET_MARK).exists()


def test_lora_from_a_layer_adapts_only_the_layers_above_it_and_the_backward_pass_stops_there() -> None:
    import transformers
    from peft import get_peft_model

    from agent_eval.tune.train import TrainConfig, lora_config

    hf: Any = transformers
    torch.manual_seed(0)
    config = hf.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=4, num_attention_heads=4
    )
    base = hf.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    tracked: set[int] = set()  # decoder layers whose output autograd's graph holds (the backward reaches)
    for index, layer in enumerate(base.model.layers):
        layer.register_forward_hook(
            lambda _m, _args, out, index=index: tracked.add(index) if _hidden(out).requires_grad else None
        )
    model = get_peft_model(base, lora_config(TrainConfig(rank=4, alpha=8, lora_from_layer=2), layers=4))
    trained = [name for name, p in model.named_parameters() if p.requires_grad]
    adapted = {int(name.split(".layers.")[1].split(".")[0]) for name in trained}
    assert adapted == {2, 3}
    loss, _ = answer_loss(model, batch(), bf16_autocast=False)
    loss.backward()
    assert tracked == {2, 3}  # layers 0 and 1 ran forward only: no graph was kept for them

    with pytest.raises(ConfigError, match=r"LoRA from layer 4: the base has decoder layers 0-3"):
        lora_config(TrainConfig(lora_from_layer=4), layers=4)


def _hidden(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, tuple) else out


def test_a_batch_padded_to_a_wider_multiple_has_the_same_loss() -> None:
    from agent_eval.tune.batches import Encoded, collate

    rows = [
        Encoded(input_ids=[5, 6, 7, 8, 9, 10, 11], labels=[IGNORE] * 4 + [9, 10, 11]),
        Encoded(input_ids=[12, 13, 14, 15, 16], labels=[IGNORE] * 3 + [15, 16]),
    ]
    tight, wide = collate(rows, 0), collate(rows, 0, width_multiple=16)
    assert tight["input_ids"].shape == (2, 7) and wide["input_ids"].shape == (2, 16)
    assert wide["attention_mask"].sum() == tight["attention_mask"].sum() == 12
    assert (wide["labels"][:, 7:] == IGNORE).all()
    model = tiny_lora_model("eager")
    tight_loss, tight_worst = answer_loss(model, tight, bf16_autocast=False)
    wide_loss, wide_worst = answer_loss(model, wide, bf16_autocast=False)
    assert float(wide_loss) == pytest.approx(float(tight_loss), rel=1e-5)
    assert wide_worst == pytest.approx(tight_worst, rel=1e-5)


def test_training_batches_take_the_configured_width_multiple() -> None:
    from agent_eval.tune.batches import Encoded
    from agent_eval.tune.train import TrainConfig, batch_of

    items = [Encoded(input_ids=list(range(1, 1 + n)), labels=list(range(1, 1 + n))) for n in (3, 70, 5)]
    assert batch_of(items, [0, 2], 0, TrainConfig())["input_ids"].shape == (2, 5)
    assert batch_of(items, [0, 2], 0, TrainConfig(width_multiple=64))["input_ids"].shape == (2, 64)
    assert batch_of(items, [0, 1], 0, TrainConfig(width_multiple=64))["input_ids"].shape == (2, 128)
