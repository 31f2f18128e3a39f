"""Task families in scorecard.md and report.html: rates per family and split, typing and answer accuracy,
and which ability breaks first down the ladder. Every table is left out when it would be empty."""

from __future__ import annotations

import json
from html import escape

from agent_eval.report.text import MISSING, TextTable, number, rate_text, signed
from agent_eval.scoring.abilities import ABILITIES, ABILITY_WORDS, AbilityLadder, AbilityVerdict
from agent_eval.scoring.scorecard import Scorecard


def families_table(card: Scorecard) -> TextTable | None:
    rows = tuple(
        (f.build, f.family, f.split, str(f.tasks), rate_text(f.navigation), rate_text(f.success))
        for f in card.families
    )
    if not rows:
        return None
    headers = ("build", "family", "split", "tasks", "navigation", "success")
    return TextTable("Rates per task family (Wilson 95% intervals)", headers, rows)


def typing_table(card: Scorecard) -> TextTable | None:
    rows = tuple(
        (
            t.build,
            t.family,
            str(t.steps),
            str(t.episodes),
            f"{number(t.accuracy)} [{number(t.low)}, {number(t.high)}]"
            if t.low is not None
            else f"{number(t.accuracy)} (no interval: under 2 episodes, or no variation)",
        )
        for t in card.typing
    )
    if not rows:
        return None
    headers = ("build", "family", "typed steps", "episodes", "accuracy [95% CI, by episode]")
    return TextTable("Typing accuracy per step (1 − edit distance / intended length)", headers, rows)


def answers_table(card: Scorecard) -> TextTable | None:
    rows = tuple((a.build, a.family, str(a.answered), rate_text(a.right)) for a in card.answers)
    if not rows:
        return None
    headers = ("build", "family", "answered", "right final answer")
    return TextTable("Answer accuracy on answer tasks (Wilson 95% intervals)", headers, rows)


def _cell(v: AbilityVerdict | None) -> str:
    if v is None:
        return MISSING
    interval = f" [{signed(v.low)}, {signed(v.high)}]" if v.low is not None else ""
    return f"{signed(v.delta)}{interval} {v.verdict.value}"


def ability_table(abilities: AbilityLadder) -> TextTable:
    rows = []
    for row in abilities.rows:
        found = {v.ability: v for v in row.abilities}
        first = ", ".join(ABILITY_WORDS[a] for a in row.first_regressions) or MISSING
        rows.append((row.build, row.family, *(_cell(found.get(a)) for a in ABILITIES), first))
    headers = ("rung", "family", *(f"Δ {ABILITY_WORDS[a]}" for a in ABILITIES), "first regression here")
    return TextTable("Which ability breaks first: each rung against the reference", headers, tuple(rows))


def family_tables(card: Scorecard) -> list[TextTable | None]:
    """The family tables of scorecard.md and the terminal; None where a table would be empty."""
    abilities = card.ladder.abilities if card.ladder is not None else None
    return [
        families_table(card),
        typing_table(card),
        answers_table(card),
        ability_table(abilities) if abilities is not None else None,
    ]


def ability_sentences(card: Scorecard) -> list[str]:
    """What breaks first: over all tasks, then per family (empty without a ladder)."""
    abilities = card.ladder.abilities if card.ladder is not None else None
    return [p.sentence for p in abilities.families] if abilities is not None else []


def _html_table(table: TextTable) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in table.rows)
    return f"<h3>{escape(table.title)}</h3><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def splits_table(card: Scorecard) -> TextTable | None:
    """Training and held-out tasks apart (scorecard.md has it as `split_table`); None without held-out."""
    if not {s.split for s in card.splits} - {"train"}:
        return None
    rows = tuple(
        (s.build, s.split, str(s.tasks), rate_text(s.navigation), rate_text(s.success)) for s in card.splits
    )
    headers = ("build", "split", "tasks", "navigation", "success")
    return TextTable("Training and held-out tasks (Wilson 95% intervals)", headers, rows)


def families_html(card: Scorecard) -> str:
    """report.html's section: the sentences (with their scorecard.json paths), then the tables."""
    shown = [splits_table(card), *family_tables(card)]
    tables = "".join(_html_table(t) for t in shown if t is not None)
    items = "".join(
        f'<li data-path="ladder.abilities.families.{i}.sentence" data-value="{escape(json.dumps(s))}">'
        f"{escape(s)}</li>"
        for i, s in enumerate(ability_sentences(card))
    )
    if not tables and not items:
        return ""
    sentences = f'<ul class="sentences">{items}</ul>' if items else ""
    return f"<h2>Task families, typing and answers</h2>{sentences}{tables}"
