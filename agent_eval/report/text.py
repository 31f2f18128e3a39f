"""Cells of the plain-text tables: numbers, rates and the table itself (markdown, terminal, ladder)."""

from __future__ import annotations

from dataclasses import dataclass

from agent_eval.scoring.build_score import Rate

MISSING = "–"


@dataclass(frozen=True)
class TextTable:
    """A titled table of already formatted cells."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def number(value: float | int | None, places: int = 2) -> str:
    return MISSING if value is None else f"{value:.{places}f}"


def signed(value: float | None) -> str:
    if value is None:
        return MISSING
    # Rounding can leave "-0.00", which reads as a drop that is not there.
    return "0.00" if abs(value) < 0.005 else f"{value:+.2f}".replace("-", "−")


def p_value(value: float | None) -> str:
    if value is None:
        return MISSING
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def rate_text(r: Rate) -> str:
    """e.g. "0.80 [0.49, 0.94] 8/10"."""
    if r.rate is None:
        return f"{MISSING} 0/0"
    return f"{r.rate:.2f} [{r.low:.2f}, {r.high:.2f}] {r.count}/{r.of}"


def span(low: float | None, high: float | None) -> str:
    """e.g. "[−0.24, −0.08]"; – when there is no interval."""
    return MISSING if low is None or high is None else f"[{signed(low)}, {signed(high)}]"


def verdict_interval_header(confidences: list[float]) -> str:
    """The header of the interval a verdict reads: its confidence, and what it is about."""
    levels = sorted({round(c * 100, 1) for c in confidences})
    shown = "/".join(f"{x:g}%" for x in levels) if levels else "90%"
    return f"Δ [{shown} CI, these tasks]"


OTHER_TASKS_HEADER = "other tasks [95% CI]"
VERDICT_NOTE = (
    "REGRESSION: Holm-adjusted exact McNemar p < α/looks. NON-INFERIOR: the drop's one-sided upper bound at "
    "1 − α/looks is below δ (the interval's lower end is above −δ). INCONCLUSIVE: neither; the data cannot "
    "decide, which is not no regression. A verdict and the interval beside it are about these tasks, with "
    "seeds drawn at random (stratified by task, two-sided at 1 − 2α/looks, so each end is the one-sided "
    "bound the verdict reads); 'other tasks' is a different question, the generalisation to tasks like these "
    "(clustered by task, t with tasks − 1 df), which no verdict reads."
)
