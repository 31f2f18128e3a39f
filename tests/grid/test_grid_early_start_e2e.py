"""`early_engine_start: true` and `fidelity: first` on one real grid (three vLLM builds, one task, 3 seeds,
2 virtual phones).

- The reference's block probes after its cells, so it starts no engine early: w8a8 waits for its whole start.
- w8a8's block starts bf16-base's engine while w8a8's last cell plays on one phone and the other idles:
  engines/bf16-base.json and the busy table show the start the grid did not wait for. Also prints how much of
  the phones' reset time the engine sat idle (the rest overlapped another phone's model calls).
- Each non-reference build's early warning comes before its episodes, from the engine they then use (the one
  started early, for bf16-base).

One grid for both: each engine start costs ~45 s on an AVX2 host."""

from __future__ import annotations

import json
import os
import re
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


def test_engines_start_early_and_fidelity_warns_first_on_one_grid(tmp_path: Path) -> None:
    prepared_default_builds()
    run_dir = tmp_path / "run"
    builds = ("bf16", "w8a8", "bf16-base")
    # With 3 seeds on 2 phones, each build's third episode plays alone (the tail) while the other phone idles.
    grid = {
        "tasks": [str(REPO / "tasks" / "wifi_on.yaml")],
        "builds": list(builds),
        "reference": "bf16",
        "seeds": 3,
        "devices": 2,
        "max_steps": 4,
        "adaptive": {"enabled": False},
        "early_engine_start": True,
        "fidelity": "first",
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
    assert sorted((e.build, e.seed) for e in scored) == sorted((b, s) for b in builds for s in range(3))
    engines = {
        b: EngineRecord.model_validate_json((run_dir / "engines" / f"{b}.json").read_text()) for b in builds
    }
    for build, engine in engines.items():
        assert engine.startup_s is not None and engine.start_waited_s is not None, build
        starts = re.findall(rf"starting the vllm-cpu engine for {re.escape(build)}(?![\w-])", text)
        assert len(starts) == 1, build  # one engine per build
    # The reference's block probes after its cells, so nothing started early beside them.
    assert "engine for w8a8 early" not in text
    for build in ("bf16", "w8a8"):
        engine = engines[build]
        assert engine.start_waited_s >= engine.startup_s  # type: ignore[operator]
    assert "starting the vllm-cpu engine for bf16-base early, beside the last cells" in text
    late = engines["bf16-base"]
    assert late.start_waited_s < late.startup_s  # type: ignore[operator]

    # Fidelity first: a warning for each non-reference build, said and recorded before its episodes.
    fidelity = json.loads((run_dir / "fidelity.json").read_text())
    warnings = {w["build"]: w for w in fidelity["early_warnings"]}
    assert sorted(warnings) == ["bf16-base", "w8a8"]
    said = text.splitlines()
    for build, warning in warnings.items():
        assert warning["steps"] >= 2 and warning["probe_s"] > 0
        warned = datetime.fromisoformat(warning["warned_at"])
        assert warned < min(e.started_at for e in scored if e.build == build)
        at = next(
            i for i, line in enumerate(said) if f"{build} not flagged" in line or f"flags {build} " in line
        )
        assert at < next(i for i, line in enumerate(said) if f" {build} wifi_on seed " in line)
    assert "## Early warning (fidelity first)" in (run_dir / "scorecard.md").read_text()

    # Between w8a8's last episode and bf16-base's first, the engine start and the probes idled the grid for
    # less than a start plus the probes.
    w8a8_end = max(e.finished_at for e in scored if e.build == "w8a8")
    late_start = min(e.started_at for e in scored if e.build == "bf16-base")
    gap = (late_start - w8a8_end).total_seconds()
    assert gap - warnings["bf16-base"]["probe_s"] < late.startup_s  # type: ignore[operator]
    for build, engine in engines.items():
        print(f"{build}: startup {engine.startup_s} s, waited {engine.start_waited_s} s")
    print(f"between w8a8's and bf16-base's blocks {gap:.1f} s, probes {warnings['bf16-base']['probe_s']} s")

    card = json.loads((run_dir / "scorecard.json").read_text())
    rows = {r["build"]: r for r in card["engine_busy"]}
    for build, engine in engines.items():
        assert rows[build]["engine_start_waited_s"] == engine.start_waited_s
    assert "engine start waited s" in (run_dir / "scorecard.md").read_text()
    for build, row in rows.items():
        resets = sum(_reset_s(run_dir, e) for e in scored if e.build == build)
        print(
            f"{build}: busy {row['busy_share']:.2f}, phones resetting {resets:.1f} s in all, of which "
            f"the engine idled {row['idle_phone_reset_s']:.1f} s; last cells {row['idle_last_cells_s']:.1f} s"
        )
    assert _guards_of(harness.pid) == []  # nothing outlives the harness
