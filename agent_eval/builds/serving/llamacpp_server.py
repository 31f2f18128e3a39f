"""The llama.cpp engine process: llama-cpp-python's OpenAI-compatible server, plus the two requests teacher
forcing needs (vLLM's `/tokenize` and `prompt_logprobs`), so fidelity probes a GGUF build as it probes vLLM's,
and the usage chunk of streamed chat answers (`llamacpp_usage`).

Run as `python -m agent_eval.builds.serving.llamacpp_server` with llama_cpp.server's own arguments. Every
other request goes to llama-cpp-python unchanged. Prompt log-probabilities are exact: one prefill of the
prompt, then one batch over the answer whose logits are all kept (no `logits_all`: serving memory stays as
it is).
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, cast

import numpy as np

from agent_eval.builds.serving.llamacpp_usage import UsageChunk, wants_usage

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def tokenize(llama: Any, body: dict[str, Any]) -> list[int]:
    """vLLM's /tokenize: a chat rendered by the template stored in the GGUF, or plain text."""
    if "messages" in body:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        eos, bos = llama.token_eos(), llama.token_bos()
        formatter = Jinja2ChatFormatter(
            template=llama.metadata["tokenizer.chat_template"],
            eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
            bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
            add_generation_prompt=bool(body.get("add_generation_prompt", True)),
        )
        rendered = formatter(messages=body["messages"])
        # The server's chat handler tokenizes the rendered prompt the same way.
        add_bos = not rendered.added_special
        return list(llama.tokenize(rendered.prompt.encode(), add_bos=add_bos, special=True))
    add_bos = bool(body.get("add_special_tokens", True))
    return list(llama.tokenize(str(body.get("prompt", "")).encode(), add_bos=add_bos, special=True))


def prompt_logprobs(llama: Any, tokens: list[int], top_k: int, start: int) -> list[dict[str, Any] | None]:
    """vLLM's prompt_logprobs for positions ≥ `start` (None before): top-k, the token there, its rank."""
    import llama_cpp

    start = max(1, start)
    if not 1 <= start < len(tokens) or len(tokens) - start + 1 > llama.n_batch:
        raise ValueError(f"cannot score positions {start}..{len(tokens) - 1} (batch {llama.n_batch})")
    llama.reset()
    llama.eval(tokens[: start - 1])
    tail = tokens[start - 1 :]
    # The answer in one batch with every position's logits kept, as Llama.eval would with logits_all.
    llama._ctx.kv_cache_seq_rm(-1, llama.n_tokens, -1)
    llama._batch.set_batch(batch=tail, n_past=llama.n_tokens, logits_all=True)
    llama._ctx.decode(llama._batch)
    llama.input_ids[llama.n_tokens : llama.n_tokens + len(tail)] = tail
    llama.n_tokens += len(tail)
    n_vocab = llama.n_vocab()
    rows = np.stack(
        [
            np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama._ctx.ctx, i), shape=(n_vocab,))
            for i in range(len(tail) - 1)
        ]
    ).astype(np.float64)
    logprobs = rows - np.logaddexp.reduce(rows, axis=1, keepdims=True)
    out: list[dict[str, Any] | None] = [None] * start
    for row, token in zip(logprobs, tokens[start:], strict=True):
        out.append(_position(llama, row, token, top_k))
    return out


def _position(llama: Any, row: np.ndarray, token: int, top_k: int) -> dict[str, Any]:
    top = np.argpartition(-row, top_k)[:top_k] if top_k < len(row) else np.arange(len(row))
    chosen = {int(i) for i in top} | {token}

    def entry(i: int) -> dict[str, Any]:
        # Rank as vLLM counts it: 1 + how many tokens are strictly more likely.
        text = llama.detokenize([i], special=True).decode("utf-8", errors="replace")
        return {"logprob": float(row[i]), "rank": int((row > row[i]).sum()) + 1, "decoded_token": text}

    return {str(i): entry(i) for i in sorted(chosen, key=lambda i: -row[i])}


CHAT = "/v1/chat/completions"


class TeacherRoutes:
    """ASGI wrapper: /tokenize, completions asking for prompt_logprobs and the usage of streamed chat answers;
    the rest to llama-cpp-python."""

    def __init__(self, inner: App) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        ours = scope.get("method") == "POST" and path in ("/tokenize", "/v1/completions", CHAT)
        if scope["type"] != "http" or not ours:
            await self.inner(scope, receive, send)
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        try:
            body = json.loads(raw or b"{}")
        except ValueError:  # llama-cpp-python answers a malformed request itself
            await self.inner(scope, _replay(raw, receive), send)
            return
        if path == CHAT:
            if wants_usage(body):
                _, counted = await _answer("/tokenize", {"messages": body.get("messages", [])})
                send = UsageChunk(send, len(counted.get("tokens", [])))
            await self.inner(scope, _replay(raw, receive), send)
            return
        if path == "/v1/completions" and "prompt_logprobs" not in body:
            await self.inner(scope, _replay(raw, receive), send)
            return
        status, answer = await _answer(path, body)
        payload = json.dumps(answer).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


def _replay(raw: bytes, receive: Receive) -> Receive:
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        return await receive()

    return again


async def _answer(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    from llama_cpp.server import app
    from starlette.concurrency import run_in_threadpool

    proxies = cast(Any, app).get_llama_proxy()
    proxy = await proxies.__anext__()  # holds the server's model lock: requests take turns
    try:
        llama = proxy(body.get("model"))
        if path == "/tokenize":
            return 200, {"tokens": await run_in_threadpool(tokenize, llama, body)}
        tokens = [int(t) for t in body["prompt"]]
        start = int(body.get("prompt_logprobs_from", 1))
        scored = await run_in_threadpool(prompt_logprobs, llama, tokens, int(body["prompt_logprobs"]), start)
        choice = {"index": 0, "text": "", "prompt_logprobs": scored, "finish_reason": "length"}
        return 200, {"choices": [choice], "usage": {"prompt_tokens": len(tokens), "completion_tokens": 0}}
    except (KeyError, TypeError, ValueError) as e:
        return 400, {"error": {"message": f"{type(e).__name__}: {e}"}}
    finally:
        await proxies.aclose()


def without_weight_repacking() -> None:
    """Load every model without llama.cpp's extra buffer types (weights repacked for AMX/AVX kernels).

    With them, llama-cpp-python 0.3.36 built for an AVX-512 + AMX CPU dies with a segmentation fault on the
    first decode of any quantized SmolLM2 GGUF (Q8_0, Q4_K_M; BF16 runs), plain completions included; without
    them every type decodes, on the plain CPU kernels (docs/builds.md).
    """
    import llama_cpp.llama_cpp as native

    default = native.llama_model_default_params

    def params() -> Any:
        chosen = default()
        chosen.use_extra_bufts = False
        return chosen

    native.llama_model_default_params = params


def main() -> None:
    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.cli import add_args_from_model
    from llama_cpp.server.cli import parse_model_from_args as parse
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    parser = argparse.ArgumentParser(description="llama-cpp-python's server with teacher-forcing requests")
    add_args_from_model(parser, Settings)
    args = parser.parse_args()
    # Its annotations say it returns the class; it returns an instance of it.
    server: Any = parse(ServerSettings, args)
    without_weight_repacking()
    app = create_app(server_settings=server, model_settings=[cast(Any, parse(ModelSettings, args))])
    host = os.getenv("HOST", server.host)
    uvicorn.run(TeacherRoutes(app), host=host, port=int(os.getenv("PORT", server.port)), access_log=False)


if __name__ == "__main__":
    main()
