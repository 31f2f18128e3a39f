"""The engine-busy table of scorecard.md: per build and phase, the engine's busy share and its idle causes.

Numbers come from scorecard.json's `engine_busy` (scoring/engine_busy.py); this only formats them.
"""

from __future__ import annotations

from agent_eval.report.text import TextTable, number
from agent_eval.scoring.scorecard import Scorecard


def _share(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def busy_table(card: Scorecard) -> TextTable | None:
    """None when the scorecard has no engine-busy rows (scored from episodes alone)."""
    if not card.engine_busy:
        return None
    rows = tuple(
        (
            r.build,
            str(r.phase),
            str(r.episodes),
            number(r.wall_s, 0),
            _share(r.busy_share),
            _share(r.model_time_share),
            number(r.idle_phone_reset_s, 0),
            number(r.idle_observe_s, 0),
            number(r.idle_last_cells_s, 0),
            number(r.idle_other_s, 0),
            number(r.engine_start_s, 0),
            number(r.engine_start_waited_s, 0),
        )
        for r in card.engine_busy
    )
    headers = (
        "build",
        "phase",
        "episodes",
        "wall s",
        "busy",
        "model time / wall",
        "idle: reset s",
        "idle: observe s",
        "idle: last cells s",
        "idle: other s",
        "engine start s",
        "engine start waited s",
    )
    return TextTable("Engine busy (per build and phase)", headers, rows)
