"""`tune train --arithmetic auto` trains in bf16 only where the CPU multiplies bf16 in hardware."""

from __future__ import annotations

import pytest
from _cpu import ENV, HOSTS

from agent_eval.tune.arithmetic import choose_arithmetic

EXPECTED = {"avx2-only": "float32", "avx512": "bf16", "avx512-amx": "bf16"}


@pytest.mark.parametrize("kind", sorted(HOSTS))
def test_auto_decides_by_the_cpu_s_bf16_instructions(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, HOSTS[kind])
    chosen = choose_arithmetic("auto")
    assert chosen.arithmetic == EXPECTED[kind]
    if chosen.arithmetic == "bf16":
        assert (chosen.bf16_autocast, chosen.base_dtype) == (True, "bfloat16")
        assert "avx512_bf16" in chosen.why
    else:
        assert (chosen.bf16_autocast, chosen.base_dtype) == (False, "float32")
        assert "neither avx512_bf16 nor amx_bf16" in chosen.why


def test_amx_alone_is_enough_and_an_explicit_choice_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, f"{HOSTS['avx2-only']} amx_bf16 amx_tile")
    assert choose_arithmetic("auto").arithmetic == "bf16"
    monkeypatch.setenv(ENV, HOSTS["avx2-only"])
    assert choose_arithmetic("bf16").arithmetic == "bf16"  # as asked, even where it is emulated
    monkeypatch.setenv(ENV, HOSTS["avx512-amx"])
    assert choose_arithmetic("float32").base_dtype == "float32"
    with pytest.raises(ValueError, match="choose one of auto, bf16, float32"):
        choose_arithmetic("fp16")
