"""`early_engine_start: true` and `fidelity: first` on real grids with 2 virtual phones.

- Early start, on llama.cpp (its server starts in seconds, so the test costs no vLLM start): two builds of the
  shipped GGUF, 3 seeds; the second build's engine starts while the first's last cell plays on one phone and
  the other idles. engines/<build>.json and the busy table show the start the grid did not wait for, and how
  much of the phones' reset time the engine sat idle (the rest overlapped another phone's model calls).
- Fidelity first, on llama.cpp too (its server scores given tokens as vLLM's does, see docs/builds.md): the
  candidate's early warning comes before its episodes, from the engine they then use. Both builds are the
  shipped GGUF, so the probe finds nothing to flag; what is tested is when and where it runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest
from _engines import guards_of, prepared_default_builds

from agent_eval.records import EngineRecord, EpisodeRecord, Outcome

REPO = Path(__file__).resolve().parents[2]
AGENT_EVAL = str(Path(sys.executable).parent / "agent-eval")

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def _reset_s(run_dir: Path, episode: EpisodeRecord) -> float:
    """A phone's reset and first observation: its episode's start to its first model call."""
    steps = (run_dir / episode.episode_dir / "steps.jsonl").read_text().splitlines()
    first = json.loads(steps[0])["model_started_at"]
    return float(first) - episode.started_at.timestamp()


def _run_grid(tmp_path: Path, grid: dict[str, object]) -> tuple[subprocess.Popen[bytes], str]:
    (tmp_path / "grid.yaml").write_text(json.dumps(grid))  # JSON is YAML
    args = [AGENT_EVAL, "run", str(tmp_path / "grid.yaml"), "--no-bars"]
    env = {**os.environ, "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
    harness = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    out, _ = harness.communicate(timeout=2400)
    text = out.decode(errors="replace")
    assert harness.returncode == 0, text[-4000:]
    print(text[-6000:])
    return harness, text


def _two_builds_of_the_shipped_gguf(path: Path, reference: str, other: str) -> None:
    """A builds file of two llama.cpp builds of the prepared `gguf-q4_1` file (`reference` the reference)."""
    builds, _ = prepared_default_builds()
    model = builds.get("gguf-q4_1").resolved_path()
    assert model is not None and model.is_file()
    entry = {
        "scheme": "gguf-q4_1",
        "engine": "llama.cpp",
        "model_path": str(model),
        "engine_args": {"max_model_len": 2048},
        "pinning": {"cpus": "0-1"},
        "sampling": {"temperature": 0.7, "top_p": 1.0, "max_tokens": 96},
    }
    file = {"builds": [{"name": reference, "reference": True, **entry}, {"name": other, **entry}]}
    path.write_text(json.dumps(file))  # JSON is YAML


def _scored(run_dir: Path) -> list[EpisodeRecord]:
    lines = (run_dir / "episodes.jsonl").read_text().splitlines()
    return [e for e in map(EpisodeRecord.model_validate_json, lines) if e.outcome is not Outcome.INFRA_ERROR]


def test_the_next_build_s_engine_starts_while_the_last_cell_plays(tmp_path: Path) -> None:
    # Two builds of the same file: what is measured is when each engine started, not the weights.
    names = ("first", "second")
    _two_builds_of_the_shipped_gguf(tmp_path / "builds.yaml", *names)
    run_dir = tmp_path / "run"
    # With 3 seeds on 2 phones, the first build's third episode plays alone (the tail) while the other idles.
    grid = {
        "tasks": [str(REPO / "tasks" / "bluetooth_on.yaml")],
        "builds_file": "builds.yaml",
        "builds": list(names),
        "reference": "first",
        "seeds": 3,
        "devices": 2,
        "max_steps": 4,
        "adaptive": {"enabled": False},
        "early_engine_start": True,
        "run_dir": str(run_dir),
    }
    harness, text = _run_grid(tmp_path, grid)
    scored = _scored(run_dir)
    assert sorted((e.build, e.seed) for e in scored) == [(b, s) for b in names for s in range(3)]
    assert "starting the llama.cpp engine for second early, beside the last cells" in text
    first = EngineRecord.model_validate_json((run_dir / "engines" / "first.json").read_text())
    second = EngineRecord.model_validate_json((run_dir / "engines" / "second.json").read_text())
    assert first.startup_s is not None and first.start_waited_s is not None
    assert first.start_waited_s >= first.startup_s  # the first block waits for its whole start
    assert second.startup_s is not None and second.start_waited_s is not None
    assert second.start_waited_s < second.startup_s  # the usual start would wait at least startup_s
    first_end = max(e.finished_at for e in scored if e.build == "first")
    second_start = min(e.started_at for e in scored if e.build == "second")
    print(f"first: startup {first.startup_s} s, waited {first.start_waited_s} s")
    gap = (second_start - first_end).total_seconds()
    print(
        f"second: startup {second.startup_s} s, waited {second.start_waited_s} s, between blocks {gap:.1f} s"
    )

    card = json.loads((run_dir / "scorecard.json").read_text())
    rows = {r["build"]: r for r in card["engine_busy"]}
    assert rows["second"]["engine_start_waited_s"] == second.start_waited_s
    assert rows["first"]["engine_start_waited_s"] == first.start_waited_s
    assert "engine start waited s" in (run_dir / "scorecard.md").read_text()
    for build, row in rows.items():
        resets = sum(_reset_s(run_dir, e) for e in scored if e.build == build)
        print(
            f"{build}: busy {row['busy_share']:.2f}, phones resetting {resets:.1f} s in all, of which "
            f"the engine idled {row['idle_phone_reset_s']:.1f} s; last cells {row['idle_last_cells_s']:.1f} s"
        )
    assert guards_of(harness.pid) == []  # nothing outlives the harness


def test_fidelity_first_warns_before_the_episodes_on_the_engine_already_served(tmp_path: Path) -> None:
    _two_builds_of_the_shipped_gguf(tmp_path / "builds.yaml", "reference", "candidate")
    run_dir = tmp_path / "run"
    grid = {
        "tasks": [str(REPO / "tasks" / "wifi_on.yaml")],
        "builds_file": "builds.yaml",
        "builds": ["reference", "candidate"],
        "reference": "reference",
        # One short episode each: llama.cpp prefills at ~130 tok/s on an AVX2 host, and the probe prefills
        # every recorded step twice (reference and candidate), ~8 s a step there.
        "seeds": 1,
        "devices": 1,
        "max_steps": 3,
        "adaptive": {"enabled": False},
        "fidelity": "first",
        "run_dir": str(run_dir),
    }
    _, text = _run_grid(tmp_path, grid)
    lines = text.splitlines()
    verdicts = ("candidate not flagged", "fidelity flags candidate")
    said = next(i for i, line in enumerate(lines) if any(v in line for v in verdicts))
    first_episode = next(i for i, line in enumerate(lines) if " candidate wifi_on seed " in line)
    assert said < first_episode  # the warning comes before the build's episodes
    starts = re.findall(r"starting the llama\.cpp engine for candidate(?![\w-])", text)
    assert len(starts) == 1  # probed on the engine its episodes use

    episodes = _scored(run_dir)
    assert sorted((e.build, e.seed) for e in episodes) == [("candidate", 0), ("reference", 0)]
    fidelity = json.loads((run_dir / "fidelity.json").read_text())
    (warning,) = fidelity["early_warnings"]
    assert warning["build"] == "candidate" and warning["steps"] >= 2 and warning["probe_s"] > 0
    warned = datetime.fromisoformat(warning["warned_at"])
    assert warned < min(e.started_at for e in episodes if e.build == "candidate")
    assert "## Early warning (fidelity first)" in (run_dir / "scorecard.md").read_text()
