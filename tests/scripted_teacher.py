"""A real HTTP server on 127.0.0.1 that answers vLLM's teacher-forcing calls with known log-probabilities.

`/tokenize` turns text into one token per character (its code point) and renders a chat as `<role>content`,
the assistant turn ending in token 0; `/v1/completions` returns `prompt_logprobs` where, at every position,
the forced token has probability `forced`, token 1 has `runner_up` and the rest of the mass is elsewhere.
"""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

END = 0  # the end-of-turn token
RUNNER_UP = 1


def render(messages: list[dict[str, Any]], add_generation_prompt: bool) -> list[int]:
    ids: list[int] = []
    for m in messages:
        ids += [ord(c) for c in f"<{m['role']}>{m['content']}"]
        if m["role"] == "assistant":
            ids.append(END)
    if add_generation_prompt:
        ids += [ord(c) for c in "<assistant>"]
    return ids


class TeacherEndpoint:
    """Serves until `close()`; `base_url` ends in /v1 like a vLLM server's."""

    def __init__(self, forced: float, runner_up: float, model: str = "scripted") -> None:
        self.forced, self.runner_up, self.model = forced, runner_up, model
        self.requests: list[dict[str, Any]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _position(self, token: int) -> dict[str, Any]:
        entry = {str(token): {"logprob": math.log(self.forced), "rank": 1, "decoded_token": chr(token)}}
        if token != RUNNER_UP:
            entry[str(RUNNER_UP)] = {"logprob": math.log(self.runner_up), "rank": 2, "decoded_token": "\x01"}
        return entry

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.requests.append({"path": path, **body})
        if path == "/tokenize":
            if "messages" in body:
                return {"tokens": render(body["messages"], bool(body.get("add_generation_prompt")))}
            return {"tokens": [ord(c) for c in body["prompt"]]}
        if path == "/v1/completions":
            prompt = body["prompt"]
            logprobs = [None] + [self._position(t) for t in prompt[1:]]
            return {
                "choices": [{"text": "", "prompt_logprobs": logprobs, "finish_reason": "length"}],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": 1},
            }
        raise KeyError(path)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                try:
                    data, status = owner.answer(self.path, body), 200
                except KeyError:
                    data, status = {"error": f"no route {self.path}"}, 404
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: object) -> None:
                pass

        return Handler
