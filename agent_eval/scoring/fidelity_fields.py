"""The scorecard's fidelity rows: fidelity.json (written by `agent-eval fidelity` or a grid with
`fidelity: true`) condensed to one row per build, so scorecard.json/.md carry the step verdicts too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from agent_eval.records import StrictModel
from agent_eval.rundir import FIDELITY_FILE


class FidelityRow(StrictModel):
    """One build's teacher-forced fidelity to the reference (details in fidelity.json)."""

    build: str = Field(description="The build probed on the reference's recorded steps.")
    steps: int = Field(description="Recorded steps replayed to this build.")
    episodes: int = Field(description="Episodes those steps come from (the clusters of every interval).")
    agreement: float | None = Field(description="Share of steps whose greedy action matches the source's.")
    agreement_low: float | None = Field(description="Lower end of its 95% interval, clustered by episode.")
    agreement_high: float | None = Field(description="Upper end of its 95% interval, clustered by episode.")
    agreement_delta: float | None = Field(description="Agreement minus the reference's on the same steps.")
    kl: float | None = Field(
        description="Mean per-step KL(reference ‖ build) over answer tokens, nats (lower bound)."
    )
    kl_high: float | None = Field(description="Upper end of the KL's 95% interval, clustered by episode.")
    answer_logprob_delta: float | None = Field(
        description="Log-probability of the source's answer, minus the reference's, per step."
    )
    p_done_goal_held: float | None = Field(description="Mean P(done) at steps where the goal held.")
    p_done_goal_not_held: float | None = Field(
        description="Mean P(done) at steps where the goal did not hold."
    )
    verdicts: dict[str, str] = Field(
        description="Per tested metric: WORSE, BETTER or NO DIFFERENCE SHOWN (Holm)."
    )
    flagged: bool = Field(description="Some tested metric is WORSE than the reference's.")
    early_warning: bool | None = Field(
        None,
        description="`fidelity: first`: whether the probes flagged the build before its episodes began "
        "(Holm over its own metrics); null: not probed first.",
    )
    early_warning_s: float | None = Field(
        None, description="Seconds those probes took: fidelity's time to flag with the steps on disk."
    )


def _mean(metric: dict[str, Any], part: str = "value", key: str = "mean") -> float | None:
    block = metric.get(part) or {}
    value = block.get(key)
    return float(value) if isinstance(value, int | float) else None


def _row(b: dict[str, Any], early: dict[str, Any] | None = None) -> FidelityRow:
    tested = ("agreement", "answer_logprob", "p_done_goal_held", "p_done_goal_not_held")
    return FidelityRow(
        build=str(b["build"]),
        steps=int(b["steps"]),
        episodes=int(b["episodes"]),
        agreement=_mean(b["agreement"]),
        agreement_low=_mean(b["agreement"], key="low"),
        agreement_high=_mean(b["agreement"], key="high"),
        agreement_delta=_mean(b["agreement"], "vs_reference"),
        kl=_mean(b["kl"]),
        kl_high=_mean(b["kl"], key="high"),
        answer_logprob_delta=_mean(b["answer_logprob"], "vs_reference"),
        p_done_goal_held=_mean(b["p_done_goal_held"]),
        p_done_goal_not_held=_mean(b["p_done_goal_not_held"]),
        verdicts={m: str(b[m]["verdict"]) for m in tested if b[m].get("verdict")},
        flagged=bool(b.get("flagged")),
        early_warning=bool(early["flagged"]) if early else None,
        early_warning_s=float(early["probe_s"]) if early else None,
    )


def read_fidelity_json(run_dir: Path) -> dict[str, Any] | None:
    """run_dir/fidelity.json as the fidelity part writes it; None when absent or unreadable."""
    try:
        data = json.loads((run_dir / FIDELITY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_fidelity_rows(run_dir: Path) -> list[FidelityRow] | None:
    """The rows of run_dir/fidelity.json; None when there is none (or it cannot be read)."""
    data = read_fidelity_json(run_dir)
    if data is None:
        return None
    try:
        early = {str(w["build"]): w for w in data.get("early_warnings", [])}
        return [_row(b, early.get(str(b["build"]))) for b in data.get("builds", [])]
    except (KeyError, TypeError, ValueError, ValidationError):
        return None
