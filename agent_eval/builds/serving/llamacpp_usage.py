"""Token usage on llama.cpp's streamed chat answers: llama-cpp-python ignores `stream_options.include_usage`,
so the engine process adds the last chunk vLLM sends (prompt and completion tokens) before `data: [DONE]`.

Without it a GGUF build's prefill tok/s (engine records, bench_engines) would read 0: the client knows the
prompt's size from that chunk.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Message = MutableMapping[str, Any]
Send = Callable[[Message], Awaitable[None]]

DONE = b"data: [DONE]"


def wants_usage(body: Any) -> bool:
    """A streamed chat request that asks for the usage chunk (as the harness's client does)."""
    if not isinstance(body, dict):
        return False
    options = body.get("stream_options") or {}
    return bool(body.get("stream")) and isinstance(options, dict) and bool(options.get("include_usage"))


class UsageChunk:
    """Wraps the response's `send`: counts the answer's content chunks, one per generated token, and sends
    the usage chunk just before the stream's end."""

    def __init__(self, send: Send, prompt_tokens: int) -> None:
        self._send = send
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = 0
        self._last: dict[str, Any] = {}

    async def __call__(self, message: Message) -> None:
        if message.get("type") != "http.response.body":
            await self._send(message)
            return
        body = bytes(message.get("body", b""))
        head, done, tail = body.partition(DONE)
        self._count(head)
        if not done:
            await self._send(message)
            return
        usage = self._usage_event(head)
        await self._send({**message, "body": head + usage + done + tail})

    def _count(self, events: bytes) -> None:
        for line in events.splitlines():
            if not line.startswith(b"data: {"):
                continue
            chunk = json.loads(line[len(b"data: ") :])
            self._last = chunk
            for choice in chunk.get("choices") or []:
                if (choice.get("delta") or {}).get("content") is not None:
                    self.completion_tokens += 1

    def _usage_event(self, before: bytes) -> bytes:
        chunk = {
            "id": self._last.get("id", ""),
            "object": "chat.completion.chunk",
            "created": self._last.get("created", 0),
            "model": self._last.get("model", ""),
            "choices": [],
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "total_tokens": self.prompt_tokens + self.completion_tokens,
            },
        }
        separator = b"\r\n\r\n" if b"\r\n" in before or not before else b"\n\n"
        return b"data: " + json.dumps(chunk).encode() + separator
