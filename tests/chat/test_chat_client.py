"""The chat client against a real local HTTP server: answers, usage, retries and clear engine errors."""

from __future__ import annotations

import pytest
from scripted_endpoint import ScriptedEndpoint, answer, free_port

from agent_eval.chat.client import ChatClient
from agent_eval.chat.endpoint import Endpoint
from agent_eval.errors import ConfigError, EngineError, InfraError

MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Goal: x\nStep 1 of 3."}]
TAP_3 = '{"type": "tap", "element": 3}'


def client_for(url: str, *, stream: bool = True, timeout_s: float = 5.0, **endpoint: object) -> ChatClient:
    ep = Endpoint(base_url=url, model="scripted", timeout_s=timeout_s, **endpoint)  # type: ignore[arg-type]
    return ChatClient(ep, stream=stream, retries=2, backoff_s=0.01)


@pytest.mark.parametrize("stream", [True, False])
def test_answer_text_and_token_counts_come_back(stream: bool) -> None:
    with ScriptedEndpoint([answer(TAP_3)]) as server, client_for(server.url, stream=stream) as client:
        result = client.chat(MESSAGES, json_schema={"type": "object"}, seed=7)
        assert result.text == TAP_3
        assert result.prompt_tokens == 7  # the scripted server counts words: "sys Goal: x Step 1 of 3."
        assert result.completion_tokens == len(TAP_3) // 4
        assert result.finish_reason == "stop"
        assert (result.first_token_s is not None) is stream
        assert result.latency_s >= (result.first_token_s or 0.0)
        sent = server.requests[0]
        assert sent["seed"] == 7 and sent["model"] == "scripted" and sent["max_tokens"] == 96
        assert sent["response_format"]["type"] == "json_schema"
        assert sent["response_format"]["json_schema"]["schema"] == {"type": "object"}
        assert sent.get("stream", False) is stream


def test_usage_accumulates_over_requests_and_splits_prefill_from_decode() -> None:
    with ScriptedEndpoint([answer(TAP_3)]) as server, client_for(server.url) as client:
        for _ in range(3):
            client.chat(MESSAGES)
        usage = client.usage()
    assert usage.requests == 3 and usage.failed_requests == 0
    assert usage.completion_tokens == 3 * (len(TAP_3) // 4)
    assert usage.timed_requests == 3
    assert usage.timed_decode_tokens == usage.completion_tokens - 3
    assert usage.decode_tok_s is not None and usage.decode_tok_s > 0
    assert usage.prefill_tok_s is not None and usage.prefill_tok_s > 0


def test_llama_cpp_endpoints_get_the_json_object_form_and_extra_fields() -> None:
    with ScriptedEndpoint([answer(TAP_3)]) as server:
        client = client_for(
            server.url,
            structured_output=False,
            json_object_schema=True,
            extra_body=(("repeat_penalty", 1.0), ("temperature", 0.5)),
        )
        client.chat(MESSAGES, json_schema={"type": "object"})
        client.close()
    sent = server.requests[0]
    assert sent["response_format"] == {"type": "json_object", "schema": {"type": "object"}}
    assert sent["repeat_penalty"] == 1.0
    assert sent["temperature"] == 0.5  # extra_body wins over the endpoint's defaults


def test_no_schema_is_sent_to_an_endpoint_without_structured_output() -> None:
    with ScriptedEndpoint([answer(TAP_3)]) as server, client_for(server.url, structured_output=False) as c:
        c.chat(MESSAGES, json_schema={"type": "object"})
    assert "response_format" not in server.requests[0]


def test_a_failure_then_success_is_retried_transparently() -> None:
    with ScriptedEndpoint([answer(TAP_3)], fail="flaky") as server, client_for(server.url) as client:
        result = client.chat(MESSAGES)
        assert result.text == TAP_3 and result.attempts == 2
        assert result.waited_s >= result.latency_s + 0.01  # the failed attempt and the backoff count too
        assert client.usage().retries == 1
        assert len(server.requests) == 2


def test_refused_connection_is_an_engine_error_naming_the_endpoint() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with client_for(url) as client, pytest.raises(EngineError) as err:
        client.chat(MESSAGES)
    message = str(err.value)
    assert url in message and "connection refused" in message and "3 attempts" in message
    assert isinstance(err.value, InfraError)
    assert client.usage().failed_requests == 1


def test_http_500_is_retried_then_reported_with_the_servers_message() -> None:
    with ScriptedEndpoint(fail="http500") as server, client_for(server.url) as client:
        with pytest.raises(EngineError, match=r"HTTP 500: scripted failure: the engine crashed"):
            client.chat(MESSAGES)
        assert len(server.requests) == 3


def test_garbage_body_is_reported_as_not_a_chat_completion() -> None:
    for stream in (True, False):
        with (
            ScriptedEndpoint(fail="garbage") as server,
            client_for(server.url, stream=stream) as client,
            pytest.raises(EngineError, match=r"not an OpenAI chat completion.*502 Bad Gateway"),
        ):
            client.chat(MESSAGES)


def test_a_slow_endpoint_times_out_with_a_clear_message() -> None:
    with ScriptedEndpoint([answer(TAP_3)], delay_s=1.0) as server:
        client = ChatClient(Endpoint(base_url=server.url, model="m", timeout_s=0.2), retries=0)
        with pytest.raises(EngineError, match=r"no answer within 0.2 s \(timeout\)"):
            client.chat(MESSAGES)
        client.close()


def test_a_rejected_request_is_not_retried() -> None:
    with ScriptedEndpoint([answer(TAP_3)]) as server:
        wrong = Endpoint(base_url=server.url.replace("/v1", "/v2"), model="m")
        client = ChatClient(wrong, retries=2, backoff_s=0.01)
        with pytest.raises(EngineError, match="HTTP 404"):
            client.chat(MESSAGES)
        client.close()
        assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [True, False])
def test_log_probs_come_back_per_token_with_their_alternatives(stream: bool) -> None:
    with ScriptedEndpoint([answer(TAP_3)]) as server, client_for(server.url, stream=stream) as client:
        result = client.chat(MESSAGES, logprobs=True, top_logprobs=3)
        plain = client.chat(MESSAGES)
    assert server.requests[0]["logprobs"] is True and server.requests[0]["top_logprobs"] == 3
    assert result.logprobs is not None and plain.logprobs is None
    assert "".join(t.token for t in result.logprobs) == TAP_3
    first = result.logprobs[0]
    assert first.logprob == -0.25
    assert first.top == ((TAP_3[:4], -0.25), ("x", -1.0), ("y", -2.0))


def test_a_stream_without_usage_counts_its_chunks_as_tokens() -> None:
    with ScriptedEndpoint([answer(TAP_3)], stream_usage=False) as server, client_for(server.url) as client:
        result = client.chat(MESSAGES)
        usage = client.usage()
    assert result.text == TAP_3
    assert result.completion_tokens == -(-len(TAP_3) // 4)  # one chunk per 4 characters
    assert result.prompt_tokens == 0
    assert usage.decode_tok_s is not None and usage.prefill_tok_s is None


def test_an_endpoint_url_without_a_scheme_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"'localhost:8000/v1' must start with http:// or https://"):
        ChatClient(Endpoint(base_url="localhost:8000/v1", model="m"))
