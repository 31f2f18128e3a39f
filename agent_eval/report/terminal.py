"""The scorecard in the terminal: verdict sentences, then rich tables of rates, outcomes, cost and regression.

The same tables as scorecard.md (built in markdown.py), so the terminal and the file never disagree.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent_eval.report.family_section import ability_sentences, family_tables
from agent_eval.report.markdown import scorecard_tables, sentences
from agent_eval.report.text import TextTable
from agent_eval.scoring.scorecard import Scorecard
from agent_eval.scoring.splits import split_table
from agent_eval.scoring.stats import Verdict

NUMERIC_STARTS = frozenset("0123456789+−-–")
VERDICT_STYLE = {
    Verdict.REGRESSION.value: "bold red",
    Verdict.NON_INFERIOR.value: "green",
    Verdict.INCONCLUSIVE.value: "yellow",
}


def _numeric(cell: str) -> bool:
    return cell[:1] in NUMERIC_STARTS


def rich_table(table: TextTable) -> Table:
    """Numbers right-aligned so their decimals line up; names and verdicts left-aligned."""
    out = Table(header_style="bold")
    for i, header in enumerate(table.headers):
        numeric = i > 0 and all(_numeric(row[i]) for row in table.rows)
        out.add_column(header, justify="right" if numeric else "left", no_wrap=i == 0)
    for row in table.rows:
        out.add_row(*(Text(cell, style=VERDICT_STYLE.get(cell, "")) for cell in row))
    return out


def _styled_sentence(sentence: str) -> Text:
    text = Text(sentence)
    for word, style in VERDICT_STYLE.items():
        text.highlight_words([word], style=style)
    text.highlight_words(["non-inferior"], style="green")
    return text


def render(card: Scorecard, console: Console, *, drill_down: bool = False) -> None:
    """Print the scorecard: verdicts and notes first (what most readers want), then the tables."""
    reference = card.reference or "none"
    console.print(
        Text(f"Run {card.run_id}: reference {reference}, margin δ = {card.margin:.2f}", style="bold")
    )
    for sentence in sentences(card):
        console.print(_styled_sentence(sentence))
    for note in card.notes:
        console.print(Text(f"note: {note}", style="dim"))
    for table in [*scorecard_tables(card, drill_down=drill_down), *family_tables(card)]:
        if table is not None:
            console.print()
            # Printed above the table, not as its title: rich would wrap a title to a narrow table's width.
            console.print(Text(table.title, style="bold"))
            console.print(rich_table(table))
    for line in split_table(card.splits):
        console.print(Text(line.removeprefix("## "), style="bold" if line.startswith("## ") else ""))
    for sentence in ability_sentences(card):
        console.print(_styled_sentence(sentence))
