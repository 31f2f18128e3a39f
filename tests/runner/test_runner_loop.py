"""run_cells, the library core under `agent-eval run`: several phones at once, resuming, and broken tasks.

Played by the oracle (each task's scripted solution), so every scored episode should be a success.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_eval.agent.oracle import OraclePolicy
from agent_eval.device.driver import Device
from agent_eval.errors import TaskError
from agent_eval.records import BuildManifest, EpisodeRecord, Outcome
from agent_eval.runner import BuildAgent, Cell, RunStore, new_manifest, run_cells
from agent_eval.task import Task, load_task
from virtual_phone import start_fleet

TASKS = Path(__file__).resolve().parents[2] / "tasks"
ORACLE = BuildAgent(
    "oracle", OraclePolicy, BuildManifest(name="oracle", scheme="scripted", engine="scripted")
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def phones() -> Iterator[list[Device]]:
    with start_fleet(count=2, base_port=5820) as fleet:
        yield [Device(serial) for serial in fleet.serials]


def open_store(run_dir: Path, tasks: list[Task]) -> RunStore:
    store = RunStore(run_dir)
    store.open(new_manifest(run_dir.name, {"seeds": 2}, tasks, [ORACLE.manifest] if ORACLE.manifest else []))
    return store


def test_two_phones_share_the_cells_and_a_second_call_keeps_them(
    phones: list[Device], tmp_path: Path
) -> None:
    tasks = [load_task(TASKS / "wifi_on.yaml"), load_task(TASKS / "wifi_on_verify.yaml")]
    cells = [Cell("oracle", task, seed) for task in tasks for seed in range(2)]
    seen: list[EpisodeRecord] = []
    with open_store(tmp_path / "run", tasks) as store:
        summary = run_cells(cells, phones, {"oracle": ORACLE}, store, on_episode=lambda c, r: seen.append(r))
        assert summary.complete and summary.outcomes == {Outcome.SUCCESS: 4}
        assert {r.device for r in seen} == {p.serial for p in phones}  # both phones worked
        assert sorted((r.task_id, r.seed) for r in seen) == sorted((c.task.id, c.seed) for c in cells)
        verify = [r for r in seen if r.task_id == "wifi_on_verify"]
        assert all(r.verify and r.goal_timeline[0] for r in verify)

        again = run_cells(cells, phones, {"oracle": ORACLE}, store)
        assert again.kept == 4 and not again.outcomes
        assert len(store.records()) == 4


def test_a_task_whose_goal_already_holds_stops_the_run_with_a_clear_message(
    phones: list[Device], tmp_path: Path
) -> None:
    broken = tmp_path / "wifi_on_broken.yaml"
    broken.write_text(
        "id: wifi_on_broken\ngoal: Turn Wi-Fi on.\nsetup: [svc wifi enable]\n"
        'goal_state: {setting: {namespace: global, key: wifi_on, equals: "1"}}\nmax_steps: 3\n'
        "oracle: [{type: done}]\n"
    )
    task = load_task(broken)
    with open_store(tmp_path / "run", [task]) as store:
        with pytest.raises(
            TaskError, match=r"wifi_on_broken.yaml: goal already holds at the start.*setup is broken"
        ):
            run_cells([Cell("oracle", task, 0)], phones[:1], {"oracle": ORACLE}, store)
        assert store.records() == []
