"""The scorecard's fidelity rows: fidelity.json (written by `agent-eval fidelity` or a grid with
`fidelity: true`) condensed to one row per build, so scorecard.json/.md carry the step verdicts too."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

FIDELITY_FILE = "fidelity.json"


class FidelityRow(BaseModel):
    """One build's teacher-forced fidelity to the reference (details in fidelity.json)."""

    model_config = ConfigDict(extra="forbid")

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


def read_fidelity_rows(run_dir: Path) -> list[FidelityRow] | None:
    """The rows of run_dir/fidelity.json; None when there is none (or it cannot be read)."""
    from agent_eval.fidelity.result import FidelityResult

    path = run_dir / FIDELITY_FILE
    if not path.is_file():
        return None
    try:
        result = FidelityResult.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValidationError):
        return None
    rows = []
    for b in result.builds:
        tested = {
            name: m.verdict.value
            for name, m in (
                ("agreement", b.agreement),
                ("answer_logprob", b.answer_logprob),
                ("p_done_goal_held", b.p_done_goal_held),
                ("p_done_goal_not_held", b.p_done_goal_not_held),
            )
            if m.verdict is not None
        }
        rows.append(
            FidelityRow(
                build=b.build,
                steps=b.steps,
                episodes=b.episodes,
                agreement=b.agreement.value.mean,
                agreement_low=b.agreement.value.low,
                agreement_high=b.agreement.value.high,
                agreement_delta=b.agreement.vs_reference.mean if b.agreement.vs_reference else None,
                kl=b.kl.value.mean,
                kl_high=b.kl.value.high,
                answer_logprob_delta=b.answer_logprob.vs_reference.mean
                if b.answer_logprob.vs_reference
                else None,
                p_done_goal_held=b.p_done_goal_held.value.mean,
                p_done_goal_not_held=b.p_done_goal_not_held.value.mean,
                verdicts=tested,
                flagged=b.flagged,
            )
        )
    return rows
