"""Reading what the HTML report needs from a run directory: episodes, their steps, the engines' records.

Read-only and tolerant of a run still being written (torn last line skipped, missing steps file empty).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from agent_eval.errors import RunStoreError
from agent_eval.records import EngineRecord, EpisodeRecord, Outcome, StepRecord


@dataclass(frozen=True)
class RunEpisodes:
    """The episodes that count (the last attempt of each build × task × seed); infra-error attempts apart."""

    final: tuple[EpisodeRecord, ...]
    retried: tuple[EpisodeRecord, ...]

    @property
    def builds(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.build for e in self.final))

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(sorted({e.task_id for e in self.final}))


def read_episodes(run_dir: Path) -> RunEpisodes:
    path = run_dir / "episodes.jsonl"
    if not path.is_file():
        raise RunStoreError(f"{run_dir}: no episodes.jsonl here; give the directory of a run (runs/<id>)")
    lines = path.read_text(encoding="utf-8").splitlines()
    records: list[EpisodeRecord] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append(EpisodeRecord.model_validate_json(line))
        except ValidationError as e:
            if number == len(lines):
                continue  # the run was interrupted while appending this line; the runner redoes it
            raise RunStoreError(f"{path}:{number}: not an episode record: {e.errors()[0]['msg']}") from e
    latest: dict[tuple[str, str, int], EpisodeRecord] = {}
    for record in records:
        key = (record.build, record.task_id, record.seed)
        if key not in latest or record.attempt >= latest[key].attempt:
            latest[key] = record
    final = tuple(latest.values())
    kept = {id(r) for r in final}
    retried = tuple(r for r in records if id(r) not in kept and r.outcome is Outcome.INFRA_ERROR)
    return RunEpisodes(final=final, retried=retried)


def read_steps(run_dir: Path, episode: EpisodeRecord) -> list[StepRecord]:
    path = run_dir / episode.episode_dir / "steps.jsonl"
    if not episode.episode_dir or not path.is_file():
        return []
    steps = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            steps.append(StepRecord.model_validate_json(line))
        except ValidationError:
            continue  # a torn line of an interrupted episode shows as a gap, not a failed report
    return steps


def read_engines(run_dir: Path) -> dict[str, EngineRecord]:
    engines: dict[str, EngineRecord] = {}
    for path in sorted((run_dir / "engines").glob("*.json")):
        try:
            record = EngineRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except (ValueError, ValidationError):
            continue
        engines[record.build] = record
    return engines
