"""Time to flag: the wall time the episodes and fidelity each need to flag a build, from the run's timings."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_eval.fidelity.probe import StepProbe
from agent_eval.fidelity.time_to_flag import episode_wall_s, phones, probe_s, time_to_flag
from agent_eval.records import EpisodeRecord, Outcome

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _episode(build: str, seconds: float) -> EpisodeRecord:
    return EpisodeRecord(
        run_id="r",
        build=build,
        task_id="t",
        seed=0,
        outcome=Outcome.SUCCESS,
        reached=True,
        success=True,
        started_at=T0,
        finished_at=T0 + timedelta(seconds=seconds),
    )


def _probe(seconds: float) -> StepProbe:
    return StepProbe(
        build="b",
        episode="episodes/ref/t/0",
        task_id="t",
        seed=0,
        step=1,
        goal_before=False,
        said_done=False,
        tokens=["x"],
        ranks=[1],
        logprobs=[-0.1],
        tops=[{"1": -0.1}],
        prefill_s=seconds,
    )


def test_each_side_pays_for_what_it_reads() -> None:
    scored = [_episode("ref", 20.0), _episode("ref", 40.0), _episode("b", 60.0)]
    assert episode_wall_s(scored, "ref") == 30.0 and episode_wall_s(scored, "none") is None
    assert probe_s([_probe(0.2), _probe(0.4)]) == pytest.approx(0.3) and probe_s([]) is None
    # 12 pairs of a 60 s and a 30 s episode on 4 phones: 270 s; fidelity reads 3 reference episodes
    # (22.5 s on 4 phones) and probes their 30 steps at 0.3 s (9 s).
    episodes, fidelity = time_to_flag(
        12, 3, 30, build_episode_s=60.0, reference_episode_s=30.0, step_probe_s=0.3, at_once=4
    )
    assert episodes == pytest.approx(270.0) and fidelity == pytest.approx(31.5)
    assert time_to_flag(
        None, None, None, build_episode_s=60.0, reference_episode_s=30.0, step_probe_s=0.3, at_once=4
    ) == (None, None)


def test_phones_come_from_run_json(tmp_path: Path) -> None:
    assert phones(tmp_path) == 1
    (tmp_path / "run.json").write_text(json.dumps({"config": {"devices": 4}}))
    assert phones(tmp_path) == 4
    (tmp_path / "run.json").write_text(
        json.dumps({"config": {"devices": ["emulator-5554", "emulator-5556"]}})
    )
    assert phones(tmp_path) == 2
