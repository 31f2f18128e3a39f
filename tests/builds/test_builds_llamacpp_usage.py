"""The usage chunk the llama.cpp engine process adds to a streamed chat answer
(builds/serving/llamacpp_usage.py)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agent_eval.builds.serving.llamacpp_usage import UsageChunk, wants_usage


def _event(chunk: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"


def _delta(content: str | None, finish: str | None = None) -> dict[str, Any]:
    delta = {} if content is None else {"content": content}
    return {"id": "c1", "created": 7, "model": "m", "choices": [{"delta": delta, "finish_reason": finish}]}


def _stream(bodies: list[bytes], prompt_tokens: int) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def send(message: Any) -> None:
        sent.append(dict(message))

    async def play() -> None:
        wrapped = UsageChunk(send, prompt_tokens)
        await wrapped({"type": "http.response.start", "status": 200, "headers": []})
        for body in bodies:
            await wrapped({"type": "http.response.body", "body": body, "more_body": True})

    asyncio.run(play())
    return sent


def test_the_usage_chunk_comes_last_before_done_with_one_token_per_content_chunk() -> None:
    role = {"id": "c1", "created": 7, "model": "m", "choices": [{"delta": {"role": "assistant"}}]}
    bodies = [_event(role), _event(_delta('{"type"')), _event(_delta(": ")), _event(_delta('"done"}'))]
    bodies += [_event(_delta(None, "stop")), b": ping - now\r\n\r\n", b"data: [DONE]\r\n\r\n"]
    sent = _stream(bodies, prompt_tokens=321)
    assert sent[0]["type"] == "http.response.start"
    # Every event before the end passes unchanged.
    assert [m["body"] for m in sent[1:-1]] == bodies[:-1]
    last = sent[-1]["body"]
    usage_event, done = last.split(b"\r\n\r\n")[0], last.split(b"\r\n\r\n")[1]
    assert done == b"data: [DONE]"
    chunk = json.loads(usage_event[len(b"data: ") :])
    assert chunk["choices"] == [] and chunk["id"] == "c1" and chunk["model"] == "m"
    assert chunk["usage"] == {"prompt_tokens": 321, "completion_tokens": 3, "total_tokens": 324}


def test_done_in_the_same_body_as_the_last_tokens_is_counted_and_kept() -> None:
    body = _event(_delta("a")) + _event(_delta("b")) + b"data: [DONE]\r\n\r\n"
    sent = _stream([body], prompt_tokens=5)
    text = sent[-1]["body"]
    assert text.startswith(_event(_delta("a")) + _event(_delta("b")))
    assert text.endswith(b"data: [DONE]\r\n\r\n")
    assert b'"completion_tokens": 2' in text and text.count(b"data: ") == 4


def test_only_streamed_requests_asking_for_usage_get_it() -> None:
    assert wants_usage({"stream": True, "stream_options": {"include_usage": True}})
    assert not wants_usage({"stream": True})
    assert not wants_usage({"stream": False, "stream_options": {"include_usage": True}})
    assert not wants_usage({"stream": True, "stream_options": "yes"})
    assert not wants_usage(["not", "a", "request"])
