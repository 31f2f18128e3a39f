"""The structured-output mask, replayed locally: the tokens the action schema allows at each answer position.

vLLM constrains structured answers with xgrammar; the same grammar (the agent's action schema, any whitespace)
is compiled here with the model's tokenizer. At a position, the *masked* rank of the forced token counts only
the tokens that are both allowed and more likely than it, or as likely with a lower token id (greedy decoding
takes the first of equal maxima, so such a tie goes to the other token, and a tie with a higher id to the
forced one). When every token above the forced one is among the engine's top-k, that rank is exact;
otherwise it is unknown (None) and the step needs a decode.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_eval.agent.prompt import with_answer


class SchemaMask:
    """Masked ranks of a forced answer under a JSON schema (needs xgrammar and transformers, as vLLM does)."""

    def __init__(self, tokenizer_dir: Path, schema: dict[str, Any]) -> None:
        import xgrammar as xgr
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        self._xgr = xgr
        self._info = xgr.TokenizerInfo.from_huggingface(tokenizer)
        compiler = xgr.GrammarCompiler(self._info, max_threads=1)
        self._grammar = compiler.compile_json_schema(json.dumps(schema), any_whitespace=True)
        # A task that asks a question is decoded with the answer action among the alternatives.
        self._answer_grammar = compiler.compile_json_schema(
            json.dumps(with_answer(schema)), any_whitespace=True
        )

    def masked_ranks(
        self,
        answer_ids: Sequence[int],
        ranks: Sequence[int],
        tops: Sequence[Mapping[int, float]],
        *,
        answers: bool = False,
    ) -> list[int | None]:
        """Per position: 1 + allowed tokens ahead of the forced one; None where that is unknown. `answers`:
        the step's task asks a question (the schema with the answer action).

        After a forced token the grammar rejects (the source answer broke the schema), every rank is None.
        """
        xgr = self._xgr
        matcher = xgr.GrammarMatcher(self._answer_grammar if answers else self._grammar)
        bitmask = xgr.allocate_token_bitmask(1, self._info.vocab_size)
        out: list[int | None] = []
        broken = False
        for token, rank, top in zip(answer_ids, ranks, tops, strict=True):
            if broken:
                out.append(None)
                continue
            matcher.fill_next_token_bitmask(bitmask)
            words = bitmask[0]
            forced = top.get(token)
            above = [
                t
                for t, lp in top.items()
                if forced is not None and t != token and (lp > forced or (lp == forced and t < token))
            ]
            allowed_above = sum(1 for t in above if (int(words[t // 32]) >> (t % 32)) & 1)
            complete = forced is not None and len(above) >= rank - 1  # every token above it is known
            out.append(1 + allowed_above if complete or allowed_above else None)
            if not matcher.accept_token(token):
                broken = True
        return out
