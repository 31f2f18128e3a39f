"""docs/scorecard.md documents scorecard.json: every model and field, and nothing that is no longer there."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel

from agent_eval.scoring.abilities import AbilityLadder, AbilityRow, AbilityVerdict, BreakPoint
from agent_eval.scoring.build_score import BuildScore, LatencyPerStep, OutcomeCounts, Rate, TaskScore
from agent_eval.scoring.decomposition import Decomposition, StopComparison, StopDecision
from agent_eval.scoring.engine_busy import EngineBusy
from agent_eval.scoring.families import FamilyScore
from agent_eval.scoring.fidelity_fields import FidelityRow
from agent_eval.scoring.ladder import Ladder, LadderRung
from agent_eval.scoring.recognition import RecognitionGap
from agent_eval.scoring.regression import BuildComparison, MetricComparison, Regression, TaskComparison
from agent_eval.scoring.scorecard import Scorecard
from agent_eval.scoring.splits import SplitScore
from agent_eval.scoring.typing_accuracy import AnswerScore, TypingScore

DOC = Path(__file__).resolve().parents[2] / "docs" / "scorecard.md"
MODELS: tuple[type[BaseModel], ...] = (
    Scorecard,
    BuildScore,
    Rate,
    OutcomeCounts,
    LatencyPerStep,
    TaskScore,
    Regression,
    BuildComparison,
    MetricComparison,
    RecognitionGap,
    TaskComparison,
    SplitScore,
    FidelityRow,
    Ladder,
    LadderRung,
    EngineBusy,
    FamilyScore,
    TypingScore,
    AnswerScore,
    AbilityLadder,
    AbilityRow,
    AbilityVerdict,
    BreakPoint,
    Decomposition,
    StopDecision,
    StopComparison,
)


def _documented() -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        heading = re.match(r"### `(\w+)`", line)
        if heading:
            current = sections.setdefault(heading.group(1), [])
        row = re.match(r"\| `(\w+)` \|", line)
        if row and current is not None:
            current.append(row.group(1))
    return sections


def test_every_model_and_field_of_scorecard_json_is_documented_in_order() -> None:
    documented = _documented()
    assert set(documented) == {m.__name__ for m in MODELS}
    for model in MODELS:
        assert documented[model.__name__] == list(model.model_fields), model.__name__


def test_every_field_says_what_it_means_and_the_doc_says_the_same() -> None:
    doc = DOC.read_text(encoding="utf-8")
    for model in MODELS:
        for name, field in model.model_fields.items():
            assert field.description and len(field.description) > 10, f"{model.__name__}.{name}"
            assert f"| {field.description.replace('|', chr(92) + '|')} |" in doc, f"{model.__name__}.{name}"
