"""An episode record as a stand-in seat (a phone that plays no real episode) returns it to run_cells."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agent_eval.records import EpisodeRecord, Outcome, StepLatency


def seat_record(
    cell: Any, attempt: Any, serial: str, started: datetime, outcome: Outcome, error: str | None = None
) -> EpisodeRecord:
    """The record of one attempt of `cell` that ended now with `outcome` (success or an infra error)."""
    won = outcome is Outcome.SUCCESS
    return EpisodeRecord(
        run_id=attempt.run_id,
        build=cell.build,
        task_id=cell.task.id,
        seed=cell.seed,
        attempt=attempt.number,
        outcome=outcome,
        reached=won,
        success=won,
        error=error,
        started_at=started,
        finished_at=datetime.now(UTC),
        latency=StepLatency(model_s=0.0),
        device=serial,
    )
