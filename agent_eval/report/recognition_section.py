"""The recognition gap in scorecard.md and report.html: per build, does the project's starting claim hold?

"Navigation survives quantization; recognising completion does not": the paired gap, its bounds, the claim.
"""

from __future__ import annotations

import json
from html import escape

from agent_eval.report.text import TextTable, signed
from agent_eval.scoring.scorecard import Scorecard

CLAIM = "navigation survives while completion recognition does not"


def recognition_table(card: Scorecard) -> TextTable | None:
    """One row per compared build: the gap with its bounds, the claim, and the reached-then-undone counts."""
    rows = [
        (
            c.build,
            str(g.pairs),
            f"{signed(g.gap)} [{signed(g.low)}, {signed(g.high)}]",
            g.claim,
            f"{g.undone} ({g.undone_where_reference_succeeded} where the reference completed)",
            str(g.reference_undone),
        )
        for c in (card.regression.builds if card.regression else [])
        if (g := c.recognition) is not None
    ]
    if not rows:
        return None
    looks = card.regression.looks if card.regression else 1
    return TextTable(
        f"Recognition gap: '{CLAIM}' (bounds one-sided at 1 − α/{looks})",
        ("build", "pairs", "gap (recognition drop − navigation drop)", "claim", "undone", "reference undone"),
        tuple(rows),
    )


def recognition_html(card: Scorecard) -> str:
    """The claim per build as sentences carrying their scorecard.json paths; empty without comparisons."""
    items = "".join(
        f'<li data-path="regression.builds.{i}.recognition.sentence" '
        f'data-value="{escape(json.dumps(c.recognition.sentence))}">{escape(c.recognition.sentence)}</li>'
        for i, c in enumerate(card.regression.builds if card.regression else [])
        if c.recognition is not None
    )
    if not items:
        return ""
    return f'<h2>Recognition gap: does "{CLAIM}" hold?</h2><ul class="sentences">{items}</ul>'
