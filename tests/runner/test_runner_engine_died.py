"""run_cells when the engine behind a build dies: with `engine_died`, the first infra-error attempt that
finds it dead stops the run with that cell put back, instead of every cell spending its attempts on a dead
server."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from _seat_records import seat_record

from agent_eval.records import EpisodeRecord, Outcome
from agent_eval.runner import BuildAgent, Cell, RunStore, new_manifest, run_cells
from agent_eval.task import load_task

TASK = Path(__file__).resolve().parents[2] / "tasks" / "wifi_on.yaml"
AGENT = BuildAgent("b", lambda instance: None)  # type: ignore[arg-type,return-value]  (the seat plays)


class _Seat:
    """A phone whose episodes fail with an infra error while the (pretend) engine is dead."""

    serial = "phone-0"

    def __init__(self, engine: dict[str, bool], dies_at_play: int) -> None:
        self.engine, self.dies_at_play, self.plays = engine, dies_at_play, 0

    def play(self, cell: Any, agent: Any, attempt: Any) -> EpisodeRecord:
        self.plays += 1
        if self.plays == self.dies_at_play:
            self.engine["dead"] = True
        outcome = Outcome.INFRA_ERROR if self.engine["dead"] else Outcome.SUCCESS
        error = "connection refused" if self.engine["dead"] else None
        return seat_record(cell, attempt, self.serial, datetime.now(UTC), outcome, error)

    def still_online(self) -> bool:
        return True


def _run(tmp_path: Path, watch: bool) -> tuple[RunStore, dict[str, bool], list[Cell], Any]:
    task = load_task(TASK)
    store = RunStore(tmp_path / "run")
    store.open(new_manifest("run", {"seeds": 3}, [task], []))
    engine = {"dead": False}
    cells = [Cell("b", task, seed) for seed in range(3)]
    died = (lambda build: engine["dead"]) if watch else None
    seat = _Seat(engine, dies_at_play=2)  # seed 0 plays, then the engine dies under seed 1
    summary = run_cells(cells, [seat], {"b": AGENT}, store, snapshot=None, engine_died=died)
    return store, engine, cells, summary


def test_a_dead_engine_stops_the_run_after_one_attempt_and_the_rerun_finishes(tmp_path: Path) -> None:
    store, engine, cells, summary = _run(tmp_path, watch=True)
    assert summary.infra_attempts == 1 and summary.failed == []
    assert summary.gave_up == "stopped: the engine of b died"
    assert sorted(c.seed for c in summary.not_run) == [1, 2] and not summary.complete
    engine["dead"] = False  # the grid restarts the engine, then runs what is left
    rerun = run_cells(cells, [_Seat(engine, dies_at_play=0)], {"b": AGENT}, store, snapshot=None)
    assert rerun.complete and rerun.kept == 1 and rerun.outcomes == {Outcome.SUCCESS: 2}
    records = store.records()
    store.close()
    retried = [r for r in records if r.seed == 1]
    assert [(r.attempt, r.outcome) for r in retried] == [(1, Outcome.INFRA_ERROR), (2, Outcome.SUCCESS)]


def test_without_the_check_every_cell_spends_its_attempts(tmp_path: Path) -> None:
    store, _, _, summary = _run(tmp_path, watch=False)
    store.close()
    # Two cells in a row out of attempts stop the run: 6 infra-error lines for one death.
    assert summary.infra_attempts == 6 and len(summary.failed) == 2 and summary.not_run == []
