"""Synthetic ladder runs with task families, typed steps and answers, written as a run directory.

Episodes, steps.jsonl and run.json as the runner writes them, so `score_run` reads them as a real run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from agent_eval.action import Action, ActionType
from agent_eval.records import BuildManifest, EpisodeRecord, Outcome, RungInfo, StepRecord

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
LADDER = {"bf16": 16.0, "int8-dq": 8.0, "int4-dq": 4.5, "int2-dq": 2.5}


@dataclass(frozen=True)
class FakeTask:
    """A task as run.json records it; `typed` holds (field, text with {parameters})."""

    id: str
    family: str
    split: str = "train"
    answer: bool = False
    typed: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Played:
    """What one episode did: reached / success, what it typed (field id, text), its answer if any."""

    reached: bool = True
    success: bool = True
    typed: tuple[tuple[str, str], ...] = ()
    answer: str | None = None
    answer_correct: bool | None = None


@dataclass(frozen=True)
class FakeRun:
    tasks: tuple[FakeTask, ...]
    seeds: int
    play: Callable[[str, FakeTask, int], Played]
    builds: dict[str, float] = field(default_factory=lambda: dict(LADDER))
    params: Callable[[FakeTask, int], dict[str, str]] = lambda task, seed: {}
    old_style: bool = False  # run.json written before tasks recorded family, answer and typed fields


def _manifest(build: str, bits: float) -> BuildManifest:
    rung = RungInfo(method="none" if build == "bf16" else "rtn", bits=int(bits), label=build)
    return BuildManifest(
        name=build,
        reference=build == "bf16",
        scheme="bf16",
        bits_per_weight=bits,
        engine="scripted",
        rung=rung,
    )


def _steps(played: Played, task: FakeTask) -> list[StepRecord]:
    steps = []
    for index, (field_id, text) in enumerate(played.typed, 1):
        elements = ['[1] TextView "New contact"', f"[{index + 1}] EditText id={field_id}"]
        action = Action(type=ActionType.TYPE, element=index + 1, text=text)
        steps.append(StepRecord(step=index, elements=elements, action=action))
    last = (
        Action(type=ActionType.ANSWER, text=played.answer) if played.answer else Action(type=ActionType.DONE)
    )
    steps.append(StepRecord(step=len(steps) + 1, action=last))
    return steps


def _outcome(played: Played, task: FakeTask) -> Outcome:
    if played.success:
        return Outcome.SUCCESS
    return Outcome.NO_STOP if played.reached else Outcome.NAV_FAIL


def _episode(run: FakeRun, run_dir: Path, build: str, task: FakeTask, seed: int) -> EpisodeRecord:
    played = run.play(build, task, seed)
    relative = f"episodes/{build}/{task.id}/{seed}"
    (run_dir / relative).mkdir(parents=True)
    steps = _steps(played, task)
    (run_dir / relative / "steps.jsonl").write_text("".join(s.model_dump_json() + "\n" for s in steps))
    return EpisodeRecord(
        run_id=run_dir.name,
        build=build,
        task_id=task.id,
        seed=seed,
        params=run.params(task, seed),
        outcome=_outcome(played, task),
        reached=played.reached,
        success=played.success,
        said="answer" if played.answer else None,
        answer=played.answer,
        answer_correct=played.answer_correct,
        goal_timeline=[False, played.reached],
        steps=len(steps),
        build_manifest=_manifest(build, run.builds[build]),
        started_at=T0,
        finished_at=T0,
        episode_dir=relative,
    )


def _task_entry(task: FakeTask, old_style: bool) -> dict[str, object]:
    entry: dict[str, object] = {"id": task.id, "version": 1, "sha256": "0" * 64, "split": task.split}
    if not old_style:
        typed = [{"field": f, "text": t} for f, t in task.typed]
        entry.update(family=task.family, answer=task.answer, typed=typed)
    return entry


def write_fake_run(run_dir: Path, run: FakeRun) -> list[EpisodeRecord]:
    """The run directory: episodes.jsonl, each episode's steps.jsonl, and run.json with the reference."""
    run_dir.mkdir(parents=True)
    episodes = [
        _episode(run, run_dir, build, task, seed)
        for build in run.builds
        for task in run.tasks
        for seed in range(run.seeds)
    ]
    (run_dir / "episodes.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in episodes))
    manifest = {
        "schema_version": 1,
        "run_id": run_dir.name,
        "created_at": T0.isoformat(),
        "updated_at": T0.isoformat(),
        "config": {"reference": "bf16", "margin": 0.1},
        "tasks": [_task_entry(t, run.old_style) for t in run.tasks],
    }
    (run_dir / "run.json").write_text(json.dumps(manifest, indent=2))
    return episodes


def settings_run(run_dir: Path, tasks: Sequence[str] = ("wifi_on", "bluetooth_off"), seeds: int = 20) -> None:
    """A Settings-only ladder run as recorded before families existed: int8 keeps up, int2 is lost."""

    def play(build: str, task: FakeTask, seed: int) -> Played:
        if build == "int2-dq":
            return Played(reached=seed % 3 == 0, success=False)
        if build == "int4-dq":
            return Played(success=seed % 4 != 0)
        return Played()

    fake = tuple(FakeTask(t, "settings/switch") for t in tasks)
    write_fake_run(run_dir, FakeRun(fake, seeds, play, old_style=True))
