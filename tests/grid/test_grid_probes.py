"""Navigation probes end to end: scripted agents of known abilities on virtual phones, through the real adb
server, and the decomposition recovering each ability where ordinary play conflates them.

- "early" navigates right but says done on a wrong page with probability P at each step away from the goal;
- "never" navigates right and never stops;
- "half" stops right (only when there) and is lost on half the seeds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from _ability_agents import AbilityAgent, ability_builds_file, start_ability_agents
from rich.console import Console

from agent_eval.builds.engine_kinds import engine_kind
from agent_eval.errors import ConfigError
from agent_eval.grid import load_grid, run_grid
from agent_eval.records import EpisodeRecord
from agent_eval.rundir import NAV_PROBES_FILE
from agent_eval.scoring.decomposition import Decomposition, StopDecision, probe_reached
from agent_eval.scoring.scorecard import score_run
from agent_eval.scoring.stats import Verdict, wilson_interval

pytestmark = pytest.mark.slow

P = 0.3
TASKS = ["wifi_on", "airplane_mode_on"]
SEEDS = 15  # 30 agreeing pairs bound a drop under the margin (0.095 < 0.10)


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, AbilityAgent]]:
    servers = start_ability_agents(P)
    yield servers
    for server in servers.values():
        server.stop()


def _grid(tmp: Path, agents: dict[str, AbilityAgent], probes: str, **fields: Any) -> Path:
    grid = tmp / f"grid-{probes}.yaml"
    spec = {
        "tasks": TASKS,
        "builds_file": str(ability_builds_file(tmp / "builds.yaml", agents)),
        "seeds": SEEDS,
        "adaptive": {"enabled": False},
        "devices": 2,
        "phone_base_port": 6300,
        "serving": "side-by-side",
        "navigation_probes": probes,
        "max_steps": 6,  # the paths take 3 and 5 steps; a lost or never-stopping agent plays them all
        "run_dir": str(tmp / "run"),
        **fields,
    }
    grid.write_text(yaml.safe_dump(spec))
    return grid


def _run(grid: Path) -> str:
    console = Console(record=True, width=200, force_terminal=False)
    result = run_grid(load_grid(grid), console=console, bars=False)
    assert result.problems == [], result.problems
    return console.export_text()


def _probes(run_dir: Path) -> list[EpisodeRecord]:
    path = run_dir / NAV_PROBES_FILE
    lines = path.read_text().splitlines() if path.exists() else []
    return [EpisodeRecord.model_validate_json(line) for line in lines if line.strip()]


def _inside(value: float, count: int, of: int) -> bool:
    interval = wilson_interval(count, of)
    assert interval is not None
    return interval.low <= value <= interval.high


def test_the_decomposition_recovers_each_ability_and_ordinary_play_conflates_them(
    agents: dict[str, AbilityAgent], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A scripted endpoint answers as a function of its prompt and seed: masking the stops keeps every other
    # answer, as vLLM's sampler does, so `stopped` may take the other episodes' probes from the episodes.
    monkeypatch.setattr(engine_kind("endpoint"), "keeps_draw_under_mask", True, raising=False)
    grid = _grid(tmp_path, agents, "off")
    _run(grid)  # ordinary episodes only: the probes come in a later session, as a resumed run's would
    run_dir = tmp_path / "run"
    assert _probes(run_dir) == []
    card = score_run(run_dir)
    assert card.decomposition is not None and not card.decomposition.probes

    out = _run(_grid(tmp_path, agents, "stopped"))
    assert "navigation probe" in out
    probes = _probes(run_dir)
    episodes = [
        EpisodeRecord.model_validate_json(line)
        for line in (run_dir / "episodes.jsonl").read_text().splitlines()
    ]
    early_stops = [e for e in episodes if e.said is not None and not e.reached]
    # Only the episodes that stopped before the goal held were probed, each once, all of them early's.
    assert {(p.build, p.task_id, p.seed) for p in probes} == {
        (e.build, e.task_id, e.seed) for e in early_stops
    }
    assert len(probes) == len(early_stops) > 0 and {p.build for p in probes} == {"early"}
    assert all(p.kind == "probe" and p.said is None for p in probes)
    # No stop was offered to a probe: every request of a probe had done taken out of its schema.
    assert agents["early"].stops_offered.count(False) == sum(p.steps for p in probes)

    card = score_run(run_dir)
    decomposition = card.decomposition
    assert isinstance(decomposition, Decomposition) and decomposition.probes
    rows: dict[str, StopDecision] = {row.build: row for row in decomposition.builds}
    n = len(TASKS) * SEEDS
    ordinary = {b.build: b for b in card.builds}

    # early: navigates every time once it cannot stop; ordinary play counts its false dones against
    # navigation too.
    early = rows["early"]
    assert early.probe_navigation is not None and early.probe_navigation.count == n
    assert ordinary["early"].navigation.count == n - len(early_stops) < n
    assert early.stopped_early_reached is not None and early.stopped_early_reached.rate == 1.0
    assert early.replayed == early.replay_checked == len(early_stops)
    away_stops = round((early.false_done_per_step or 0) * early.away_steps)
    assert _inside(P, away_stops, early.away_steps)
    assert early.sensitivity.rate == 1.0

    never = rows["never"]
    assert never.probe_navigation is not None and never.probe_navigation.rate == 1.0
    assert never.sensitivity.rate == 0.0 and never.false_done.count == 0 and never.probes == 0

    half = rows["half"]
    found = sum(seed % 2 == 0 for seed in range(SEEDS)) * len(TASKS)  # lost on odd seeds
    assert half.probe_navigation is not None and half.probe_navigation.count == found
    assert _inside(0.5, found, n)
    assert half.sensitivity.rate == 1.0 and half.false_done.count == 0

    verdicts = {c.build: c for c in decomposition.comparisons}
    assert verdicts["early"].probe_navigation.verdict is not Verdict.REGRESSION
    assert verdicts["early"].false_done.verdict is Verdict.REGRESSION
    assert verdicts["early"].claim == "holds"
    assert verdicts["never"].sensitivity.verdict is Verdict.REGRESSION
    assert verdicts["half"].probe_navigation.verdict is Verdict.REGRESSION
    assert verdicts["half"].claim == "fails"
    assert verdicts["half"].sensitivity.verdict is not Verdict.REGRESSION
    # Ordinary play blames early's false dones on navigation as much as on recognition.
    regression = {c.build: c for c in card.regression.builds} if card.regression else {}
    assert regression["early"].navigation.verdict is Verdict.REGRESSION

    # Continued again: nothing is played twice; a torn last line is cut away and that probe redone.
    path = run_dir / NAV_PROBES_FILE
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20])
    _run(_grid(tmp_path, agents, "stopped"))
    again = _probes(run_dir)
    assert sorted((p.build, p.task_id, p.seed) for p in again) == sorted(
        (p.build, p.task_id, p.seed) for p in probes
    )
    md = (run_dir / "scorecard.md").read_text()
    assert "Navigation and recognition apart" in md and "probe navigation" in md
    # The trajectory viewer has each probe beside the ordinary episode of its seed.
    page = (run_dir / "report.html").read_text()
    data = re.search(r'<script type="application/json" id="episodes-data">(.*?)</script>', page)
    assert data is not None
    views = json.loads(data.group(1))
    shown = {(v["build"], v["task"], v["seed"]) for v in views if v.get("kind") == "probe"}
    assert shown == {(p.build, p.task_id, p.seed) for p in probes}


def test_probing_every_episode_confirms_the_replayed_outcomes(
    agents: dict[str, AbilityAgent], tmp_path: Path
) -> None:
    some = {name: agents[name] for name in ("good", "never", "half")}
    _run(_grid(tmp_path, some, "all", seeds=2, tasks=["airplane_mode_on"], phone_base_port=6310))
    run_dir = tmp_path / "run"
    probes = {(p.build, p.task_id, p.seed): p for p in _probes(run_dir)}
    episodes = [
        EpisodeRecord.model_validate_json(line)
        for line in (run_dir / "episodes.jsonl").read_text().splitlines()
    ]
    assert len(probes) == len(episodes) == 6
    for e in episodes:
        probe = probes[e.build, e.task_id, e.seed]
        # What a probe that was not played is taken to be, is what the played probe did.
        assert probe_reached(e, None) == probe.reached, (e.build, e.seed)
    lost = probes["half", "airplane_mode_on", 1]
    assert lost.outcome.value == "nav_fail" and lost.steps == lost.max_steps  # out of steps: an outcome
    found = probes["never", "airplane_mode_on", 0]
    assert found.outcome.value == "no_stop" and found.steps == 2  # ended when the goal first held


def test_a_build_that_cannot_be_constrained_is_refused_before_any_episode(
    agents: dict[str, AbilityAgent], tmp_path: Path
) -> None:
    builds = ability_builds_file(tmp_path / "builds.yaml", agents, early={"structured_output": "off"})
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        yaml.safe_dump(
            {
                "tasks": TASKS,
                "builds_file": str(builds),
                "navigation_probes": "stopped",
                "run_dir": str(tmp_path / "run"),
            }
        )
    )
    with pytest.raises(ConfigError, match=r"early.*structured_output: off"):
        run_grid(load_grid(grid), console=Console(width=200), bars=False)
    assert not (tmp_path / "run").exists()
