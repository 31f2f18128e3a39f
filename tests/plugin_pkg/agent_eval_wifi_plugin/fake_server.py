"""`python -m agent_eval_wifi_plugin.fake_server PORT MODEL LABEL...`: the `scripted-taps` engine's server.

A tiny OpenAI-compatible server (GET /v1/models, POST /v1/completions and /v1/chat/completions, answered in
one piece) whose "model" taps the elements labelled LABEL, one per step (the prompt's "Step k of N"), then
answers done.
"""

from __future__ import annotations

import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STEP = re.compile(r"Step (\d+) of \d+")
ELEMENT = re.compile(r'^\[(\d+)\] \S+ "((?:[^"\\]|\\.)*)"', re.MULTILINE)


def prompt_text(body: dict[str, Any]) -> str:
    parts = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [p.get("text", "") for p in content if isinstance(p, dict)]
    return "\n".join(parts)


def reply(prompt: str, taps: list[str]) -> str:
    found = STEP.search(prompt)
    step = int(found.group(1)) if found else 1
    if step > len(taps):
        return json.dumps({"type": "done"})
    for number, label in ELEMENT.findall(prompt):
        if json.loads(f'"{label}"') == taps[step - 1]:
            return json.dumps({"type": "tap", "element": int(number)})
    return json.dumps({"type": "back"})


def handler(model: str, taps: list[str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.answer({"object": "list", "data": [{"id": model, "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
            usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
            if self.path.rstrip("/").endswith("/completions") and "messages" not in body:
                choice = {"index": 0, "text": " ", "finish_reason": "length"}
                self.answer({"object": "text_completion", "choices": [choice], "usage": usage})
                return
            message = {"role": "assistant", "content": reply(prompt_text(body), taps)}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            self.answer({"object": "chat.completion", "model": model, "choices": [choice], "usage": usage})

        def answer(self, obj: dict[str, Any]) -> None:
            data = json.dumps(obj).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


if __name__ == "__main__":
    port, model, *labels = sys.argv[1:]
    ThreadingHTTPServer(("127.0.0.1", int(port)), handler(model, labels)).serve_forever()
