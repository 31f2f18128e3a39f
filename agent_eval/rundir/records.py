"""Reading a run's records: episodes.jsonl, each episode's steps.jsonl and the engines' records.

Read-only; a run still being written reads fine (a torn last line is skipped by the rule in `lines`).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from agent_eval.errors import RunStoreError
from agent_eval.records import EngineRecord, EpisodeRecord, StepRecord
from agent_eval.rundir.layout import (
    ENGINES_DIR,
    EPISODES_FILE,
    STEPS_FILE,
    engine_record_path,
    probes_dir,
    records_file,
    require_run_dir,
)
from agent_eval.rundir.lines import read_lines


def read_episodes(run_dir: Path) -> list[EpisodeRecord]:
    """Every line of episodes.jsonl, in file order (every attempt, infra errors too)."""
    require_run_dir(run_dir)
    path = run_dir / EPISODES_FILE
    if not path.is_file():
        raise RunStoreError(f"{run_dir} has no {EPISODES_FILE}: no episode has finished in this run yet")
    return read_lines(path, EpisodeRecord).records


def read_probes(run_dir: Path) -> list[EpisodeRecord]:
    """Every line of navigation-probes.jsonl, in file order; none when the run played no probe."""
    require_run_dir(run_dir)
    path = records_file(run_dir, "probe")
    return read_lines(path, EpisodeRecord).records if path.is_file() else []


def read_done_on_recorded_steps(run_dir: Path) -> dict[str, list[tuple[float, bool]]]:
    """Per build, from the teacher-forced fidelity probes (fidelity/probes/<build>.jsonl): each recorded
    step's P(done) and whether the goal held before it. Empty when fidelity did not run; unreadable lines
    are skipped (a probe file being written has a torn last line)."""
    out: dict[str, list[tuple[float, bool]]] = {}
    folder = probes_dir(run_dir)
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            p, held = row.get("p_done"), row.get("goal_before")
            if isinstance(p, int | float) and isinstance(held, bool) and isinstance(row.get("build"), str):
                out.setdefault(row["build"], []).append((float(p), held))
    return out


def read_steps(run_dir: Path, episode: EpisodeRecord) -> list[StepRecord]:
    """The steps of one episode; none when it kept no step files."""
    if not episode.episode_dir:
        return []
    return read_lines(run_dir / episode.episode_dir / STEPS_FILE, StepRecord).records


def read_engines(run_dir: Path) -> dict[str, EngineRecord]:
    """The engine record of each build that has one, by build name. A damaged record is an error."""
    require_run_dir(run_dir)
    engines: dict[str, EngineRecord] = {}
    folder = run_dir / ENGINES_DIR
    if not folder.is_dir():
        return engines
    for path in sorted(folder.glob("*.json")):
        try:
            record = EngineRecord.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as e:
            raise RunStoreError(
                f"{path} is not a valid engine record ({e.errors()[0]['msg']}); restore it or move it away"
            ) from e
        engines[record.build] = record
    return engines


def read_engine_record(run_dir: Path, build: str) -> EngineRecord | None:
    """One build's engine record, or None when there is none yet (or it cannot be read)."""
    try:
        return EngineRecord.model_validate_json(
            engine_record_path(run_dir, build).read_text(encoding="utf-8")
        )
    except (OSError, ValueError):
        return None


def write_engine_record(run_dir: Path, record: EngineRecord) -> None:
    """engines/<build>.json, replaced atomically so a reader never sees half of one."""
    path = engine_record_path(run_dir, record.build)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
