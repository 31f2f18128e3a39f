"""Typing accuracy per typed step (character edit distance against the text the task meant) and answers.

Which typed step is compared with which intended text is decided here; docs/scorecard.md states the rule.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import Field

from agent_eval.records import EpisodeRecord, StepRecord, StrictModel
from agent_eval.rundir import TypedField
from agent_eval.scoring.build_score import BuildName, Rate, rate
from agent_eval.scoring.stats import clustered_mean

EpisodeKey = tuple[str, str, int]  # build, task, seed
ALL = "all"
_ID = re.compile(r"\sid=(\S+)")


def edit_distance(typed: str, intended: str) -> int:
    """Levenshtein distance in characters: insertions, deletions and substitutions, each costing 1."""
    previous = list(range(len(intended) + 1))
    for i, a in enumerate(typed, 1):
        current = [i]
        for j, b in enumerate(intended, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1]


def step_accuracy(typed: str, intended: str) -> float:
    """1 − distance / len(intended), floored at 0 (typing far more than meant is no better than nothing)."""
    if not intended:
        return 1.0 if not typed else 0.0
    return max(0.0, 1.0 - edit_distance(typed, intended) / len(intended))


def fill(text: str, params: Mapping[str, str]) -> str:
    """The intended text for one episode: each `{name}` its params hold replaced by the value."""
    for name, value in params.items():
        text = text.replace("{" + name + "}", value)
    return text


def _field_of(step: StepRecord) -> str:
    """The id of the field the step typed into: as recorded (`target_id`), else the `id=` of its element's
    line (shown only for elements without a label; runs before `target_id`), else ''."""
    if step.target_id:
        return step.target_id
    element = step.action.element if step.action is not None else None
    if element is None:
        return ""
    for line in step.elements:
        if line.split(" ", 1)[0].strip("[]") == str(element):  # `[3] EditText id=number`
            found = _ID.findall(line)
            return found[-1] if found else ""
    return ""


def typed_step_accuracies(
    steps: Sequence[StepRecord], fields: Sequence[TypedField], params: Mapping[str, str]
) -> list[float]:
    """One accuracy per `type` step of the episode, each against the intended text it is matched with:
    the first intended field not yet typed, in the oracle's order, that could be the field it typed into
    (`_field_of`): one with that id, or one whose oracle step names no field (it types into whatever has
    focus, so any id may be it: a picker's minutes share the hour's id); else the field of that id again
    (a retype); else the first intended field not yet typed; else (every field typed already) the
    intended text nearest to what it typed. Empty when the task means nothing to be typed."""
    intended = [(f.field, fill(f.text, params)) for f in fields]
    if not intended:
        return []
    claimed: set[int] = set()
    out: list[float] = []
    for step in steps:
        action = step.action
        if action is None or action.type != "type" or not action.text:
            continue
        typed, field = action.text, _field_of(step)
        by_id = [i for i, (name, _) in enumerate(intended) if field and name == field]
        free = [i for i in range(len(intended)) if i not in claimed]
        could_be = [i for i in free if field and intended[i][0] in (field, "")]
        if could_be:
            index = could_be[0]
        elif by_id:
            index = by_id[0]
        elif free:
            index = free[0]
        else:
            index = min(range(len(intended)), key=lambda i: edit_distance(typed, intended[i][1]))
        claimed.add(index)
        out.append(step_accuracy(typed, intended[index][1]))
    return out


def answered_right(episode: EpisodeRecord) -> bool:
    """An answer task's episode whose final action was an answer that met the task's answer check."""
    return episode.said == "answer" and episode.answer_correct is True


class TypingScore(StrictModel):
    """One build's typing accuracy on the typed steps of one family (or all of them)."""

    build: BuildName
    family: str = Field(description="app/family, or 'all' for every typed step of the build.")
    steps: int = Field(description="Typed steps compared with an intended text.")
    episodes: int = Field(description="Episodes those steps come from (the clusters of the interval).")
    accuracy: float | None = Field(description="Mean over steps of 1 − edit distance / intended length.")
    low: float | None = Field(description="Lower end of its 95% interval, clustered by episode.")
    high: float | None = Field(description="Upper end of its 95% interval, clustered by episode.")


class AnswerScore(StrictModel):
    """One build's answers on the answer tasks of one family (or all of them)."""

    build: BuildName
    family: str = Field(description="app/family, or 'all' for every answer task of the build.")
    answered: int = Field(description="Episodes whose final action was an answer.")
    right: Rate = Field(
        description="Episodes whose final answer was right, of the answer tasks' scored episodes (the "
        "answer tasks' success); Wilson 95% interval."
    )


def _groups(family_of: Mapping[str, str], tasks: set[str]) -> list[str]:
    families = sorted({family_of.get(t, "") for t in tasks} - {""})
    return [ALL, *families] if len(families) > 1 else [ALL]


def typing_scores(
    accuracies: Mapping[EpisodeKey, Sequence[float]], family_of: Mapping[str, str]
) -> list[TypingScore]:
    """Per build, over all typed steps and per family (when there is more than one)."""
    out: list[TypingScore] = []
    for build in sorted({key[0] for key, values in accuracies.items() if values}):
        mine = {key: values for key, values in accuracies.items() if key[0] == build and values}
        for group in _groups(family_of, {key[1] for key in mine}):
            values, clusters = [], []
            for key, steps in mine.items():
                if group in (ALL, family_of.get(key[1])):
                    values += list(steps)
                    clusters += [f"{key[1]}#{key[2]}"] * len(steps)
            mean, interval = clustered_mean(values, clusters)
            out.append(
                TypingScore(
                    build=build,
                    family=group,
                    steps=len(values),
                    episodes=len(set(clusters)),
                    accuracy=mean,
                    low=interval.low if interval else None,
                    high=interval.high if interval else None,
                )
            )
    return out


def answer_scores(
    scored: Sequence[EpisodeRecord], answer_tasks: set[str], family_of: Mapping[str, str]
) -> list[AnswerScore]:
    """Per build, over all answer tasks and per family (when there is more than one)."""
    eps = [e for e in scored if e.task_id in answer_tasks]
    out: list[AnswerScore] = []
    for build in sorted({e.build for e in eps}):
        mine = [e for e in eps if e.build == build]
        for group in _groups(family_of, {e.task_id for e in mine}):
            chosen = [e for e in mine if group in (ALL, family_of.get(e.task_id))]
            out.append(
                AnswerScore(
                    build=build,
                    family=group,
                    answered=sum(e.said == "answer" for e in chosen),
                    right=rate(sum(answered_right(e) for e in chosen), len(chosen)),
                )
            )
    return out
