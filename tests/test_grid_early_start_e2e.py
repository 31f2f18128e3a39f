"""A real grid (two vLLM builds, one task, 2 seeds, 2 virtual phones) starts w8a8's engine while bf16's last
cell plays: engines/w8a8.json and the busy table show the start the grid did not wait for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from _engines import prepared_default_builds

from agent_eval.records import EngineRecord, EpisodeRecord, Outcome

REPO = Path(__file__).resolve().parent.parent
AGENT_EVAL = str(Path(sys.executable).parent / "agent-eval")

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def _guards_of(harness: int) -> list[int]:
    """Engine guards still running for that harness (`_guard.py HARNESS_PID -- ...`)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        line = proc.info["cmdline"] or []
        if any(part.endswith("_guard.py") for part in line) and str(harness) in line:
            found.append(proc.info["pid"])
    return found


def test_the_next_build_s_engine_starts_while_the_last_cell_plays(tmp_path: Path) -> None:
    prepared_default_builds()
    run_dir = tmp_path / "run"
    args = [AGENT_EVAL, "run", "tasks/wifi_on.yaml", "--builds", "bf16,w8a8", "--reference", "bf16"]
    args += ["--seeds", "2", "--devices", "2", "--max-steps", "4", "--no-adaptive", "--no-bars"]
    args += ["--run-dir", str(run_dir)]
    env = {**os.environ, "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
    harness = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out, _ = harness.communicate(timeout=2400)
    text = out.decode(errors="replace")
    assert harness.returncode == 0, text[-4000:]
    print(text[-6000:])

    lines = (run_dir / "episodes.jsonl").read_text().splitlines()
    scored = [
        e for e in map(EpisodeRecord.model_validate_json, lines) if e.outcome is not Outcome.INFRA_ERROR
    ]
    assert sorted((e.build, e.seed) for e in scored) == [("bf16", 0), ("bf16", 1), ("w8a8", 0), ("w8a8", 1)]
    assert "starting the vllm-cpu engine for w8a8 early, beside the last cells" in text
    bf16 = EngineRecord.model_validate_json((run_dir / "engines" / "bf16.json").read_text())
    w8a8 = EngineRecord.model_validate_json((run_dir / "engines" / "w8a8.json").read_text())
    assert bf16.start_waited_s is None  # the first block waits for its whole start
    assert w8a8.startup_s is not None and w8a8.start_waited_s is not None
    assert w8a8.start_waited_s < w8a8.startup_s
    # w8a8 began loading before bf16's last episode ended.
    bf16_end = max(e.finished_at for e in scored if e.build == "bf16")
    w8a8_start = min(e.started_at for e in scored if e.build == "w8a8")
    assert (w8a8_start - bf16_end).total_seconds() < w8a8.startup_s

    card = json.loads((run_dir / "scorecard.json").read_text())
    rows = {r["build"]: r for r in card["engine_busy"]}
    assert rows["w8a8"]["engine_start_waited_s"] == w8a8.start_waited_s
    assert rows["bf16"]["engine_start_waited_s"] == bf16.startup_s
    assert "engine start waited s" in (run_dir / "scorecard.md").read_text()
    assert _guards_of(harness.pid) == []  # nothing outlives the harness
