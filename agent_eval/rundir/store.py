"""Writing a run directory: the lock, run.json, a fsynced line per episode, fresh step directories.

Opening an existing run continues it: finished episodes are kept, a torn last line is cut away and redone.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
from datetime import UTC, datetime
from pathlib import Path

from agent_eval.closing import Closing
from agent_eval.errors import RunStoreError
from agent_eval.records import EpisodeKind, EpisodeRecord, Outcome
from agent_eval.rundir.attempts import episode_key
from agent_eval.rundir.layout import LOCK_FILE, MANIFEST_FILE, EpisodeKey, episode_dir, records_file
from agent_eval.rundir.lines import read_lines
from agent_eval.rundir.run_manifest import (
    RunManifest,
    configuration_differences,
    read_manifest,
    write_manifest,
)


class RunStore(Closing):
    """One run directory. Open it with `open()` before writing; several threads may append at once."""

    def __init__(self, run_dir: Path | str) -> None:
        self.run_dir = Path(run_dir)
        self.episodes_path = records_file(self.run_dir, "episode")
        self.probes_path = records_file(self.run_dir, "probe")
        self.manifest_path = self.run_dir / MANIFEST_FILE
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
        write_manifest(self.run_dir, manifest)
        return manifest

    def read_manifest(self) -> RunManifest:
        return read_manifest(self.run_dir)

    def touch(self) -> None:
        """Record that the run was written to just now (updated_at)."""
        if self.manifest is not None:
            self.manifest = self.manifest.model_copy(update={"updated_at": datetime.now(UTC)})
            write_manifest(self.run_dir, self.manifest)

    def _take_lock(self) -> None:
        if self._lock_file is not None:
            return
        fd = os.open(self.run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
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

    # -- episodes ----------------------------------------------------------------------------------------

    def _path(self, kind: EpisodeKind) -> Path:
        return self.episodes_path if kind == "episode" else self.probes_path

    def append(self, record: EpisodeRecord) -> None:
        """Add one finished episode (or one infra-error attempt) to episodes.jsonl, durably; a navigation
        probe's to navigation-probes.jsonl."""
        # An ordinary episode's line stays as it was before probes existed (its kind is the default).
        exclude = {"kind"} if record.kind == "episode" else None
        line = (record.model_dump_json(exclude=exclude) + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self._path(record.kind), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)

    def records(self, kind: EpisodeKind = "episode") -> list[EpisodeRecord]:
        """Every line of episodes.jsonl (navigation-probes.jsonl), in order. A torn last line (a crash
        mid-write) is cut off."""
        path = self._path(kind)
        with self._lock:
            lines = read_lines(path, EpisodeRecord)
            if lines.torn:
                self._cut_to(path, lines.whole_bytes)
            return lines.records

    def _cut_to(self, path: Path, whole_bytes: int) -> None:
        # Cut the torn tail away (or add the newline a whole last record lacks) so appends stay aligned.
        with open(path, "r+b") as f:
            size = f.seek(0, os.SEEK_END)
            f.truncate(min(whole_bytes, size))
            if whole_bytes > size:
                f.seek(0, os.SEEK_END)
                f.write(b"\n")
            os.fsync(f.fileno())

    def finished(self, kind: EpisodeKind = "episode") -> dict[EpisodeKey, EpisodeRecord]:
        """The episodes (or probes) that need no rerun: the last scored (non-infra) record per (build, task,
        seed)."""
        return {episode_key(r): r for r in self.records(kind) if r.outcome is not Outcome.INFRA_ERROR}

    def infra_attempts(self, kind: EpisodeKind = "episode") -> dict[EpisodeKey, int]:
        """How many infra-error attempts each (build, task, seed) has had so far."""
        counts: dict[EpisodeKey, int] = {}
        for r in self.records(kind):
            if r.outcome is Outcome.INFRA_ERROR:
                counts[episode_key(r)] = counts.get(episode_key(r), 0) + 1
        return counts

    # -- step files --------------------------------------------------------------------------------------

    def episode_dir(self, build: str, task_id: str, seed: int, kind: EpisodeKind = "episode") -> Path:
        return episode_dir(self.run_dir, build, task_id, seed, kind)

    def fresh_episode_dir(self, build: str, task_id: str, seed: int, kind: EpisodeKind = "episode") -> Path:
        """The episode's directory, emptied of anything an earlier, unfinished attempt left there."""
        path = self.episode_dir(build, task_id, seed, kind)
        if path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path
