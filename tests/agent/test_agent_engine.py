"""The agent against the real default model on vLLM CPU: `agent-eval run --endpoint` with the reference build.

SmolLM2-135M is a weak agent, so this checks the plumbing, not its score: the engine takes the action schema,
every answer parses (structured output), tokens and speeds are recorded, the episode is scored.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _engines import SharedReference

from virtual_phone import start_fleet

REPO = Path(__file__).resolve().parents[2]
AGENT_EVAL = str(Path(sys.executable).parent / "agent-eval")

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def test_the_reference_build_plays_wifi_on_with_every_answer_parsed(
    tmp_path: Path, shared_reference: SharedReference
) -> None:
    served = shared_reference.get()  # the reference's engine, shared with tests/builds/test_builds_engine.py
    reference = served.build
    run_dir = tmp_path / "run"
    with start_fleet(count=1, base_port=5840) as fleet:
        endpoint = served.endpoint
        args = [AGENT_EVAL, "run", str(REPO / "tasks" / "wifi_on.yaml"), "--endpoint", endpoint.base_url]
        args += ["--model", endpoint.model, "--device", fleet.serials[0], "--run-dir", str(run_dir)]
        args += ["--max-steps", "3", "--build-name", reference.name]
        env = {**os.environ, "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
        result = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env, check=False)
    assert result.returncode == 0, result.stderr
    (episode,) = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    assert episode["outcome"] in {"nav_fail", "premature_done", "success", "no_stop", "undone"}
    steps_file = run_dir / "episodes" / reference.name / "wifi_on" / "0" / "steps.jsonl"
    steps = [json.loads(line) for line in steps_file.read_text().splitlines()]
    for step in steps:
        # Structured output: the engine could only answer with one of the schema's actions.
        assert step["action"] is not None, (step["raw_answer"], step["invalid_reason"])
        assert json.loads(step["raw_answer"])["type"] == step["action"]["type"]
        assert step["prompt_tokens"] > 200 and step["completion_tokens"] > 0
        assert step["latency"]["model_s"] > step["latency"]["harness_s"]
    engine = json.loads((run_dir / "engines" / f"{reference.name}.json").read_text())
    assert engine["requests"] == len(steps)
    assert engine["decode_tok_s"] > 0 and engine["prefill_tok_s"] > 0
