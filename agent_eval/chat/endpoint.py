"""Where a build answers: an OpenAI-compatible chat endpoint and what it supports.

Produced by the engine launchers (or given by the user), consumed by the agent's client.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Endpoint:
    base_url: str  # e.g. http://127.0.0.1:8100/v1
    model: str  # the served model name sent in each request
    api_key: str = "EMPTY"
    structured_output: bool = True  # accepts response_format={"type": "json_schema", ...}
    json_object_schema: bool = False  # llama.cpp: wants {"type": "json_object", "schema": ...} instead
    accepts_images: bool = False
    scores_from_answer: bool = False  # llama.cpp: prompt_logprobs scored from `prompt_logprobs_from` on
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 96
    timeout_s: float = 120.0
    extra_body: tuple[
        tuple[str, object], ...
    ] = ()  # engine-specific request fields (e.g. repeat_penalty=1.0)
