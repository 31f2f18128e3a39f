"""Each default vLLM weight scheme, prepared and served on the real CPU engine the way `agent-eval run` serves
it (one build per scheme: bf16-base is served like bf16, and the main-job test serves it).

One server at a time: each build's server starts once for this module and is shared by its tests (the
reference's once per session, shared with the agent test too).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _engines import SharedReference, prepared_default_builds, servable_vllm_schemes

from agent_eval.agent.prompt import action_schema
from agent_eval.builds import ServedBuild, serve
from agent_eval.builds.serving.memory import tree_pids
from agent_eval.chat.client import ChatClient
from agent_eval.chat.teacher import TeacherClient
from agent_eval.errors import BuildError
from agent_eval.fidelity.mask import SchemaMask
from agent_eval.records import EngineRecord

pytestmark = [pytest.mark.engine, pytest.mark.slow]

ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["tap", "back", "done"]},
        "element": {"type": "integer", "minimum": 1, "maximum": 9},
    },
    "required": ["action", "element"],
    "additionalProperties": False,
}
PROMPT = [
    {"role": "system", "content": "You operate an Android phone. Answer with one JSON action."},
    {
        "role": "user",
        "content": "Goal: turn on Wi-Fi.\nScreen: Settings\n1. Network & internet\n2. Connected devices\n"
        "3. Display\nWhich element do you tap?",
    },
]


@pytest.fixture(scope="module", params=servable_vllm_schemes())
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedBuild]:
    builds, _ = prepared_default_builds()
    if request.param == builds.reference.name:  # the session's reference engine (the agent test's too)
        shared: SharedReference = request.getfixturevalue("shared_reference")
        yield shared.get()
        return
    run_dir = tmp_path_factory.mktemp(f"run-{request.param}")
    with serve(builds.get(request.param), run_dir) as served_build:
        yield served_build


@pytest.fixture(scope="module")
def client(served: ServedBuild) -> Iterator[ChatClient]:
    with ChatClient(served.endpoint) as chat_client:
        yield chat_client


def test_structured_output_parses(served: ServedBuild, client: ChatClient) -> None:
    for seed in (0, 1):
        result = client.chat(PROMPT, json_schema=ACTION_SCHEMA, seed=seed)
        answer = json.loads(result.text)
        assert answer["action"] in {"tap", "back", "done"}
        assert 1 <= answer["element"] <= 9
        assert result.prompt_tokens > 20 and result.completion_tokens > 0


def test_seeded_answers_repeat(client: ChatClient) -> None:
    first = client.chat(PROMPT, json_schema=ACTION_SCHEMA, seed=0)
    again = client.chat(PROMPT, json_schema=ACTION_SCHEMA, seed=0)
    assert first.text == again.text


def test_manifest_names_the_prepared_weights(served: ServedBuild) -> None:
    _, ready = prepared_default_builds()
    manifest = served.manifest
    assert manifest.name == served.build.name and manifest.engine == "vllm-cpu"
    assert manifest.weights_hash == ready[served.build.name]
    assert manifest.mode == "eager" and manifest.engine_args["max_model_len"] == 2048
    assert manifest.reference is (served.build.name == "bf16")


def test_engine_record_has_memory_startup_and_speed(served: ServedBuild, client: ChatClient) -> None:
    record = served.write_record(client.usage())
    on_disk = EngineRecord.model_validate_json(served.record_path.read_text())
    assert on_disk == record
    assert record.startup_s is not None and record.startup_s > 1
    assert record.settled_rss_mb is not None and record.settled_rss_mb > 300  # torch + weights + KV cache
    assert record.peak_rss_mb is not None and record.peak_rss_mb >= record.settled_rss_mb
    assert record.requests >= 4
    assert record.decode_tok_s is not None and record.decode_tok_s > 0
    assert record.prefill_tok_s is not None and record.prefill_tok_s > 0
    assert "--enforce-eager" in record.command and "vllm.entrypoints.openai.api_server" in record.command
    assert record.env["VLLM_CPU_OMP_THREADS_BIND"] == served.build.pinning.cpus
    assert record.pinning["cpus"] == served.build.pinning.cpus and record.mode == "eager"
    assert record.log is not None and (served.run_dir / record.log).is_file()


def test_teacher_forcing_answers_prompt_logprobs(served: ServedBuild) -> None:
    """One prefill with an answer appended gives top-k log-probabilities at every answer token; on the
    reference, its own greedy answer forced back is never below another allowed token (agreement 1.0)."""
    builds, _ = prepared_default_builds()
    answer = ChatClient(dataclasses.replace(served.endpoint, temperature=0.0), stream=False)
    with answer, TeacherClient(served.endpoint, top_k=5) as teacher:
        greedy = answer.chat(PROMPT, json_schema=action_schema()).text
        prompt_ids, answer_ids = teacher.answer_span(PROMPT, greedy)
        forced = teacher.force(prompt_ids, answer_ids)
        again = teacher.force(prompt_ids, answer_ids)
    assert len(forced.positions) == len(answer_ids) > 3
    for p in forced.positions:
        assert p.logprob <= 0 and p.rank >= 1 and p.token_id in p.top and 5 <= len(p.top) <= 6
    assert [p.top for p in again.positions] == [p.top for p in forced.positions]  # deterministic prefill
    if served.build.name == builds.reference.name:
        mask = SchemaMask(served.build.resolved_path() or Path(), action_schema())
        positions = forced.positions
        masked = mask.masked_ranks(answer_ids, [p.rank for p in positions], [p.top for p in positions])
        # Never a known deviation; unknown (None) where the grammar forced a token from outside the top-k
        # (e.g. the opening "{" of a model that would rather write prose): fidelity decodes there.
        assert all(r in (1, None) for r in masked), (greedy, masked)
        assert masked.count(1) > len(masked) // 2, (greedy, masked)


def test_a_died_server_restarts_once(served: ServedBuild, client: ChatClient) -> None:
    builds, _ = prepared_default_builds()
    if served.build.name != builds.reference.name:
        pytest.skip("restarts are exercised on the reference build only (each costs an engine start)")
    _kill_server(served)
    assert not served.alive()
    served.restart()
    assert served.alive() and served.restarts == 1
    with ChatClient(served.endpoint) as fresh:
        json.loads(fresh.chat(PROMPT, json_schema=ACTION_SCHEMA).text)
    _kill_server(served)
    with pytest.raises(BuildError, match=r"build 'bf16': its server died again after 1 restart"):
        served.restart()


def _kill_server(served: ServedBuild) -> None:
    # Kill the server process itself (not via serve()), as a crash would.
    guard = served._proc
    assert guard is not None
    server = next(p for p in tree_pids(guard.pid) if p != guard.pid)
    os.kill(server, signal.SIGKILL)
    end = time.monotonic() + 30
    while served.alive() and time.monotonic() < end:
        time.sleep(0.2)


def test_prepared_builds_are_skipped_the_second_time() -> None:
    builds, ready = prepared_default_builds()
    lines: list[str] = []
    from agent_eval.builds import prepare

    again = prepare(builds, say=lines.append)
    assert again == ready
    assert all("up to date" in line or "SKIPPED" in line for line in lines if line.startswith(tuple(ready)))


def test_run_dir_has_the_engine_log(served: ServedBuild) -> None:
    log = Path(served.log_path).read_text()
    assert served.endpoint.model in log
    # vLLM saw the thread count the launcher set for the worker it keeps in its engine core (one per CPU).
    threads = len(served.build.pinning.cpu_ids())
    assert f"OMP_NUM_THREADS={threads} is set; leaving Torch threads at {threads}" in log
