"""Reading a run directory for scoring: episodes.jsonl, engines/*.json and the grid settings in run.json.

Scoring depends on these files only (never on the runner), so a report can be recomputed from a copied run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_eval.errors import RunStoreError
from agent_eval.records import EngineRecord, EpisodeRecord

EPISODES_FILE = "episodes.jsonl"
ENGINES_DIR = "engines"
RUN_MANIFEST = "run.json"
# A crash mid-append can leave a zero-filled tail as well as a cut line.
_BLANK = "\0 \r\t"


@dataclass(frozen=True)
class RunSettings:
    """What run.json says about scoring, when it says it (the grid spec fixes both before the run)."""

    run_id: str
    reference: str | None = None
    margin: float | None = None


def _require_run_dir(run_dir: Path) -> None:
    if not run_dir.is_dir():
        raise RunStoreError(f"{run_dir} is not a run directory (it does not exist); pass runs/<run-id>")


def read_episodes(run_dir: Path) -> list[EpisodeRecord]:
    """Every line of episodes.jsonl, in file order.

    The runner appends one line per finished episode, so a crash can leave the last line half-written:
    that line is an episode that never finished and is skipped. A bad line anywhere else is damage.
    """
    _require_run_dir(run_dir)
    path = run_dir / EPISODES_FILE
    if not path.is_file():
        raise RunStoreError(f"{run_dir} has no {EPISODES_FILE}: no episode has finished in this run yet")
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    episodes: list[EpisodeRecord] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip(_BLANK):
            continue
        try:
            episodes.append(EpisodeRecord.model_validate_json(line))
        except ValidationError as e:
            if not any(rest.strip(_BLANK) for rest in lines[number:]):
                break
            raise RunStoreError(
                f"{path}:{number} is not a valid episode record ({e.error_count()} errors, first: "
                f"{e.errors()[0]['msg']}); restore the file or remove that line"
            ) from e
    return episodes


def read_engines(run_dir: Path) -> dict[str, EngineRecord]:
    """The engine record of each build that has one, by build name."""
    _require_run_dir(run_dir)
    engines: dict[str, EngineRecord] = {}
    folder = run_dir / ENGINES_DIR
    if not folder.is_dir():
        return engines
    for path in sorted(folder.glob("*.json")):
        try:
            record = EngineRecord.model_validate_json(path.read_text(encoding="utf-8"))
        except ValidationError as e:
            raise RunStoreError(f"{path} is not a valid engine record: {e.errors()[0]['msg']}") from e
        engines[record.build] = record
    return engines


def _find(manifest: dict[str, Any], key: str) -> Any:
    # The grid spec may sit at the top of run.json or under the section that echoes the config as given.
    for section in (manifest, manifest.get("grid"), manifest.get("config"), manifest.get("spec")):
        if isinstance(section, dict) and section.get(key) is not None:
            return section[key]
    return None


def read_run_settings(run_dir: Path) -> RunSettings:
    """The run id, reference build and margin recorded in run.json (None where it has none)."""
    _require_run_dir(run_dir)
    path = run_dir / RUN_MANIFEST
    if not path.is_file():
        return RunSettings(run_id=run_dir.name)
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise RunStoreError(f"{path} is not valid JSON ({e.msg} at line {e.lineno}); restore it") from e
    if not isinstance(manifest, dict):
        raise RunStoreError(f"{path} should hold a JSON object")
    reference = _find(manifest, "reference")
    margin = _find(manifest, "margin")
    if not isinstance(reference, str):
        builds = manifest.get("builds")
        flagged = (
            [b.get("name") for b in builds if isinstance(b, dict) and b.get("reference") is True]
            if isinstance(builds, list)
            else []
        )
        reference = flagged[0] if len(flagged) == 1 and isinstance(flagged[0], str) else None
    try:
        margin_value = float(margin) if margin is not None else None
    except (TypeError, ValueError):
        raise RunStoreError(f"{path}: margin should be a number, got {margin!r}") from None
    run_id = manifest.get("run_id")
    return RunSettings(
        run_id=run_id if isinstance(run_id, str) else run_dir.name, reference=reference, margin=margin_value
    )
