"""Teacher forcing against a vLLM endpoint (or llama.cpp's, which answers the same requests): the chat
template rendered to token ids, then one prefill of the prompt with a given answer appended, asking for the
top-k log-probabilities at every answer position.

It uses vLLM's `/tokenize` (chat template, token ids) and `/v1/completions` with `prompt_logprobs`, at
temperature 0 and without a seed; `request_settings()` is what a manifest records about these requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from agent_eval.chat.client import EndpointSession, Message
from agent_eval.chat.endpoint import Endpoint
from agent_eval.errors import EngineError


@dataclass(frozen=True)
class Position:
    """One answer position: the token that was forced there and the build's top-k alternatives."""

    token_id: int
    text: str
    logprob: float  # the forced token's log-probability under the build
    rank: int  # 1 = the build's own top token (ties broken by the engine)
    top: dict[int, float]  # token id → log-probability: the k most likely tokens and the forced one
    top_text: dict[int, str]


@dataclass(frozen=True)
class ForcedAnswer:
    prompt_tokens: int
    positions: tuple[Position, ...]
    latency_s: float


class TeacherClient(EndpointSession):
    """Tokenizes chats and scores given answers on one vLLM endpoint. Thread-safe (httpx.Client is)."""

    def __init__(self, endpoint: Endpoint, *, top_k: int = 20, retries: int = 2) -> None:
        super().__init__(endpoint)
        self.top_k = top_k
        self.retries = retries
        base = endpoint.base_url.rstrip("/")
        self._root = base[: -len("/v1")] if base.endswith("/v1") else base
        self._completions = base + "/completions"

    def request_settings(self) -> dict[str, Any]:
        """What every scoring request asks for (recorded in fidelity.json's manifest)."""
        return {
            "api": "completions (chat template rendered by /tokenize)",
            "temperature": 0.0,
            "seed": None,
            "max_tokens": 1,
            "prompt_logprobs": self.top_k,
            "logprobs": self.top_k,
        }

    def _post(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        problem = ""
        for _ in range(self.retries + 1):
            try:
                response = self._http.post(url, json=body)
            except httpx.HTTPError as e:
                problem = f"{type(e).__name__}: {e}"
                continue
            if response.status_code >= 500:
                problem = f"HTTP {response.status_code}: {response.text[:300]}"
                continue
            if response.status_code >= 400:
                raise EngineError(f"{url}: HTTP {response.status_code}: {response.text[:300]}")
            data = response.json()
            if not isinstance(data, dict):
                raise EngineError(f"{url}: answered {str(data)[:120]!r}, not a JSON object")
            return data
        raise EngineError(f"{url}: {problem} (gave up after {self.retries + 1} attempts)")

    def tokenize_chat(self, messages: Sequence[Message], *, add_generation_prompt: bool) -> list[int]:
        body = {
            "model": self.endpoint.model,
            "messages": list(messages),
            "add_generation_prompt": add_generation_prompt,
        }
        return [int(t) for t in self._post(self._root + "/tokenize", body)["tokens"]]

    def tokenize_text(self, text: str) -> list[int]:
        body = {"model": self.endpoint.model, "prompt": text, "add_special_tokens": False}
        return [int(t) for t in self._post(self._root + "/tokenize", body)["tokens"]]

    def answer_span(self, messages: Sequence[Message], answer: str) -> tuple[list[int], list[int]]:
        """(prompt ids, answer ids): the answer's tokens as the template places them, end-of-turn included.

        The answer is re-tokenized from its text, which may split differently from how it was generated.
        """
        prompt = self.tokenize_chat(messages, add_generation_prompt=True)
        whole = self.tokenize_chat(
            [*messages, {"role": "assistant", "content": answer}], add_generation_prompt=False
        )
        alone = self.tokenize_text(answer)
        if whole[: len(prompt)] == prompt and whole[len(prompt) : len(prompt) + len(alone)] == alone:
            end = whole[len(prompt) + len(alone) : len(prompt) + len(alone) + 1]  # the end-of-turn token
            return prompt, alone + end
        return prompt, alone

    def force(self, prompt_ids: Sequence[int], answer_ids: Sequence[int]) -> ForcedAnswer:
        """One prefill of prompt + answer; the build's top-k at each answer position."""
        body = {
            "model": self.endpoint.model,
            "prompt": [*prompt_ids, *answer_ids],
            "max_tokens": 1,
            "temperature": 0.0,
            "prompt_logprobs": self.top_k,
            "logprobs": self.top_k,
        }
        if self.endpoint.scores_from_answer:
            # llama.cpp's server (builds/serving/llamacpp_server.py) scores the answer's positions only.
            body["prompt_logprobs_from"] = len(prompt_ids)
        data = self._post(self._completions, body)
        try:
            raw = data["choices"][0]["prompt_logprobs"][len(prompt_ids) :]
            usage = data.get("usage") or {}
        except (KeyError, IndexError, TypeError) as e:
            raise EngineError(f"{self._completions}: no prompt_logprobs in the answer ({e})") from None
        positions = tuple(_position(tok, entry) for tok, entry in zip(answer_ids, raw, strict=True))
        return ForcedAnswer(int(usage.get("prompt_tokens") or 0), positions, 0.0)


def _position(token_id: int, entry: dict[str, Any]) -> Position:
    # vLLM returns the top-k tokens plus the forced one when it is not among them, all exact.
    known = {int(key): float(value["logprob"]) for key, value in entry.items()}
    text = {int(key): str(value.get("decoded_token", "")) for key, value in entry.items()}
    forced: dict[str, Any] = entry.get(str(token_id)) or {}
    return Position(
        token_id=token_id,
        text=text.get(token_id, ""),
        logprob=float(forced.get("logprob", float("-inf"))),
        rank=int(forced.get("rank", 0)),
        top=known,
        top_text=text,
    )
