"""A SentencePiece model file (`tokenizer.model`) written from a GGUF's SentencePiece vocabulary.

A GGUF made from a SentencePiece tokenizer (`tokenizer.ggml.model` = `llama`: Gemma's, Llama 2's) carries
its pieces, scores and piece types; `gguf_tokenizer` writes them back as the model file they came from, so
that transformers rebuilds the tokenizer llama.cpp uses and llama.cpp's converter takes its SentencePiece
path. The file is SentencePiece's ModelProto in protobuf's wire format, written field by field here (the
quantization venv has no protobuf). Pure Python; the tests load its output with the sentencepiece library.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

BPE = 2  # TrainerSpec.ModelType
UNKNOWN, BYTE = 2, 6  # SentencePiece.Type; llama.cpp numbers its token types as SentencePiece does


@dataclass(frozen=True)
class SpmVocab:
    """What a GGUF says of its SentencePiece vocabulary."""

    pieces: Sequence[str]
    scores: Sequence[float]
    types: Sequence[int]
    unk_id: int
    bos_id: int
    eos_id: int
    pad_id: int
    add_space_prefix: bool


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32 fields are written as 10-byte varints, as protobuf does
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _int(field: int, value: int) -> bytes:
    return _key(field, 0) + _varint(value)


def _bytes(field: int, value: bytes) -> bytes:
    return _key(field, 2) + _varint(len(value)) + value


def _text(field: int, value: str) -> bytes:
    return _bytes(field, value.encode("utf-8"))


def sentencepiece_model(vocab: SpmVocab) -> bytes:
    """The bytes of a BPE SentencePiece model holding `vocab` (byte fallback when it has byte pieces)."""
    if not len(vocab.pieces) == len(vocab.scores) == len(vocab.types):
        raise ValueError("pieces, scores and types differ in length")
    types = list(vocab.types)
    if 0 <= vocab.unk_id < len(types):
        types[vocab.unk_id] = UNKNOWN  # a GGUF may mark it control; SentencePiece needs its unknown piece
    out = bytearray()
    for piece, score, kind in zip(vocab.pieces, vocab.scores, types, strict=True):
        body = _text(1, piece) + _key(2, 5) + struct.pack("<f", float(score)) + _int(3, int(kind))
        out += _bytes(1, body)

    def name_of(token_id: int) -> str:
        return vocab.pieces[token_id] if 0 <= token_id < len(vocab.pieces) else ""

    trainer = _int(3, BPE) + _int(4, len(vocab.pieces)) + _int(35, int(BYTE in vocab.types))
    specials = (
        (40, 45, vocab.unk_id),
        (41, 46, vocab.bos_id),
        (42, 47, vocab.eos_id),
        (43, 48, vocab.pad_id),
    )
    for id_field, _, token_id in specials:
        trainer += _int(id_field, token_id)
    for _, piece_field, token_id in specials:
        if name_of(token_id):
            trainer += _text(piece_field, name_of(token_id))
    out += _bytes(2, trainer)
    normalizer = _text(1, "identity") + _int(3, int(vocab.add_space_prefix)) + _int(4, 0) + _int(5, 1)
    out += _bytes(3, normalizer)
    return bytes(out)
