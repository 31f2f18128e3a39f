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
