"""Engine busy: the union of the phones' model calls over the phase's wall time, and idle time by cause."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_eval.records import EngineRecord, EpisodeRecord, Outcome, StepLatency, StepRecord
from agent_eval.scoring.engine_busy import engine_busy, phase_of, seed_levels

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _episode(seed: int, start: float, end: float) -> EpisodeRecord:
    return EpisodeRecord(
        run_id="r",
        build="a",
        task_id="t",
        seed=seed,
        outcome=Outcome.SUCCESS,
        reached=True,
        success=True,
        started_at=T0 + timedelta(seconds=start),
        finished_at=T0 + timedelta(seconds=end),
        latency=StepLatency(model_s=0.0),
    )


def _steps(calls: list[tuple[float, float]], timed: bool = True) -> list[StepRecord]:
    return [
        StepRecord(
            step=i + 1,
            latency=StepLatency(model_s=took),
            model_started_at=(T0 + timedelta(seconds=begun)).timestamp() if timed else None,
        )
        for i, (begun, took) in enumerate(calls)
    ]


def test_busy_share_and_idle_causes_add_up_to_the_wall_time() -> None:
    # Three phones' episodes: calls at 2-4 and 6-8, at 3-5, and (a late one) at 10-11.
    plan = {
        0: ((0.0, 10.0), [(2.0, 2.0), (6.0, 2.0)]),
        1: ((1.0, 9.0), [(3.0, 2.0)]),
        2: ((9.5, 12.0), [(10.0, 1.0)]),
    }
    episodes = [_episode(seed, *span) for seed, (span, _) in plan.items()]
    for e in episodes:
        e.latency = StepLatency(model_s=sum(took for _, took in plan[e.seed][1]))
    engines = {"a": EngineRecord(build="a", engine="vllm-cpu", startup_s=41.0)}
    (row,) = engine_busy(episodes, lambda e: _steps(plan[e.seed][1]), engines, 0, [5, 20])
    assert row.phase == 1 and row.episodes == 3 and row.wall_s == pytest.approx(12.0)
    assert row.model_s == pytest.approx(7.0) and row.model_time_share == pytest.approx(7 / 12)
    # In flight: 2-5, 6-8, 10-11 = 6 s of 12.
    assert row.busy_share == pytest.approx(0.5, abs=0.01)
    assert row.idle_phone_reset_s == pytest.approx(2.0, abs=0.06)  # 0-2: phones before their first call
    assert row.idle_observe_s == pytest.approx(2.5, abs=0.06)  # 5-6, 8-9.5: between calls
    assert row.idle_last_cells_s == pytest.approx(1.5, abs=0.06)  # 9.5-10, 11-12: the last episode alone
    assert row.idle_other_s == pytest.approx(0.0, abs=0.06)
    assert row.engine_start_s == 41.0


def test_phases_come_from_the_seed_levels_and_old_runs_give_no_busy_share() -> None:
    assert [phase_of(s, 0, [5, 20]) for s in (0, 4, 5, 19, 25)] == [1, 1, 2, 2, 2]
    assert phase_of(103, 100, [5]) == 1
    episodes = [_episode(1, 0.0, 4.0), _episode(7, 10.0, 14.0)]
    for e in episodes:
        e.latency = StepLatency(model_s=2.0)
    rows = engine_busy(episodes, lambda e: _steps([(1.0, 2.0)], timed=False), {}, 0, [5, 20])
    assert [r.phase for r in rows] == [1, 2]
    assert rows[1].model_time_share == pytest.approx(0.5) and rows[1].busy_share is None
    assert rows[1].engine_start_s is None and rows[1].idle_observe_s is None


def test_seed_levels_are_read_from_the_grid_config_of_run_json(tmp_path: Path) -> None:
    grid = {"first_seed": 100, "adaptive": {"enabled": True, "schedule": [3, 20]}}
    (tmp_path / "run.json").write_text(json.dumps({"config": {"seeds": 5, "grid": grid}}))
    assert seed_levels(tmp_path) == (100, [5, 20])
    (tmp_path / "run.json").write_text(json.dumps({"config": {"command": "run"}}))
    assert seed_levels(tmp_path) == (0, [])


def test_a_probes_model_calls_count_as_its_builds_engine_work() -> None:
    """A navigation probe asks the same engine: its calls fill the idle time it was played in."""
    episode = _episode(0, 0.0, 10.0)
    probe = _episode(0, 4.0, 9.0)
    probe.kind = "probe"
    calls = {"episode": [(1.0, 2.0)], "probe": [(5.0, 3.0)]}
    for e in (episode, probe):
        e.latency = StepLatency(model_s=sum(took for _, took in calls[e.kind]))
    (alone,) = engine_busy([episode], lambda e: _steps(calls[e.kind]), {}, 0, [5])
    (row,) = engine_busy([episode, probe], lambda e: _steps(calls[e.kind]), {}, 0, [5])
    assert (alone.episodes, alone.probes) == (1, 0) and (row.episodes, row.probes) == (2, 1)
    assert alone.busy_share == pytest.approx(0.2, abs=0.01)
    assert row.busy_share == pytest.approx(0.5, abs=0.01) and row.model_s == pytest.approx(5.0)
