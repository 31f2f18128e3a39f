"""The GGUF header reader on files written byte by byte here: types, sizes and bits per weight read back, and
every kind of broken file refused with a message naming the file (no llama.cpp needed)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from _cpu import ENV as CPU_ENV
from _cpu import HOSTS
from click.testing import CliRunner

from agent_eval.builds.ladder_rungs import gguf_grid_bits
from agent_eval.builds.serving.built_in_engines import LlamaCpp
from agent_eval.builds.serving.gguf_file import read_gguf
from agent_eval.builds.spec import repo_root
from agent_eval.cli import cli
from agent_eval.errors import BuildError


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def _gguf(tensors: list[tuple[str, tuple[int, ...], int, int]], *, pad_data: bool = True) -> bytes:
    """A GGUF v3 file: one string key, the given tensors (name, shape, ggml type, bytes) laid out in order."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 2)
    head += _string("general.architecture") + struct.pack("<I", 8) + _string("llama")
    head += _string("general.alignment") + struct.pack("<II", 4, 32)
    offset, infos = 0, b""
    for name, shape, kind, nbytes in tensors:
        infos += _string(name) + struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}Q", *shape)
        infos += struct.pack("<IQ", kind, offset)
        offset += -(-nbytes // 32) * 32
    body = head + infos
    body += b"\0" * (-len(body) % 32)
    return body + (b"\x01" * offset if pad_data else b"")


TENSORS = [("norm", (64,), 0, 256), ("w", (64, 4), 8, 4 * 2 * 34)]  # f32 [64]; q8_0 64×4 = 8 blocks


def test_types_sizes_and_bits_per_weight_are_read_back(tmp_path: Path) -> None:
    path = tmp_path / "ok.gguf"
    path.write_bytes(_gguf(TENSORS))
    info = read_gguf(path)
    assert info.metadata == {"general.architecture": "llama", "general.alignment": 32}
    assert info.type_counts() == {"f32": 1, "q8_0": 1}
    assert [t.nbytes for t in info.tensors] == [256, 272]
    assert info.bits_per_weight() == pytest.approx(8.5)  # the matrices only: q8_0 is 34 bytes per 32
    assert info.bits_per_weight(matrices_only=False) == pytest.approx(8 * (256 + 272) / (64 + 256))


@pytest.mark.parametrize(
    ("what", "content", "message"),
    [
        ("truncated", _gguf(TENSORS)[:-100], "truncated GGUF file"),
        ("header-cut", _gguf(TENSORS)[:40], "header ends early"),
        ("magic", b"GGML" + _gguf(TENSORS)[4:], "not a GGUF file"),
        ("type", _gguf([("w", (64, 4), 77, 64)]), "unknown ggml type 77"),
        ("count", b"GGUF" + struct.pack("<IQQ", 3, 1 << 40, 0), "claims"),
        ("rows", _gguf([("w", (48, 4), 8, 4 * 2 * 34)]), "do not fit q8_0 blocks"),
        ("empty", b"", "header ends early"),
    ],
)
def test_broken_files_are_refused_naming_the_file(
    tmp_path: Path, what: str, content: bytes, message: str
) -> None:
    path = tmp_path / f"{what}.gguf"
    path.write_bytes(content)
    with pytest.raises(BuildError, match=message) as caught:
        read_gguf(path)
    assert str(path) in str(caught.value)


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="cannot read the GGUF file"):
        read_gguf(tmp_path / "absent.gguf")


@pytest.mark.parametrize(
    ("gguf_type", "bits"),
    [("bf16", 16), ("q8_0", 8), ("q6_k", 6), ("q4_k_m", 4), ("iq4_nl", 4), ("q2_k", 2), ("odd", None)],
)
def test_each_type_sits_at_the_width_it_is_named_for(gguf_type: str, bits: int | None) -> None:
    assert gguf_grid_bits(gguf_type) == bits


@pytest.mark.parametrize("kind", sorted(HOSTS))
def test_the_ladder_lists_at_least_eight_gguf_rungs_runnable_on_every_cpu_kind(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CPU_ENV, HOSTS[kind])
    monkeypatch.setattr(LlamaCpp, "missing_software", lambda self: None)  # the CPU decides here, not the venv
    result = CliRunner().invoke(cli, ["builds", "list", str(repo_root() / "builds" / "ladder.yaml")])
    assert result.exit_code == 0, result.output
    gguf = [line for line in result.output.splitlines() if " llama.cpp " in line]
    assert len(gguf) >= 8 and all(line.endswith("runs here") for line in gguf), result.output
    assert {line.split()[0] for line in gguf} >= {
        "gguf-bf16",
        "gguf-q8_0",
        "gguf-q4_k_m",
        "gguf-q4_k_m-noimat",
    }
