"""A shipped LoRA adapter (adapters/<name>/: adapter_model.safetensors + manifest.json) and merging it into a
checkpoint: `W + (alpha / r) · B @ A` for every adapted linear layer, in fp32, saved in the base's dtype.

The merge reads the source checkpoint and writes a new directory; the source is never modified. The same
adapter on the same base always gives the same bytes (so the same weights hash).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_eval.builds.serving.weights import sha256_file
from agent_eval.errors import BuildError

ADAPTER_FILE = "adapter_model.safetensors"
MANIFEST_FILE = "manifest.json"
MAX_ADAPTER_BYTES = 8 * 1024 * 1024
_LORA_PREFIX = "base_model.model."


class AdapterManifest(BaseModel):
    """manifest.json: what the adapter is, what it was made from and how."""

    model_config = ConfigDict(extra="allow")

    adapter_sha256: str
    adapter_bytes: int
    rank: int = Field(gt=0)
    alpha: float = Field(gt=0)
    target_modules: list[str]
    base_weights_hash: str = Field(description="weights hash of the checkpoint it was trained on")
    prompt_format: str = Field(description="the agent (prompt format) the model was tuned for")


def read_adapter(adapter_dir: Path) -> AdapterManifest:
    """The adapter's manifest once the adapter file is there and matches it; else a BuildError naming it."""
    file, manifest_file = adapter_dir / ADAPTER_FILE, adapter_dir / MANIFEST_FILE
    if not file.is_file() or not manifest_file.is_file():
        raise BuildError(
            f"adapter {adapter_dir} is missing {ADAPTER_FILE} or {MANIFEST_FILE}; restore it from git "
            "or make it again with `agent-eval tune`"
        )
    try:
        manifest = AdapterManifest.model_validate_json(manifest_file.read_text(encoding="utf-8"))
    except (ValidationError, ValueError) as e:
        raise BuildError(f"adapter manifest {manifest_file} is unreadable: {e}") from None
    actual = sha256_file(file)
    if actual != manifest.adapter_sha256:
        raise BuildError(
            f"adapter {file} is corrupt: its sha256 {actual[:12]}… is not the manifest's "
            f"{manifest.adapter_sha256[:12]}…; restore it from git (`git checkout -- {adapter_dir}`)"
        )
    return manifest


def _base_key(lora_key: str) -> tuple[str, str] | None:
    """`base_model.model.X.lora_A.weight` → (`X.weight`, `A`); None for anything else."""
    for part in ("A", "B"):
        marker = f".lora_{part}.weight"
        if lora_key.endswith(marker):
            return lora_key.removeprefix(_LORA_PREFIX).removesuffix(marker) + ".weight", part
    return None


def merged_tensors(base: dict[str, Any], lora: dict[str, Any], scale: float) -> dict[str, Any]:
    """The base tensors with every LoRA pair folded in (a new dict; `base` is not changed)."""
    import torch

    pairs: dict[str, dict[str, Any]] = {}
    for key, tensor in lora.items():
        found = _base_key(key)
        if found is None:
            raise BuildError(f"adapter tensor {key!r} is not a LoRA A/B weight")
        pairs.setdefault(found[0], {})[found[1]] = tensor
    out = dict(base)
    for name, pair in sorted(pairs.items()):
        if name not in base or set(pair) != {"A", "B"}:
            raise BuildError(f"adapter does not fit the base: no weight {name!r} or half a LoRA pair")
        weight = base[name]
        delta = pair["B"].to(torch.float32) @ pair["A"].to(torch.float32)
        out[name] = (weight.to(torch.float32) + scale * delta).to(weight.dtype).contiguous()
    return out


def merge_adapter(source_dir: Path, adapter_dir: Path, out_dir: Path) -> None:
    """Writes `out_dir`: the source checkpoint's files, its weights with the adapter merged in."""
    from safetensors.torch import load_file, save_file

    manifest = read_adapter(adapter_dir)
    weight_files = sorted(source_dir.glob("*.safetensors"))
    if not weight_files:
        raise BuildError(f"{source_dir}: no safetensors weights to merge the adapter into")
    lora = load_file(str(adapter_dir / ADAPTER_FILE))
    tmp = out_dir.with_name(f".{out_dir.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for file in sorted(source_dir.iterdir()):
        if file.is_file() and file.suffix != ".safetensors" and file.name != "prepared.json":
            shutil.copyfile(file, tmp / file.name)
    base: dict[str, Any] = {}
    for file in weight_files:
        base.update(load_file(str(file)))
    merged = merged_tensors(base, lora, manifest.alpha / manifest.rank)
    save_file(dict(sorted(merged.items())), str(tmp / "model.safetensors"), metadata={"format": "pt"})
    index = tmp / "model.safetensors.index.json"
    index.unlink(missing_ok=True)
    (tmp / "adapter.json").write_text(
        json.dumps({"adapter": str(adapter_dir.name), "adapter_sha256": manifest.adapter_sha256}) + "\n"
    )
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
