"""The chat client for any OpenAI-compatible endpoint: one request per agent step, with retries and timing.

It also keeps a per-client usage tally (requests, tokens, time to first token, decode time) for tok/s figures.
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

import httpx

from agent_eval.chat.endpoint import Endpoint
from agent_eval.closing import Closing
from agent_eval.errors import ConfigError, EngineError

Message = dict[str, Any]


@dataclass(frozen=True)
class TokenLogprob:
    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()  # the top alternatives at this position, best first


@dataclass(frozen=True)
class ChatResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float  # request sent → last byte received
    first_token_s: float | None  # request sent → first generated text (streaming only)
    finish_reason: str | None
    logprobs: tuple[TokenLogprob, ...] | None = None
    attempts: int = 1  # 1 + retries spent on this request
    waited_s: float = 0.0  # the whole call, failed attempts and backoff included


@dataclass(frozen=True)
class Usage:
    """What a client has sent and received so far; the builds part turns it into the engine's tok/s."""

    requests: int = 0
    failed_requests: int = 0  # requests that ended in EngineError after their retries
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_s: float = 0.0  # sum of request latencies
    # Streamed requests only: time to the first token (prefill + queueing) and the rest (decode).
    timed_requests: int = 0
    timed_prompt_tokens: int = 0
    timed_decode_tokens: int = 0  # completion tokens after the first one
    first_token_s: float = 0.0
    decode_s: float = 0.0

    @property
    def decode_tok_s(self) -> float | None:
        """Generated tokens per second after the first token; None before any streamed request."""
        if self.decode_s > 0 and self.timed_decode_tokens > 0:
            return self.timed_decode_tokens / self.decode_s
        if self.total_s > 0 and self.completion_tokens > 0 and self.timed_requests == 0:
            # Without streaming, prefill cannot be split off: this understates decode speed.
            return self.completion_tokens / self.total_s
        return None

    @property
    def prefill_tok_s(self) -> float | None:
        """Prompt tokens per second until the first token (includes queueing when requests overlap)."""
        if self.first_token_s > 0 and self.timed_prompt_tokens > 0:
            return self.timed_prompt_tokens / self.first_token_s
        return None


def add_usage(a: Usage, b: Usage) -> Usage:
    """Two clients' tallies as one (a build served again in a later phase, or asked from many nodes)."""
    return dataclasses.replace(
        a, **{f.name: getattr(a, f.name) + getattr(b, f.name) for f in dataclasses.fields(Usage)}
    )


def check_endpoint_url(url: str) -> None:
    """Raise ConfigError unless `url` can be an OpenAI-compatible base URL."""
    if not url.startswith(("http://", "https://")):
        raise ConfigError(
            f"endpoint URL {url!r} must start with http:// or https:// (e.g. http://127.0.0.1:8000/v1)"
        )


class EndpointSession(Closing):
    """An HTTP session with one endpoint (its API key as bearer token), closed on leaving a `with` block.

    Thread-safe (httpx.Client is). The chat client and the teacher-forcing client are both one.
    """

    def __init__(self, endpoint: Endpoint, *, connect_timeout_s: float = 5.0) -> None:
        check_endpoint_url(endpoint.base_url)
        self.endpoint = endpoint
        self._http = httpx.Client(
            timeout=httpx.Timeout(endpoint.timeout_s, connect=connect_timeout_s),
            headers={"Authorization": f"Bearer {endpoint.api_key}"},
        )

    def close(self) -> None:
        self._http.close()


class RequestOptions(TypedDict, total=False):
    """What one chat request asks beyond the endpoint's own settings (`ChatClient.chat`, `request_body`)."""

    json_schema: dict[str, Any] | None  # the answer's JSON schema, for engines with structured output
    seed: int | None
    logprobs: bool
    top_logprobs: int  # alternatives per position, with logprobs


