"""Which arithmetic `tune train` uses on this CPU: bf16 where the CPU has bf16 instructions, else float32.

The shipped recipe trains under bf16 autocast with the base in bf16. A CPU without bf16 instructions (an
AVX2-only one) emulates that arithmetic: one LoRA pass of SmolLM2-135M ran at 3 tok/s there under bf16 and at
~87 tok/s in float32 (docs/tuning.md). AVX512-BF16 or AMX gives bf16 products natively (613–900 tok/s).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from agent_eval.builds.serving.host import cpu_flags

Arithmetic = Literal["bf16", "float32"]
ARITHMETIC_CHOICES = ("auto", "bf16", "float32")
BF16_FLAGS = ("avx512_bf16", "amx_bf16")
"""CPU flags that give bf16 products in hardware (AVX512-BF16's dot product, AMX's tiles)."""


@dataclass(frozen=True)
class ArithmeticChoice:
    """The arithmetic a training run uses, and why (said to the user; the run's config keeps its dtypes)."""

    arithmetic: Arithmetic
    why: str

    @property
    def bf16_autocast(self) -> bool:
        return self.arithmetic == "bf16"

    @property
    def base_dtype(self) -> Literal["bfloat16", "float32"]:
        return "bfloat16" if self.arithmetic == "bf16" else "float32"


def choose_arithmetic(asked: str) -> ArithmeticChoice:
    """`asked` is `auto` (decide by the CPU's flags), `bf16` or `float32` (as asked)."""
    if asked not in ARITHMETIC_CHOICES:
        raise ValueError(f"arithmetic {asked!r}: choose one of {', '.join(ARITHMETIC_CHOICES)}")
    if asked == "bf16":
        return ArithmeticChoice("bf16", "as asked")
    if asked == "float32":
        return ArithmeticChoice("float32", "as asked")
    have = sorted(set(BF16_FLAGS) & cpu_flags())
    if have:
        return ArithmeticChoice("bf16", f"this CPU has {' and '.join(have)}")
    return ArithmeticChoice(
        "float32",
        f"this CPU has neither {' nor '.join(BF16_FLAGS)}: bf16 would be emulated, ~30x slower than float32",
    )
