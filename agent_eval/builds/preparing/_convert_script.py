"""Runs llama.cpp's convert_hf_to_gguf.py, taking the GPT-2 byte-level BPE vocabulary path for a Llama whose
tokenizer.json is byte-level BPE (SmolLM2's), as the shipped GGUF has it (`gpt2`, pre-tokenizer `smollm`).

transformers 5 re-saves that tokenizer with a byte-fallback flag and decoder, which the converter takes for a
Llama SentencePiece-style vocabulary (`llama`, SPM): the server then aborts on the grammar's first token.
Usage: python _convert_script.py CONVERTER [converter arguments].
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path


def byte_level(model_dir: Path) -> bool:
    try:
        tokenizer = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    pre = tokenizer.get("pre_tokenizer") or {}
    kinds = [pre.get("type")] + [p.get("type") for p in pre.get("pretokenizers", [])]
    return tokenizer.get("model", {}).get("type") == "BPE" and "ByteLevel" in kinds


def main() -> None:
    converter = Path(sys.argv[1])
    sys.path.insert(0, str(converter.parent))
    sys.path.insert(1, str(converter.parent / "gguf-py"))
    if byte_level(Path(sys.argv[2])):
        from conversion.llama import LlamaModel  # type: ignore[import-not-found]

        LlamaModel.set_vocab = lambda self: self._set_vocab_gpt2()
    sys.argv = [str(converter), *sys.argv[2:]]
    runpy.run_path(str(converter), run_name="__main__")


if __name__ == "__main__":
    main()
