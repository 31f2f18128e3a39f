"""Scoring: statistics, the per-build scorecard and the regression verdict, from the run store's files alone.

Import from the submodules; this package re-exports only the entry points a report or the grid calls.
"""

from agent_eval.scoring.adaptive import CellState, curtailment, e_value, next_seed_count
from agent_eval.scoring.scorecard import Scorecard, score_episodes, score_run
from agent_eval.scoring.stats import Verdict

__all__ = [
    "CellState",
    "Scorecard",
    "Verdict",
    "curtailment",
    "e_value",
    "next_seed_count",
    "score_episodes",
    "score_run",
]
