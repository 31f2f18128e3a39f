"""The run store: durable episode lines, a torn last line cut away and redone, and refusing a foreign run."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_eval.errors import RunStoreError
from agent_eval.records import BuildManifest, EpisodeRecord, Outcome
from agent_eval.rundir import RunStore
from agent_eval.runner.new_run_manifest import new_manifest
from agent_eval.task import load_task

TASK = Path(__file__).resolve().parents[2] / "tasks" / "wifi_on.yaml"
BUILD = BuildManifest(name="endpoint", scheme="endpoint", engine="endpoint", model="m")


def record(seed: int, outcome: Outcome = Outcome.SUCCESS, build: str = "endpoint") -> EpisodeRecord:
    now = datetime.now(UTC)
    return EpisodeRecord(
        run_id="r",
        build=build,
        task_id="wifi_on",
        seed=seed,
        outcome=outcome,
        reached=outcome is Outcome.SUCCESS,
        success=outcome is Outcome.SUCCESS,
        started_at=now,
        finished_at=now,
        error="adb device emulator-5800 disappeared" if outcome is Outcome.INFRA_ERROR else None,
    )


def opened(run_dir: Path, **config: object) -> RunStore:
    store = RunStore(run_dir)
    store.open(new_manifest(run_dir.name, {"model": "m", "seeds": 2, **config}, [load_task(TASK)], [BUILD]))
    return store


def test_appended_episodes_are_read_back_and_infra_attempts_counted_apart(tmp_path: Path) -> None:
    with opened(tmp_path / "run") as store:
        store.append(record(0))
        store.append(record(1, Outcome.INFRA_ERROR))
        store.append(record(1, Outcome.INFRA_ERROR))
        store.append(record(1, Outcome.NAV_FAIL))
        store.append(record(2, Outcome.INFRA_ERROR))
        finished = store.finished()
        assert sorted(finished) == [("endpoint", "wifi_on", 0), ("endpoint", "wifi_on", 1)]
        assert finished[("endpoint", "wifi_on", 1)].outcome is Outcome.NAV_FAIL
        assert store.infra_attempts() == {("endpoint", "wifi_on", 1): 2, ("endpoint", "wifi_on", 2): 1}
    lines = (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 5 and all(json.loads(line)["task_id"] == "wifi_on" for line in lines)


def test_a_torn_last_line_is_cut_away_and_its_episode_redone(tmp_path: Path) -> None:
    with opened(tmp_path / "run") as store:
        store.append(record(0))
        store.append(record(1))
    path = tmp_path / "run" / "episodes.jsonl"
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - 40])  # a crash in the middle of writing seed 1's line
    with opened(tmp_path / "run") as store:
        assert list(store.finished()) == [("endpoint", "wifi_on", 0)]
        assert path.read_bytes() == whole[: whole.index(b"\n") + 1]
        store.append(record(1))  # the redone episode lands on a line of its own
        assert sorted(store.finished()) == [("endpoint", "wifi_on", 0), ("endpoint", "wifi_on", 1)]


def test_a_damaged_line_in_the_middle_is_an_error_naming_it(tmp_path: Path) -> None:
    with opened(tmp_path / "run") as store:
        store.append(record(0))
    path = tmp_path / "run" / "episodes.jsonl"
    path.write_bytes(path.read_bytes() + b'{"not": "an episode"}\n' + path.read_bytes())
    with opened(tmp_path / "run") as store, pytest.raises(RunStoreError, match=r"line 2, is not an episode"):
        store.finished()


def test_a_run_continues_with_more_seeds_but_refuses_another_configuration(tmp_path: Path) -> None:
    with opened(tmp_path / "run") as store:
        created = store.manifest.created_at if store.manifest else None
    with opened(tmp_path / "run", seeds=5) as store:
        assert store.manifest is not None
        assert store.manifest.sessions == 2 and store.manifest.created_at == created
        assert store.manifest.config["seeds"] == 5
    with pytest.raises(RunStoreError) as err:
        opened(tmp_path / "run", model="other", max_steps=3)
    message = str(err.value)
    assert "different configuration" in message
    assert "model: 'm' → 'other'" in message and "max_steps: None → 3" in message


def test_a_changed_build_is_named_in_the_refusal(tmp_path: Path) -> None:
    opened(tmp_path / "run").close()
    other = BUILD.model_copy(update={"model": "m2", "accepts_images": True})
    store = RunStore(tmp_path / "run")
    manifest = new_manifest("run", {"model": "m", "seeds": 2}, [load_task(TASK)], [other])
    with pytest.raises(RunStoreError, match=r"build endpoint differs in accepts_images, model"):
        store.open(manifest)


def test_two_processes_cannot_write_one_run(tmp_path: Path) -> None:
    first = opened(tmp_path / "run")
    with pytest.raises(RunStoreError, match="in use by another agent-eval process"):
        opened(tmp_path / "run")
    first.close()
    opened(tmp_path / "run").close()


def test_episode_dirs_are_cleared_for_a_redo_and_names_checked(tmp_path: Path) -> None:
    with opened(tmp_path / "run") as store:
        d = store.fresh_episode_dir("endpoint", "wifi_on", 3)
        assert d == tmp_path / "run" / "episodes" / "endpoint" / "wifi_on" / "3"
        (d / "step-001.png").write_bytes(b"partial")
        assert list(store.fresh_episode_dir("endpoint", "wifi_on", 3).iterdir()) == []
        with pytest.raises(RunStoreError, match="cannot name a directory"):
            store.episode_dir("../escape", "wifi_on", 0)


def test_the_manifest_records_tasks_with_hashes_host_and_versions(tmp_path: Path) -> None:
    with opened(tmp_path / "run") as store:
        pass
    data = json.loads((tmp_path / "run" / "run.json").read_text())
    assert data["tasks"][0]["id"] == "wifi_on" and len(data["tasks"][0]["sha256"]) == 64
    assert data["tasks"][0]["path"].endswith("wifi_on.yaml")
    assert data["builds"][0]["name"] == "endpoint"
    assert data["host"]["cpus"] >= 1 and "pydantic" in data["packages"]
    assert store.manifest is not None and data["run_id"] == "run"