class ChatClient(EndpointSession):
    """Sends chat requests to one endpoint. Thread-safe: several devices may share one client."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        stream: bool = True,
        retries: int = 2,
        backoff_s: float = 0.5,
        connect_timeout_s: float = 5.0,
    ) -> None:
        super().__init__(endpoint, connect_timeout_s=connect_timeout_s)
        self.stream = stream
        self.retries = retries
        self.backoff_s = backoff_s
        self._url = endpoint.base_url.rstrip("/") + "/chat/completions"
        self._lock = threading.Lock()
        self._usage = Usage()

    def usage(self) -> Usage:
        with self._lock:
            return self._usage

    def request_body(self, messages: Sequence[Message], **options: Unpack[RequestOptions]) -> dict[str, Any]:
        """The JSON body sent for one chat request (public so tests and manifests can show it)."""
        ep = self.endpoint
        seed, json_schema = options.get("seed"), options.get("json_schema")
        top_logprobs = options.get("top_logprobs", 0)
        body: dict[str, Any] = {
            "model": ep.model,
            "messages": list(messages),
            "temperature": ep.temperature,
            "top_p": ep.top_p,
            "max_tokens": ep.max_tokens,
        }
        if seed is not None:
            body["seed"] = seed
        if json_schema is not None:
            if ep.json_object_schema:
                # llama.cpp's server rejects OpenAI's json_schema form with HTTP 500; it takes this one.
                body["response_format"] = {"type": "json_object", "schema": json_schema}
            elif ep.structured_output:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "action", "schema": json_schema},
                }
        if options.get("logprobs"):
            body["logprobs"] = True
            if top_logprobs:
                body["top_logprobs"] = top_logprobs
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        body.update(dict(ep.extra_body))
        return body

    def chat(self, messages: Sequence[Message], **options: Unpack[RequestOptions]) -> ChatResult:
        """One chat completion. Raises EngineError once the endpoint has failed `retries + 1` times."""
        body = self.request_body(messages, **options)
        problem = ""
        called = time.perf_counter()
        for attempt in range(1, self.retries + 2):
            if attempt > 1:
                time.sleep(self.backoff_s * 2 ** (attempt - 2))
            try:
                result = self._send(body)
            except _Retryable as e:
                problem = str(e)
                continue
            except _Fatal as e:
                self._count_failure(attempt - 1)
                raise EngineError(f"endpoint {self._url}: {e}") from None
            result = dataclasses.replace(result, attempts=attempt, waited_s=time.perf_counter() - called)
            self._count(result)
            return result
        self._count_failure(self.retries)
        raise EngineError(f"endpoint {self._url}: {problem} (gave up after {self.retries + 1} attempts)")

    def _send(self, body: dict[str, Any]) -> ChatResult:
        start = time.perf_counter()
        try:
            if body.get("stream"):
                with self._http.stream("POST", self._url, json=body) as response:
                    _raise_for_status(response, read=True)
                    if response.headers.get("content-type", "").startswith("application/json"):
                        # Some servers ignore `stream` and answer in one piece.
                        response.read()
                        return _read_whole(response.text, time.perf_counter() - start)
                    return _read_stream(response.iter_lines(), start)
            response = self._http.post(self._url, json=body)
            _raise_for_status(response, read=False)
            return _read_whole(response.text, time.perf_counter() - start)
        except httpx.ConnectError as e:
            raise _Retryable(f"connection refused or unreachable ({e}); is the server running?") from None
        except httpx.TimeoutException:
            raise _Retryable(f"no answer within {self.endpoint.timeout_s:g} s (timeout)") from None
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as e:
            raise _Retryable(f"the connection broke mid-answer ({e})") from None
        except httpx.HTTPError as e:
            raise _Fatal(f"the request could not be made: {type(e).__name__}: {e}") from None

    def _count(self, r: ChatResult) -> None:
        with self._lock:
            u = self._usage
            timed = r.first_token_s is not None and r.completion_tokens > 0
            first = r.first_token_s or 0.0
            self._usage = Usage(
                requests=u.requests + 1,
                failed_requests=u.failed_requests,
                retries=u.retries + r.attempts - 1,
                prompt_tokens=u.prompt_tokens + r.prompt_tokens,
                completion_tokens=u.completion_tokens + r.completion_tokens,
                total_s=u.total_s + r.latency_s,
                timed_requests=u.timed_requests + (1 if timed else 0),
                timed_prompt_tokens=u.timed_prompt_tokens + (r.prompt_tokens if timed else 0),
                timed_decode_tokens=u.timed_decode_tokens + (r.completion_tokens - 1 if timed else 0),
                first_token_s=u.first_token_s + (first if timed else 0.0),
                decode_s=u.decode_s + (max(r.latency_s - first, 0.0) if timed else 0.0),
            )

    def _count_failure(self, retries: int) -> None:
        with self._lock:
            u = self._usage
            self._usage = Usage(
                **{
                    **u.__dict__,
                    "requests": u.requests + 1,
                    "failed_requests": u.failed_requests + 1,
                    "retries": u.retries + retries,
                }
            )


class _Retryable(Exception):
    """A failure that another attempt may not repeat: refused connection, 5xx, timeout, garbage."""


class _Fatal(Exception):
    """A failure that retrying cannot fix: the endpoint rejected the request itself (4xx)."""


def _raise_for_status(response: httpx.Response, *, read: bool) -> None:
    if response.status_code < 400:
        return
    if read:
        response.read()
    detail = _error_detail(response.text)
    message = f"HTTP {response.status_code}" + (f": {detail}" if detail else "")
    if response.status_code >= 500 or response.status_code == 429:
        raise _Retryable(message)
    raise _Fatal(message)


def _error_detail(text: str) -> str:
    try:
        data = json.loads(text)
    except ValueError:
        return _clip(text)
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        if err is not None:
            return _clip(str(err))
    return _clip(text)


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _garbage(what: str, sample: str) -> _Retryable:
    return _Retryable(
        f"answered something that is not an OpenAI chat completion ({what}): {_clip(sample, 120)!r}"
    )


def _read_whole(text: str, latency_s: float) -> ChatResult:
    try:
        data = json.loads(text)
    except ValueError:
        raise _garbage("not JSON", text) from None
    try:
        choice = data["choices"][0]
        content = choice["message"].get("content") or ""
        usage = data.get("usage") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        raise _garbage("no choices[0].message", text) from None
    if not isinstance(content, str):
        raise _garbage("content is not text", text)
    return ChatResult(
        text=content,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        latency_s=latency_s,
        first_token_s=None,
        finish_reason=choice.get("finish_reason"),
        logprobs=_parse_logprobs(choice.get("logprobs")),
    )


def _read_stream(lines: Iterator[str], start: float) -> ChatResult:
    parts: list[str] = []
    logprobs: list[TokenLogprob] | None = None
    first_token_s: float | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] = {}
    chunks = 0
    saw_done = False
    for line in lines:
        line = line.strip()
        if not line or line.startswith(":"):
            continue
        if not line.startswith("data:"):
            raise _garbage("a stream line without 'data:'", line)
        payload = line[5:].strip()
        if payload == "[DONE]":
            saw_done = True
            break
        try:
            chunk = json.loads(payload)
        except ValueError:
            raise _garbage("a stream chunk that is not JSON", payload) from None
        if not isinstance(chunk, dict):
            raise _garbage("a stream chunk that is not an object", payload)
        if "error" in chunk:
            raise _Retryable(f"error in the stream: {_error_detail(payload)}")
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if text:
                if first_token_s is None:
                    first_token_s = time.perf_counter() - start
                parts.append(text)
                chunks += 1
            got = _parse_logprobs(choice.get("logprobs"))
            if got:
                logprobs = (logprobs or []) + list(got)
            if choice.get("finish_reason"):
                finish_reason = choice["finish_reason"]
    latency = time.perf_counter() - start
    if not saw_done and finish_reason is None:
        raise _Retryable("the stream ended without a finish reason (the server cut the answer off)")
    completion_tokens = int(usage.get("completion_tokens") or 0)
    if not usage:
        # Servers that ignore include_usage send about one token per chunk.
        completion_tokens = len(logprobs) if logprobs else chunks
    return ChatResult(
        text="".join(parts),
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=completion_tokens,
        latency_s=latency,
        first_token_s=first_token_s,
        finish_reason=finish_reason,
        logprobs=tuple(logprobs) if logprobs is not None else None,
    )


def _parse_logprobs(raw: Any) -> tuple[TokenLogprob, ...] | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("content"), list):
        return None
    out: list[TokenLogprob] = []
    for entry in raw["content"]:
        if not isinstance(entry, dict):
            continue
        top = tuple(
            (str(t.get("token", "")), _finite(t.get("logprob")))
            for t in entry.get("top_logprobs") or []
            if isinstance(t, dict)
        )
        out.append(TokenLogprob(str(entry.get("token", "")), _finite(entry.get("logprob")), top))
    return tuple(out)


def _finite(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return -math.inf
