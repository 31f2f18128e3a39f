"""A real OpenAI-compatible HTTP server on 127.0.0.1 that plays a script of actions, for end-to-end tests.

Each answer is chosen by reading the prompt's element list (tap the element labelled "Wi-Fi"), so the tests
exercise the real prompt, client, parser, driver and scoring — not a model. It can also misbehave on purpose.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A move reads the prompt text and answers with the model's raw text.
Move = Callable[[str], str]

_STEP = re.compile(r"Step (\d+) of (\d+)")
_ELEMENT = re.compile(r'^\[(\d+)\] \S+ "((?:[^"\\]|\\.)*)"(.*)$', re.MULTILINE)


def element_number(prompt: str, label: str) -> int | None:
    """The number of the first listed element whose label is exactly `label`."""
    for m in _ELEMENT.finditer(prompt):
        if json.loads(f'"{m.group(2)}"') == label:
            return int(m.group(1))
    return None


def tap(label: str) -> Move:
    def move(prompt: str) -> str:
        n = element_number(prompt, label)
        if n is None:
            # Visible in the run's steps.jsonl as an invalid answer, and in ScriptedEndpoint.misses.
            return f"no element labelled {label!r} on this screen"
        return json.dumps({"type": "tap", "element": n})

    move.__name__ = f"tap({label!r})"
    return move


def answer(obj: dict[str, Any] | str) -> Move:
    text = obj if isinstance(obj, str) else json.dumps(obj)
    return lambda prompt: text


DONE = answer({"type": "done"})
WAIT = answer({"type": "wait", "seconds": 0})


def free_port() -> int:
    """A port nothing listens on right now (for a 'connection refused' endpoint)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ScriptedEndpoint:
    """Serves /v1/chat/completions (streamed or not) and /v1/models from a script indexed by step number.

    The step comes from the prompt's "Step k of N" line, so every episode replays the script from its start;
    steps past the end of the script repeat its last move. `fail` makes it misbehave: "http500" (always),
    "garbage" (HTTP 200 with an HTML page), or "flaky" (HTTP 503 on every other request).
    """

    def __init__(
        self,
        script: Sequence[Move] = (),
        *,
        fail: str | None = None,
        delay_s: float = 0.0,
        model: str = "scripted",
        stream_usage: bool = True,
        port: int = 0,
    ) -> None:
        self.script = list(script)
        self.fail = fail
        self.delay_s = delay_s
        self.model = model
        self.stream_usage = stream_usage  # False: ignore include_usage, as some servers do
        self.requests: list[dict[str, Any]] = []
        self.misses: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())  # 0: any free port
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._serve, name="scripted", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _serve(self) -> None:
        self._server.serve_forever(poll_interval=0.05)  # a quick shutdown keeps the tests fast

    def start(self) -> ScriptedEndpoint:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reply_to(self, body: dict[str, Any]) -> str:
        """The answer text for one request body."""
        prompt = _prompt_text(body)
        m = _STEP.search(prompt)
        step = int(m.group(1)) if m else 1
        if not self.script:
            return json.dumps({"type": "wait", "seconds": 0})
        move = self.script[min(step, len(self.script)) - 1]
        text = move(prompt)
        if text.startswith("no element labelled"):
            with self._lock:
                self.misses.append(f"step {step}: {text}")
        return text

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle(self) -> None:
                # A client that closes a kept-alive connection (or gives up) is not the server's problem.
                with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                    super().handle()

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": endpoint.model, "object": "model"}]})
                else:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with endpoint._lock:
                    endpoint.requests.append(body)
                    count = len(endpoint.requests)
                if endpoint.delay_s:
                    time.sleep(endpoint.delay_s)
                if endpoint.fail == "http500" or (endpoint.fail == "flaky" and count % 2 == 1):
                    code = 500 if endpoint.fail == "http500" else 503
                    self._json(code, {"error": {"message": "scripted failure: the engine crashed"}})
                    return
                if endpoint.fail == "garbage":
                    self._raw(200, "text/html", b"<html><body>502 Bad Gateway (nginx)</body></html>")
                    return
                if self.path.rstrip("/") == "/v1/completions":
                    # The launcher's first-token check of a server it started.
                    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
                    choice = {"index": 0, "text": " ", "finish_reason": "length"}
                    self._json(200, {"object": "text_completion", "choices": [choice], "usage": usage})
                    return
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                text = endpoint.reply_to(body)
                usage = {
                    "prompt_tokens": len(_prompt_text(body).split()),
                    "completion_tokens": max(1, len(text) // 4),
                }
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                if body.get("stream"):
                    # The client may have given up already (a timeout test).
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        self._stream(text, usage, body)
                else:
                    self._json(
                        200,
                        {
                            "id": f"chatcmpl-{count}",
                            "object": "chat.completion",
                            "model": endpoint.model,
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": text},
                                    "logprobs": _logprobs(_pieces(text), body),
                                    "finish_reason": "stop",
                                }
                            ],
                            "usage": usage,
                        },
                    )

            def _stream(self, text: str, usage: dict[str, int], body: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for piece in _pieces(text):
                    delta = {
                        "index": 0,
                        "delta": {"content": piece},
                        "logprobs": _logprobs([piece], body),
                        "finish_reason": None,
                    }
                    self._event({"choices": [delta]})
                self._event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                if endpoint.stream_usage and (body.get("stream_options") or {}).get("include_usage"):
                    self._event({"choices": [], "usage": usage})
                self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")

            def _event(self, obj: dict[str, Any]) -> None:
                self._chunk(b"data: " + json.dumps(obj).encode() + b"\n\n")

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _json(self, code: int, obj: dict[str, Any]) -> None:
                self._raw(code, "application/json", json.dumps(obj).encode())

            def _raw(self, code: int, content_type: str, data: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _pieces(text: str) -> list[str]:
    """The answer cut into 4-character "tokens" (as the usage counts them)."""
    return [text[i : i + 4] for i in range(0, len(text), 4)] or [""]


def _logprobs(pieces: list[str], body: dict[str, Any]) -> dict[str, Any] | None:
    """Made-up but well-formed log-probs: each piece at -0.25, then alternatives "x", "y", … lower."""
    if not body.get("logprobs"):
        return None
    k = int(body.get("top_logprobs") or 0)
    content = []
    for piece in pieces:
        top = [{"token": piece, "logprob": -0.25}]
        top += [{"token": chr(ord("x") + i), "logprob": -1.0 - i} for i in range(max(k - 1, 0))]
        content.append({"token": piece, "logprob": -0.25, "top_logprobs": top[:k]})
    return {"content": content}


def _prompt_text(body: dict[str, Any]) -> str:
    parts: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n".join(parts)
