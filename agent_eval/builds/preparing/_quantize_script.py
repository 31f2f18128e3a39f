"""Makes build weights inside .venv-quant (transformers + llmcompressor); `builds prepare` runs it.

Reads a JSON list of jobs from argv[1]; each dequantizes the shipped GGUF or quantizes a checkpoint.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_T0 = time.monotonic()


def say(job: str, text: str) -> None:
    print(f"[{job}] {text} ({time.monotonic() - _T0:.0f} s)", flush=True)


def _save_text_side(src: Any, out: Path, tokenizer: Any) -> None:
    tokenizer.save_pretrained(out)
    generation = getattr(src, "generation_config", None)
    if generation is not None:
        generation.save_pretrained(out)


def dequantize(job: dict[str, Any]) -> None:
    """GGUF → a bf16 HF checkpoint vLLM serves (transformers will not save a GGUF-loaded model itself)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    name, gguf = job["name"], Path(job["gguf"])
    say(name, f"reading {gguf.name}")
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config = loaded.config
    # The GGUF conversion names <|im_start|> as the tokenizer's EOS; the model ends turns with the GGUF's EOS.
    eos_id = loaded.generation_config.eos_token_id
    if isinstance(eos_id, int):
        tokenizer.eos_token = tokenizer.convert_ids_to_tokens(eos_id)
        tokenizer.pad_token = tokenizer.eos_token
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    # The architecture the GGUF names (Llama for SmolLM2, Gemma 3 ...), as transformers maps it.
    fresh: Any = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)  # type: ignore[no-untyped-call,unused-ignore]
    missing, unexpected = fresh.load_state_dict(loaded.state_dict(), strict=False)
    if unexpected or [k for k in missing if k != "lm_head.weight"]:
        raise SystemExit(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
    fresh.tie_weights()
    fresh.generation_config = loaded.generation_config
    params = sum(p.numel() for p in fresh.parameters())
    say(name, f"dequantized: {params / 1e6:.1f} M parameters, {config.num_hidden_layers} layers")

    def save(out: Path) -> None:
        fresh.save_pretrained(out)
        _save_text_side(fresh, out, tokenizer)

    _write(job, save)


def _config_groups(job: dict[str, Any]) -> dict[str, Any]:
    bits = 8 if job["weights"] == "int8" else 4
    group = job.get("group_size")
    weights: dict[str, Any] = {
        "num_bits": bits,
        "type": "int",
        "symmetric": job.get("symmetric", True),
        "strategy": "group" if group else "channel",
    }
    if group:
        weights["group_size"] = group
    scheme: dict[str, Any] = {"targets": ["Linear"], "weights": weights}
    if job.get("activations") == "int8":
        scheme["input_activations"] = {
            "num_bits": 8,
            "type": "int",
            "symmetric": True,
            "strategy": "token",
            "dynamic": True,
        }
    return {"group_0": scheme}


def quantize(job: dict[str, Any]) -> None:
    """Data-free round-to-nearest with llmcompressor, saved in the compressed-tensors format vLLM reads."""
    import torch
    from llmcompressor import oneshot
    from llmcompressor.modifiers.quantization import QuantizationModifier
    from transformers import AutoModelForCausalLM, AutoTokenizer

    name, source = job["name"], Path(job["source_dir"])
    acts = job.get("activations") or "bf16"
    say(name, f"quantizing {source.name} → {job['weights']} weights, {acts} activations")
    model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.bfloat16)
    tokenizer = AutoTokenizer.from_pretrained(source)
    recipe = QuantizationModifier(config_groups=_config_groups(job), ignore=["lm_head"])
    oneshot(model=model, recipe=recipe)
    say(name, "quantized; saving compressed")

    def save(out: Path) -> None:
        model.save_pretrained(out, save_compressed=True)
        _save_text_side(model, out, tokenizer)

    _write(job, save)


def _write(job: dict[str, Any], save: Callable[[Path], None]) -> None:
    # Write beside the target and swap it in at the end: an interrupted prepare leaves no half checkpoint.
    out = Path(job["out_dir"])
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        save(tmp)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    say(job["name"], f"saved {out}")


def main() -> None:
    from _ladder_script import ladder  # type: ignore[import-not-found,unused-ignore]

    jobs: list[dict[str, Any]] = json.loads(sys.argv[1])
    kinds = {"dequantize-shipped-gguf": dequantize, "dequantize-gguf": dequantize, "quantize": quantize}
    kinds.update(dict.fromkeys(("round", "gptq", "awq"), ladder))
    for job in jobs:
        kinds[job["kind"]](job)


if __name__ == "__main__":
    main()
