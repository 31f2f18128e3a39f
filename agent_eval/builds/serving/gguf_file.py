"""Reads a GGUF file's header: its metadata, each tensor's type and size, and whether the file is whole.

Used before a GGUF build is served (a corrupt or truncated file is refused by name) and for the manifest's
bits per weight and per-tensor types, read from the file rather than assumed from the quant type's name.
"""

from __future__ import annotations

import itertools
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from agent_eval.errors import BuildError

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# ggml type id → (name, weights per block, bytes per block), as ggml lays the types out.
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 3: ("q4_1", 32, 20), 6: ("q5_0", 32, 22),
    7: ("q5_1", 32, 24), 8: ("q8_0", 32, 34), 9: ("q8_1", 32, 36), 10: ("q2_K", 256, 84),
    11: ("q3_K", 256, 110), 12: ("q4_K", 256, 144), 13: ("q5_K", 256, 176), 14: ("q6_K", 256, 210),
    15: ("q8_K", 256, 292), 16: ("iq2_xxs", 256, 66), 17: ("iq2_xs", 256, 74), 18: ("iq3_xxs", 256, 98),
    19: ("iq1_s", 256, 50), 20: ("iq4_nl", 32, 18), 21: ("iq3_s", 256, 110), 22: ("iq2_s", 256, 82),
    23: ("iq4_xs", 256, 136), 24: ("i8", 1, 1), 25: ("i16", 1, 2), 26: ("i32", 1, 4), 27: ("i64", 1, 8),
    28: ("f64", 1, 8), 29: ("iq1_m", 256, 56), 30: ("bf16", 1, 2), 34: ("tq1_0", 256, 54),
    35: ("tq2_0", 256, 66), 39: ("mxfp4", 32, 17),
}  # fmt: skip

# GGUF metadata value types: id → struct format of a scalar (8: string, 9: array are read apart).
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q"}
_SCALARS[12] = "<d"
_MAX_COUNT = 1 << 24  # more tensors, keys or array items than this is a corrupt header, not a model


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]
    type_name: str
    offset: int
    nbytes: int

    @property
    def elements(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count


@dataclass(frozen=True)
class GgufInfo:
    """What a GGUF file holds, as its header says; `size` is the file's length on disk."""

    version: int
    metadata: dict[str, Any]
    tensors: tuple[Tensor, ...]
    data_start: int
    size: int

    def type_counts(self) -> dict[str, int]:
        """How many tensors each ggml type holds, e.g. {'q5_0': 180, 'q4_K': 30, 'f32': 61}."""
        return dict(sorted(Counter(t.type_name for t in self.tensors).items()))

    def bits_per_weight(self, *, matrices_only: bool = True) -> float:
        """Stored bits per weight over the 2-D tensors (the ones a quant type changes; norms stay f32)."""
        chosen = [t for t in self.tensors if len(t.shape) >= 2 or not matrices_only]
        elements = sum(t.elements for t in chosen)
        return round(8.0 * sum(t.nbytes for t in chosen) / elements, 4) if elements else 0.0


class _Reader:
    def __init__(self, stream: BinaryIO, path: Path) -> None:
        self.stream = stream
        self.path = path

    def take(self, n: int) -> bytes:
        data = self.stream.read(n)
        if len(data) != n:
            raise BuildError(f"{self.path}: the GGUF header ends early (truncated file); prepare it again")
        return data

    def scalar(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def count(self, what: str) -> int:
        value = int(self.scalar("<Q"))
        if value > _MAX_COUNT:
            raise BuildError(f"{self.path}: the GGUF header claims {value} {what} (corrupt file)")
        return value

    def string(self) -> str:
        raw = self.take(self.count("bytes in a string"))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BuildError(f"{self.path}: a GGUF header string is not UTF-8 (corrupt file)") from None

    def value(self, kind: int) -> Any:
        if kind == 8:
            return self.string()
        if kind == 9:
            item = int(self.scalar("<I"))
            return [self.value(item) for _ in range(self.count("array items"))]
        if kind not in _SCALARS:
            raise BuildError(f"{self.path}: unknown GGUF metadata type {kind} (corrupt file)")
        return self.scalar(_SCALARS[kind])


def _tensor(reader: _Reader) -> Tensor:
    name = reader.string()
    dims = int(reader.scalar("<I"))
    if dims > 8:
        raise BuildError(f"{reader.path}: tensor {name!r} claims {dims} dimensions (corrupt file)")
    shape = tuple(int(reader.scalar("<Q")) for _ in range(dims))
    type_id = int(reader.scalar("<I"))
    offset = int(reader.scalar("<Q"))
    if type_id not in GGML_TYPES:
        raise BuildError(f"{reader.path}: tensor {name!r} has unknown ggml type {type_id} (corrupt file)")
    type_name, block, block_bytes = GGML_TYPES[type_id]
    elements = 1
    for dim in shape:
        elements *= dim
    if shape and shape[0] % block:
        raise BuildError(f"{reader.path}: tensor {name!r} rows of {shape[0]} do not fit {type_name} blocks")
    return Tensor(name, shape, type_name, offset, elements // block * block_bytes)


def read_gguf(path: Path) -> GgufInfo:
    """The header of `path`; BuildError naming the file when it is not a whole GGUF file."""
    try:
        size = path.stat().st_size
        stream = path.open("rb")
    except OSError as e:
        raise BuildError(f"{path}: cannot read the GGUF file ({e.strerror})") from None
    with stream:
        reader = _Reader(stream, path)
        if reader.take(4) != MAGIC:
            raise BuildError(f"{path}: not a GGUF file (no GGUF magic at its start); prepare it again")
        version = int(reader.scalar("<I"))
        if version not in (2, 3):
            raise BuildError(f"{path}: GGUF version {version} (this reader knows 2 and 3)")
        n_tensors, n_keys = reader.count("tensors"), reader.count("metadata keys")
        metadata: dict[str, Any] = {}
        for _ in range(n_keys):
            key = reader.string()
            metadata[key] = reader.value(int(reader.scalar("<I")))
        tensors = tuple(_tensor(reader) for _ in range(n_tensors))
        align = int(metadata.get("general.alignment", DEFAULT_ALIGNMENT))
        data_start = -(-stream.tell() // align) * align
    info = GgufInfo(version, metadata, tensors, data_start, size)
    _check_whole(info, path)
    return info


def _check_whole(info: GgufInfo, path: Path) -> None:
    end = max((info.data_start + t.offset + t.nbytes for t in info.tensors), default=info.data_start)
    if info.size < end:
        raise BuildError(
            f"{path}: truncated GGUF file ({info.size} bytes; its tensors need {end}); prepare it again"
        )
    spans = sorted((t.offset, t.offset + t.nbytes, t.name) for t in info.tensors)
    for (_, stop, name), (start, _, other) in itertools.pairwise(spans):
        if start < stop:
            raise BuildError(f"{path}: tensors {name!r} and {other!r} overlap in the file (corrupt file)")
