"""The shipped GGUF (`gguf-q4_1`) on the real llama-server, started as a grid with four phones starts it: one
slot per phone, the four phones' steps decoded together, each answer one action of the schema, a seed giving
the same answer again, and the usage figures every build records."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from _engines import prepared_default_builds

from agent_eval.agent.parse import parse_action
from agent_eval.agent.prompt import SYSTEM_PROMPT, action_schema
from agent_eval.builds import Serving, serve, unavailable_reason
from agent_eval.chat.client import ChatClient, ChatResult

pytestmark = [pytest.mark.engine, pytest.mark.slow]

BUILD = "gguf-q4_1"
PHONES = 4
SCREENS = ["[0] Wi-Fi [1] Display", "[0] Network & internet [1] Sound", "[0] Internet [1] SIMs", "[0] Back"]


def _step(client: ChatClient, phone: int, seed: int) -> ChatResult:
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Goal: turn on Wi-Fi. Phone {phone}. Screen: {SCREENS[phone]}"},
    ]
    return client.chat(messages, json_schema=action_schema(), seed=seed)


def test_four_phones_are_answered_at_once_by_four_slots(tmp_path: Path) -> None:
    builds, ready = prepared_default_builds()
    build = builds.get(BUILD)
    if unavailable_reason(build) or BUILD not in ready:
        pytest.skip(f"{BUILD} cannot be served here: {unavailable_reason(build) or 'not prepared'}")
    with serve(build, tmp_path, serving=Serving(slots=PHONES)) as served:
        root = served.endpoint.base_url.removesuffix("/v1")
        with ChatClient(served.endpoint) as client, ThreadPoolExecutor(PHONES) as pool:
            answers = list(pool.map(lambda p: _step(client, p, seed=100 + p), range(PHONES)))
            again = _step(client, 0, seed=100)
            usage = client.usage()
        slots = httpx.get(root + "/slots", timeout=10).json()
        record = served.record(usage)
    assert len(slots) == PHONES
    # Every slot took a phone's request: the four were not queued on one.
    assert all(slot.get("id_task") is not None for slot in slots), slots
    for answer in answers:
        assert answer.finish_reason == "stop", answer
        assert parse_action(answer.text).action is not None, answer.text
    assert again.text == answers[0].text  # the same seed, the same answer, alone or among four
    assert all(a.prompt_tokens > 10 and a.completion_tokens > 0 for a in answers), answers
    assert record.prefill_tok_s is not None and record.decode_tok_s is not None
    assert record.peak_rss_mb is not None and record.peak_rss_mb > 0
    assert "--parallel" in record.command and record.command[record.command.index("--parallel") + 1] == "4"
