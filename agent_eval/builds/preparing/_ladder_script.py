"""Ladder rungs inside .venv-quant: round-to-nearest, GPTQ or AWQ to a 2..8-bit grid, saved compressed or
rounded.

`_quantize_script.py` dispatches the 'round', 'gptq' and 'awq' jobs here. A rounded ("dq") rung is a plain
bf16 checkpoint whose every Linear weight lies on the rung's grid; `grid.pt` beside it holds the scales and
zero points, so a test can check each weight against its grid.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _quantize_script import (  # type: ignore[import-not-found,unused-ignore]
    _save_text_side,
    _write,
    say,
)


def _weights_args(job: dict[str, Any]) -> dict[str, Any]:
    group = job.get("group_size")
    args: dict[str, Any] = {
        "num_bits": job["bits"],
        "type": "int",
        "symmetric": job.get("symmetric", True),
        "strategy": "group" if group else "channel",
    }
    if group:
        args["group_size"] = group
    return args


def _calibration(job: dict[str, Any], tokenizer: Any) -> Any:
    from datasets import Dataset  # type: ignore[import-not-found,unused-ignore]

    conversations: list[list[dict[str, Any]]] = json.loads(Path(job["calibration_file"]).read_text())
    ids = [
        tokenizer.apply_chat_template(c, tokenize=True, add_generation_prompt=True, return_dict=False)
        for c in conversations
    ]
    ids = [list(x["input_ids"]) if isinstance(x, dict) else list(x) for x in ids]
    return Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * len(x) for x in ids]})


# Layers of one shape per GPTQ batch: SmolLM2-135M has 60 of its largest group (q and o, gate and up).
_GPTQ_BATCH = 64


def ladder(job: dict[str, Any]) -> None:
    """A round (RTN), gptq or awq job: quantize the source with llmcompressor, then save compressed or
    rounded. AWQ first scales each norm → projection pair by a grid search on the calibration activations,
    then rounds to nearest (its own modifier does no rounding). AWQ needs the sequential pipeline: under the
    basic one every parent module's replay gives NaN on this model, every mapping is skipped, and the result
    is plain RTN — which `_check_smoothed` refuses to save under AWQ's name."""
    import torch
    from llmcompressor import oneshot
    from llmcompressor.modifiers.gptq import GPTQModifier
    from llmcompressor.modifiers.quantization import QuantizationModifier
    from llmcompressor.modifiers.transform.awq import AWQModifier
    from transformers import AutoModelForCausalLM, AutoTokenizer

    name, source = job["name"], Path(job["source_dir"])
    model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.bfloat16)
    tokenizer = AutoTokenizer.from_pretrained(source)
    groups = {"group_0": {"targets": ["Linear"], "weights": _weights_args(job)}}
    rtn = QuantizationModifier(config_groups=groups, ignore=["lm_head"])
    if job["kind"] == "round":
        say(name, f"rounding to int{job['bits']} (round to nearest)")
        oneshot(model=model, recipe=rtn)
    else:
        data = _calibration(job, tokenizer)
        points = job.get("search_points")
        searched = f", {points} scales searched per layer pair" if points else ""
        say(name, f"{job['kind'].upper()} to int{job['bits']} on {len(data)} calibration prompts{searched}")
        recipe: Any
        if job["kind"] == "awq":
            _no_pinning_without_an_accelerator()
            norms, recipe = _norm_weights(model), [AWQModifier(n_grid=job["search_points"]), rtn]
        else:
            # Same-shaped layers of all 30 blocks are solved together: llmcompressor batches them only on a
            # GPU unless told how many. GPTQ's column loop then runs once per shape, not once per layer.
            gptq = GPTQModifier(
                config_groups=groups, ignore=["lm_head"], actorder=None, batched_quantization=_GPTQ_BATCH
            )
            norms, recipe = None, gptq
        oneshot(
            model=model,
            dataset=data,
            recipe=recipe,
            max_seq_length=2048,
            num_calibration_samples=len(data),
            pipeline="basic" if norms is None else "sequential",
        )
        if norms is not None:
            _check_smoothed(name, norms, _norm_weights(model))
    if job["output"] == "compressed":

        def save(out: Path) -> None:
            model.save_pretrained(out, save_compressed=True)
            _save_text_side(model, out, tokenizer)

    else:
        save = _rounded_saver(model, tokenizer)
    _write(job, save)


def _norm_weights(model: Any) -> dict[str, Any]:
    return {n: p.detach().clone() for n, p in model.named_parameters() if n.endswith("layernorm.weight")}


def _check_smoothed(name: str, before: dict[str, Any], after: dict[str, Any]) -> None:
    changed = sum(not bool((after[n] == w).all()) for n, w in before.items())
    if not changed:
        raise SystemExit(f"{name}: AWQ smoothed no layer (every mapping was skipped): it would be plain RTN")
    say(name, f"AWQ scaled {changed} of {len(before)} norm layers")


def _no_pinning_without_an_accelerator() -> None:
    """llmcompressor 0.14's AWQ pins its cached activations (for faster copies to a GPU); a CPU-only torch
    raises "Cannot access accelerator device" there. Pinning changes no value, so on CPU it is skipped."""
    import torch
    from llmcompressor.pipelines.cache import IntermediatesCache

    if not torch.cuda.is_available():
        IntermediatesCache.pin_memory = lambda self, *args, **kwargs: None  # type: ignore[method-assign,unused-ignore]


def _rounded_saver(model: Any, tokenizer: Any) -> Any:
    """Each quantized Linear's weight replaced by its value on the grid, in a plain bf16 checkpoint."""
    import torch
    from compressed_tensors.quantization.lifecycle.forward import (  # type: ignore[import-untyped,unused-ignore]
        fake_quantize,
    )
    from transformers import LlamaForCausalLM

    state = {
        k: v for k, v in model.state_dict().items() if not k.endswith(("_scale", "_zero_point", "g_idx"))
    }
    grid: dict[str, torch.Tensor] = {}
    for module_name, module in model.named_modules():
        scheme = getattr(module, "quantization_scheme", None)
        if scheme is None or scheme.weights is None or not hasattr(module, "weight_scale"):
            continue
        zero = getattr(module, "weight_zero_point", None)
        if zero is None:
            zero = torch.zeros_like(module.weight_scale, dtype=torch.int8)
        with torch.no_grad():
            rounded = fake_quantize(module.weight, module.weight_scale, zero, scheme.weights)
        state[f"{module_name}.weight"] = rounded.to(torch.bfloat16)
        grid[f"{module_name}.scale"] = module.weight_scale.detach().clone()
        grid[f"{module_name}.zero_point"] = zero.detach().clone()
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    fresh: Any = LlamaForCausalLM(config)  # type: ignore[no-untyped-call,unused-ignore]
    fresh = fresh.to(torch.bfloat16)
    missing, unexpected = fresh.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if k != "lm_head.weight"]:
        raise SystemExit(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
    fresh.tie_weights()
    fresh.generation_config = model.generation_config

    def save(out: Path) -> None:
        fresh.save_pretrained(out)
        torch.save(grid, out / "grid.pt")
        _save_text_side(fresh, out, tokenizer)

    return save
