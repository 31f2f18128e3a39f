"""`early_engine_start: true` on a real grid (two vLLM builds, one task, 3 seeds, 2 virtual phones) starts
w8a8's engine while bf16's last cell plays on one phone and the other idles: engines/w8a8.json and the busy
table show the start the grid did not wait for. Also prints how much of the phones' reset time the engine
sat idle (the rest overlapped another phone's model calls). And `fidelity: first` on real engines: w8a8's
early warning comes before its episodes, from the engine they then use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import psutil
import pytest
from _engines import prepared_default_builds

from agent_eval.records import EngineRecord, EpisodeRecord, Outcome

REPO = Path(__file__).resolve().parents[2]
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


def _reset_s(run_dir: Path, episode: EpisodeRecord) -> float:
    """A phone's reset and first observation: its episode's start to its first model call."""
    steps = (run_dir / episode.episode_dir / "steps.jsonl").read_text().splitlines()
    first = json.loads(steps[0])["model_started_at"]
    return float(first) - episode.started_at.timestamp()


def test_the_next_build_s_engine_starts_while_the_last_cell_plays(tmp_path: Path) -> None:
    prepared_default_builds()
    run_dir = tmp_path / "run"
    # With 3 seeds on 2 phones, bf16's third episode plays alone (the tail) while the other phone idles.
    grid = {
        "tasks": [str(REPO / "tasks" / "bluetooth_on.yaml")],
        "builds": ["bf16", "w8a8"],
        "reference": "bf16",
        "seeds": 3,
        "devices": 2,
        "max_steps": 8,
        "adaptive": {"enabled": False},
        "early_engine_start": True,
        "run_dir": str(run_dir),
    }
    (tmp_path / "grid.yaml").write_text(json.dumps(grid))  # JSON is YAML
    args = [AGENT_EVAL, "run", str(tmp_path / "grid.yaml"), "--no-bars"]
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
    assert sorted((e.build, e.seed) for e in scored) == [(b, s) for b in ("bf16", "w8a8") for s in range(3)]
    assert "starting the vllm-cpu engine for w8a8 early, beside the last cells" in text
    bf16 = EngineRecord.model_validate_json((run_dir / "engines" / "bf16.json").read_text())
    w8a8 = EngineRecord.model_validate_json((run_dir / "engines" / "w8a8.json").read_text())
    assert bf16.startup_s is not None and bf16.start_waited_s is not None
    assert bf16.start_waited_s >= bf16.startup_s  # the first block waits for its whole start
    assert w8a8.startup_s is not None and w8a8.start_waited_s is not None
    assert w8a8.start_waited_s < w8a8.startup_s  # the usual start would wait at least startup_s
    # Between bf16's last episode and w8a8's first, the engine start idled the grid for less than a start.
    bf16_end = max(e.finished_at for e in scored if e.build == "bf16")
    w8a8_start = min(e.started_at for e in scored if e.build == "w8a8")
    gap = (w8a8_start - bf16_end).total_seconds()
    assert gap < w8a8.startup_s
    print(f"bf16: startup {bf16.startup_s} s, waited {bf16.start_waited_s} s")
    print(f"w8a8: startup {w8a8.startup_s} s, waited {w8a8.start_waited_s} s, gap between blocks {gap:.1f} s")

    card = json.loads((run_dir / "scorecard.json").read_text())
    rows = {r["build"]: r for r in card["engine_busy"]}
    assert rows["w8a8"]["engine_start_waited_s"] == w8a8.start_waited_s
    assert rows["bf16"]["engine_start_waited_s"] == bf16.start_waited_s
    assert "engine start waited s" in (run_dir / "scorecard.md").read_text()
    for build, row in rows.items():
        resets = sum(_reset_s(run_dir, e) for e in scored if e.build == build)
        print(
            f"{build}: busy {row['busy_share']:.2f}, phones resetting {resets:.1f} s in all, of which "
            f"the engine idled {row['idle_phone_reset_s']:.1f} s; last cells {row['idle_last_cells_s']:.1f} s"
        )
    assert _guards_of(harness.pid) == []  # nothing outlives the harness


def test_fidelity_first_warns_before_the_episodes_on_the_engine_already_served(tmp_path: Path) -> None:
    prepared_default_builds()
    run_dir = tmp_path / "run"
    grid = {
        "tasks": [str(REPO / "tasks" / "wifi_on.yaml")],
        "builds": ["bf16", "w8a8"],
        "reference": "bf16",
        "seeds": 2,
        "devices": 2,
        "max_steps": 4,
        "adaptive": {"enabled": False},
        "fidelity": "first",
        "run_dir": str(run_dir),
    }
    (tmp_path / "grid.yaml").write_text(json.dumps(grid))
    env = {**os.environ, "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [AGENT_EVAL, "run", str(tmp_path / "grid.yaml"), "--no-bars"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=2400,
        env=env,
        check=False,
    )
    text = result.stdout + result.stderr
    assert result.returncode == 0, text[-4000:]
    print(text[-5000:])
    lines = text.splitlines()
    said = next(
        i for i, line in enumerate(lines) if "w8a8 not flagged" in line or "fidelity flags w8a8" in line
    )
    first_episode = next(i for i, line in enumerate(lines) if " w8a8 wifi_on seed " in line)
    assert said < first_episode  # the warning comes before the build's episodes
    assert text.count("starting the vllm-cpu engine for w8a8") == 1  # probed on the engine its episodes use

    episodes = [EpisodeRecord.model_validate_json(line) for line in (run_dir / "episodes.jsonl").open()]
    fidelity = json.loads((run_dir / "fidelity.json").read_text())
    (warning,) = fidelity["early_warnings"]
    assert warning["build"] == "w8a8" and warning["steps"] >= 2 and warning["probe_s"] > 0
    warned = datetime.fromisoformat(warning["warned_at"])
    assert warned < min(e.started_at for e in episodes if e.build == "w8a8")
    assert "## Early warning (fidelity first)" in (run_dir / "scorecard.md").read_text()
