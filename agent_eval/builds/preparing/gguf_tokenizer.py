"""The tokenizer side of a checkpoint dequantized from a GGUF: tokenized as llama.cpp tokenizes the GGUF, with
a chat template, ending an answer's turn where the template does.

transformers reads a GGUF's SentencePiece vocabulary (`tokenizer.ggml.model` = `llama`: Gemma's, Llama 2's)
into a tokenizer of its own that splits text otherwise than llama.cpp does (Gemma 3 270M: "Goal" in two
pieces, runs of spaces apart, `<end_of_turn>` not special). Here the vocabulary is written back as the
SentencePiece model it came from (`tokenizer.model`, `spm_vocab`) and the tokenizer rebuilt from that file by
the tokenizer class transformers chose for the GGUF: it then tokenizes as llama.cpp does, and llama.cpp's
converter takes its SentencePiece path when the tuned checkpoint goes back to GGUF. A byte-level BPE
vocabulary (`gpt2`: SmolLM2's) is left as transformers wrote it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from agent_eval.builds.preparing.spm_vocab import SpmVocab, sentencepiece_model
from agent_eval.builds.serving.gguf_file import read_gguf
from agent_eval.errors import BuildError

SPM_FILE = "tokenizer.model"
SPECIAL_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token", "mask_token")
# What a turn-end check renders: the agent's prompt is a system and a user message.
PROBE_MESSAGES = [{"role": "system", "content": "You are a phone agent."}, {"role": "user", "content": "Hi."}]


def spm_vocab(gguf: Path) -> SpmVocab | None:
    """The GGUF's SentencePiece vocabulary (None: it has another kind)."""
    meta = read_gguf(gguf).metadata
    if meta.get("tokenizer.ggml.model") != "llama":
        return None

    def ids(key: str, default: int) -> int:
        value = meta.get(f"tokenizer.ggml.{key}_token_id", default)
        return int(value) if isinstance(value, int) else default

    pieces = list(meta["tokenizer.ggml.tokens"])
    return SpmVocab(
        pieces=pieces,
        scores=[float(x) for x in meta.get("tokenizer.ggml.scores", [0.0] * len(pieces))],
        types=[int(x) for x in meta.get("tokenizer.ggml.token_type", [1] * len(pieces))],
        unk_id=ids("unknown", 0),
        bos_id=ids("bos", 1),
        eos_id=ids("eos", 2),
        pad_id=ids("padding", -1),
        add_space_prefix=bool(meta.get("tokenizer.ggml.add_space_prefix", True)),
    )


def finish_tokenizer(gguf: Path, out_dir: Path, chat_template: str | None) -> dict[str, Any]:
    """Rewrites `out_dir`'s tokenizer from the GGUF's SentencePiece vocabulary (if it has one), sets the chat
    template, and adds the template's turn-end token to the generation config's end tokens. Returns facts for
    prepared.json."""
    from transformers import AutoTokenizer

    facts: dict[str, Any] = {}
    vocab = spm_vocab(gguf)
    if vocab is not None:
        config = json.loads((out_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
        with tempfile.TemporaryDirectory(prefix="spm-") as tmp:
            work = Path(tmp)
            (work / SPM_FILE).write_bytes(sentencepiece_model(vocab))
            # The class transformers chose for the GGUF, and the special tokens its vocabulary holds; a
            # special token the class would add by default (Gemma's <mask>) is not added when the vocabulary
            # lacks it.
            keep: dict[str, Any] = {"tokenizer_class": config.get("tokenizer_class")}
            for key in SPECIAL_KEYS:
                keep[key] = config.get(key) if config.get(key) in vocab.pieces else None
            (work / "tokenizer_config.json").write_text(json.dumps(keep), encoding="utf-8")
            tokenizer = AutoTokenizer.from_pretrained(work)
            if len(tokenizer) != len(vocab.pieces):
                raise BuildError(
                    f"{gguf.name}: its SentencePiece vocabulary has {len(vocab.pieces)} pieces, the "
                    f"tokenizer {config.get('tokenizer_class')} rebuilt from it {len(tokenizer)}"
                )
            for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
                (out_dir / name).unlink(missing_ok=True)
            tokenizer.save_pretrained(out_dir)
            shutil.copyfile(work / SPM_FILE, out_dir / SPM_FILE)
        facts["tokenizer"] = f"rebuilt from the GGUF's SentencePiece vocabulary ({len(vocab.pieces)} pieces)"
    if chat_template is not None:
        tokenizer = AutoTokenizer.from_pretrained(out_dir)
        tokenizer.chat_template = chat_template
        tokenizer.save_pretrained(out_dir)
        facts["turn_end_token"] = _add_turn_end(tokenizer, out_dir)
    return facts


def _add_turn_end(tokenizer: Any, out_dir: Path) -> str:
    """Adds the token that closes an answer's turn in the template to generation_config.json's end tokens,
    so a server stops there as the tuned model will; returns that token."""
    from agent_eval.chat.template import turn_format

    turn = turn_format(tokenizer, PROBE_MESSAGES, out_dir)
    path = out_dir / "generation_config.json"
    config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    eos = config.get("eos_token_id")
    ends = [eos] if isinstance(eos, int) else list(eos or [])
    if turn.end_token not in ends:
        ends.append(turn.end_token)
    config["eos_token_id"] = ends
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return str(tokenizer.convert_ids_to_tokens(turn.end_token))
