"""Quantization-ladder rungs: what a build's recipe says about its grid, checked when the file loads.

A rung is a build made by `builds prepare` from the reference: served in its own format (w8a8, w4a16) or, for
grids no CPU kernel serves, rounded to the grid and served in bf16 ("dq": its behaviour, not its speed).
"""

from __future__ import annotations

import json
from pathlib import Path

from agent_eval.builds.bandwidth import weight_bytes
from agent_eval.builds.recipe_kinds import Recipe, Weights, recipe_kind
from agent_eval.records import RungInfo

GRID_BITS = range(2, 9)
SCALE_BITS = 16  # a bf16 scale (and, asymmetric, a bf16 zero point) per group
CALIBRATED = ("gptq", "awq")


def check_ladder_recipe(kind: str, source: str | None, bits: int | None, calibration: str | None) -> None:
    """ValueError (shown with the build's name and field) for a round/gptq/awq recipe that cannot be made."""
    if kind not in ("round", *CALIBRATED):
        return
    if source is None:
        raise ValueError(f"a {kind!r} recipe needs 'source': the build whose weights it rounds")
    if bits is None or bits not in GRID_BITS:
        raise ValueError(
            f"bits {bits}: a {kind!r} recipe rounds to an integer grid of "
            f"{GRID_BITS.start}..{GRID_BITS.stop - 1} bits (1 bit is a sign, not a grid; 16 is the reference)"
        )
    if kind in CALIBRATED and not calibration:
        raise ValueError(
            f"calibration: a {kind!r} recipe needs calibration data — a run dir whose recorded steps "
            "hold the agent's prompts, or a JSONL of chat messages (the tuning demonstrations)"
        )


def effective_bits(bits: int | None, group_size: int | None, symmetric: bool | None) -> float | None:
    """Bits per weight with the scale (and zero point) overhead of each group; per-channel scales ~free."""
    if bits is None:
        return None
    if bits >= 16 or group_size is None:
        return float(bits)
    return bits + SCALE_BITS * (1 if symmetric else 2) / group_size


def rounded_in_bf16(recipe: Recipe | None, scheme: str) -> bool:
    """True when the rung's weights lie on its grid but are served as bf16 (speed/memory are bf16's)."""
    return recipe is not None and recipe_kind(recipe.kind).list_group(recipe, scheme) == "rounded"


def rung_info(
    scheme: str, bits_per_weight: float | None, recipe: Recipe | None, path: Path | None, weights: str | None
) -> RungInfo | None:
    """The manifest's rung, as the recipe's kind says; None for builds not prepared here (endpoints,
    bring-your-own)."""
    if recipe is None:
        return None
    return recipe_kind(recipe.kind).rung(recipe, Weights(scheme, bits_per_weight, path, weights))


def grid_rung(
    method: str, bits: int | None, group: int | None, symmetric: bool | None, served: str, weights: Weights
) -> RungInfo:
    """A rung on an integer grid (or the reference, method 'none'), the calibration as prepare recorded it."""
    return RungInfo(
        method=method,
        bits=bits,
        group_size=group,
        symmetric=symmetric,
        bits_per_weight=weights.bits_per_weight,
        served=served,
        calibration_hash=_recorded_calibration(weights.path) if method in CALIBRATED else None,
        weights_hash=weights.weights_hash,
        weight_bytes=weight_bytes(weights.path),
        label=rung_label(method, bits, group, symmetric, served),
    )


def rung_label(method: str, bits: int | None, group: int | None, symmetric: bool | None, served: str) -> str:
    if method == "none":
        return f"bf16 reference ({bits or '?'} bits)"
    if method == "gguf":
        return "shipped GGUF"
    if method == "merge-adapter":
        return "tuned: base + merged LoRA adapter"
    grid = f"int{bits} " + (f"g{group}" if group else "per-channel")
    grid += " sym" if symmetric else " asym"
    tail = " (rounded, bf16 speed)" if served == "bf16" else ""
    return f"{grid} {method.upper()}{tail}"


def _recorded(path: Path | None) -> dict[str, object]:
    if path is None:
        return {}
    folder = path.parent if path.suffix == ".gguf" else path
    try:
        recorded = json.loads((folder / "prepared.json").read_text())
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def _recorded_calibration(path: Path | None) -> str | None:
    value = _recorded(path).get("calibration_hash")
    return value if isinstance(value, str) else None


def gguf_grid_bits(gguf_type: str | None) -> int | None:
    """The integer width a GGUF type is named for (q4_k_m → 4, iq4_nl → 4, bf16 → 16)."""
    name = (gguf_type or "").lower().removeprefix("i")
    if name in ("bf16", "f16"):
        return 16
    digits = name[1:2] if name.startswith("q") else ""
    return int(digits) if digits.isdigit() else None


def gguf_rung(
    gguf_type: str, bits: int | None, nominal_bpw: float | None, path: Path | None, weights: str | None
) -> RungInfo:
    """A GGUF rung: bits per weight, per-tensor types and the importance matrix as prepare read them."""
    facts = _recorded(path).get("gguf")
    facts = facts if isinstance(facts, dict) else {}
    measured = facts.get("bits_per_weight")
    matrix = facts.get("imatrix_hash")
    label = f"GGUF {gguf_type.upper()}" + (" imatrix" if matrix else "") + " (llama.cpp)"
    return RungInfo(
        method="gguf",
        bits=bits,
        bits_per_weight=float(measured) if isinstance(measured, int | float) else nominal_bpw,
        served="own",
        calibration_hash=_recorded_calibration(path),
        weights_hash=weights,
        weight_bytes=path.stat().st_size if path is not None and path.is_file() else None,
        label=label,
        gguf=facts or None,
    )


GROUPS = (
    ("reference", "the reference"),
    ("served", "served rungs (their own kernel: speed and memory are their own)"),
    (
        "rounded",
        "rounded rungs (weights on the rung's grid, served as bf16: behaviour only, bf16 speed/memory)",
    ),
    ("other", "other builds"),
)


def list_group(reference: bool, recipe: Recipe | None, scheme: str) -> str:
    """Which heading of `builds list` a build falls under."""
    if reference:
        return "reference"
    return "other" if recipe is None else recipe_kind(recipe.kind).list_group(recipe, scheme)
