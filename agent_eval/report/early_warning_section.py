"""The early warnings of a grid with `fidelity: first`, each beside its build's episode verdicts.

One sentence per build probed before its episodes; scorecard.md lists them and report.html shows them.
"""

from __future__ import annotations

from html import escape

from agent_eval.scoring.scorecard import Scorecard


def early_warning_lines(card: Scorecard) -> list[str]:
    """Per build probed first: what fidelity said before its episodes, and what its episodes decided."""
    episodes = {c.build: c for c in card.regression.builds} if card.regression else {}
    lines = []
    for row in card.fidelity or []:
        if row.early_warning is None:
            continue
        said = "flagged" if row.early_warning else "did not flag"
        took = f" after {row.early_warning_s:.0f} s of probes" if row.early_warning_s is not None else ""
        compared = episodes.get(row.build)
        decided = (
            f"its episodes: navigation {compared.navigation.verdict}, success {compared.success.verdict}"
            if compared is not None
            else "its episodes: no verdict"
        )
        lines.append(f"{row.build}: fidelity {said} it before its episodes{took}; {decided}.")
    return lines


def early_warning_markdown(card: Scorecard) -> list[str]:
    """scorecard.md's section (empty without early warnings)."""
    lines = early_warning_lines(card)
    if not lines:
        return []
    return ["## Early warning (fidelity first)", "", *(f"- {line}" for line in lines), ""]


def early_warning_html(card: Scorecard) -> str:
    lines = early_warning_lines(card)
    if not lines:
        return ""
    items = "".join(f"<li>{escape(line)}</li>" for line in lines)
    return f"<h2>Early warning (fidelity first)</h2><ul>{items}</ul>"
