"""fidelity.json as text: the table printed by `agent-eval fidelity` and appended to scorecard.md."""

from __future__ import annotations

from collections.abc import Callable

from agent_eval.fidelity.result import FidelityResult, MetricFidelity
from agent_eval.fidelity.stats import ClusteredMean


def _ci(m: ClusteredMean, places: int = 3) -> str:
    if m.mean is None:
        return "–"
    if m.low is None or m.high is None:
        return f"{m.mean:.{places}f}"
    return f"{m.mean:.{places}f} [{m.low:.{places}f}, {m.high:.{places}f}]"


def _vs(m: MetricFidelity) -> str:
    if m.vs_reference is None or m.vs_reference.mean is None:
        return "–"
    verdict = f" {m.verdict.value}" if m.verdict else ""
    return f"{m.vs_reference.mean:+.3f}{verdict}"


def fidelity_markdown(result: FidelityResult) -> str:
    """A markdown section: one row per build, intervals clustered by episode, verdicts after Holm."""
    head = (
        "| build | steps | agreement (95% CI) | Δ vs ref | KL ≥ (nats) | token top-1 | log P(source answer) "
        "| Δ | P(done) goal held | Δ | P(done) goal not held | Δ | flagged | steps/min |"
    )
    rows = [head, "|" + "---|" * 14]
    for b in result.builds:
        speed = f"{b.steps_per_min:.0f}" if b.steps_per_min else "–"
        rows.append(
            f"| {b.build}{' (ref)' if b.reference else ''} | {b.steps} | {_ci(b.agreement.value)} | "
            f"{_vs(b.agreement)} | {_ci(b.kl.value, 4)} | {_ci(b.token_top1.value)} | "
            f"{_ci(b.answer_logprob.value, 2)} | {_vs(b.answer_logprob)} | {_ci(b.p_done_goal_held.value)} | "
            f"{_vs(b.p_done_goal_held)} | {_ci(b.p_done_goal_not_held.value)} | "
            f"{_vs(b.p_done_goal_not_held)} | "
            f"{'yes' if b.flagged else 'no'} | {speed} |"
        )
    intro = (
        f"Teacher-forced fidelity: {result.steps} recorded steps of {result.episodes} episodes "
        f"(steps from {result.steps_from}), replayed to every build; intervals clustered by episode, "
        "Δ = build − reference on the same steps, verdicts Holm-adjusted."
    )
    return "\n".join([intro, "", *rows, "", *(f"- {n}" for n in result.notes)]) + "\n"


def print_summary(result: FidelityResult, say: Callable[[str], None]) -> None:
    say(fidelity_markdown(result))
    for reason, n in result.skipped.items():
        say(f"skipped {n} step(s): {reason}")
