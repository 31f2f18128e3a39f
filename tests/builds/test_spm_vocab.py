"""A GGUF's SentencePiece vocabulary written back as a SentencePiece model: a model trained by sentencepiece
itself, taken apart as a GGUF holds it and written again, loads in sentencepiece and tokenizes as the
original does; a GGUF's <unk> marked control is made the unknown piece SentencePiece needs."""

from __future__ import annotations

import io
from pathlib import Path

import sentencepiece as spm

from agent_eval.builds.preparing.spm_vocab import SpmVocab, sentencepiece_model

CORPUS = [
    "Goal: Turn Wi-Fi on. Screen Internet: 0 Navigate up (ImageButton) 1 Wi-Fi switch=off",
    "Set an alarm for 7:15 AM named Swim.  Reply to Dana Lee with: Sounds good",
    'Action: {"type": "tap", "element": 1} then {"type": "done"} when the goal holds.',
] * 40
TEXTS = ["Turn Wi-Fi off, then  reply to Dana.", "tap 12 élan 漢字", "done"]


def trained() -> spm.SentencePieceProcessor:
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS),
        model_writer=model,
        model_type="bpe",
        vocab_size=420,
        byte_fallback=True,
        user_defined_symbols=["<start_of_turn>", "<end_of_turn>"],
        pad_id=0,
        eos_id=1,
        bos_id=2,
        unk_id=3,
        add_dummy_prefix=False,  # as a GGUF of Gemma's says (add_space_prefix false) and llama.cpp tokenizes:
        remove_extra_whitespaces=False,  # no whitespace folded,
        normalization_rule_name="identity",  # no Unicode normalization
        minloglevel=2,
    )
    return spm.SentencePieceProcessor(model_proto=model.getvalue())


def as_gguf_holds_it(sp: spm.SentencePieceProcessor) -> SpmVocab:
    def kind(i: int) -> int:
        if sp.is_unknown(i):
            return 3  # some GGUFs mark <unk> control (Gemma 3's does)
        if sp.is_control(i):
            return 3
        if sp.is_byte(i):
            return 6
        return 4 if sp.id_to_piece(i) in ("<start_of_turn>", "<end_of_turn>") else 1

    n = sp.get_piece_size()
    return SpmVocab(
        pieces=[sp.id_to_piece(i) for i in range(n)],
        scores=[sp.get_score(i) for i in range(n)],
        types=[kind(i) for i in range(n)],
        unk_id=sp.unk_id(),
        bos_id=sp.bos_id(),
        eos_id=sp.eos_id(),
        pad_id=sp.pad_id(),
        add_space_prefix=False,
    )


def test_the_written_model_tokenizes_as_the_original(tmp_path: Path) -> None:
    original = trained()
    file = tmp_path / "tokenizer.model"
    file.write_bytes(sentencepiece_model(as_gguf_holds_it(original)))
    again = spm.SentencePieceProcessor(model_file=str(file))
    assert again.get_piece_size() == original.get_piece_size()
    assert [again.id_to_piece(i) for i in range(again.get_piece_size())] == [
        original.id_to_piece(i) for i in range(original.get_piece_size())
    ]
    for text in TEXTS:
        assert again.encode(text) == original.encode(text)
        assert again.decode(again.encode(text)) == text
    assert (again.unk_id(), again.bos_id(), again.eos_id(), again.pad_id()) == (3, 2, 1, 0)
    assert again.is_unknown(3) and again.is_control(2) and again.is_byte(again.piece_to_id("<0x41>"))
