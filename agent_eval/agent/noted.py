"""The compact prompt with a memory: what the agent read before it last switched apps.

A task that carries a value from one app to another ("text Dana the time of the dentist event") reads the
value on one screen and needs it a few steps later, in another app, where the compact prompt's last steps no
longer show it. This format adds one line after the goal, `Noted:`, with the texts of the screen the agent
last left for another app, kept for the rest of the episode. A screen of the app the episode started in
(usually the home screen) is never noted: the agent opens apps from it, it reads nothing there. Otherwise
the prompt is `compact`'s, byte for byte: a model tuned on one format is served with that format
(`compact-noted`).
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_eval.agent import compact
from agent_eval.agent.policy import PastStep
from agent_eval.agent.prompt import ChatFormat, clip
from agent_eval.screen.observation import Observation

NOTED_TEXTS = 12  # at most this many of the left screen's texts
NOTED_CHARS = 40  # each cut to this many characters


def noted_screen(history: Sequence[PastStep], observation: Observation) -> tuple[str, ...]:
    """The texts of the screen the agent last left for another app, other than the app the episode started
    in; () when it has not done so."""
    apps = [p.app for p in history] + [observation.package]
    for k in range(len(history) - 1, 0, -1):
        if apps[k] != apps[k + 1] and apps[k] not in ("", apps[0]):
            return history[k].screen
    return ()


def noted_line(history: Sequence[PastStep], observation: Observation) -> str | None:
    texts = noted_screen(history, observation)[:NOTED_TEXTS]
    return "Noted: " + "; ".join(clip(t, NOTED_CHARS) for t in texts) if texts else None


def _user_text(
    goal: str, observation: Observation, step: int, max_steps: int, history: Sequence[PastStep]
) -> str:
    """`compact`'s text, with the noted line after the goal. `history` is the whole episode's."""
    text = compact.build_prompt.user_text(goal, observation, step, max_steps, history)
    line = noted_line(history, observation)
    if line is None:
        return text
    first, rest = text.split("\n", 1)
    return f"{first}\n{line}\n{rest}"


build_prompt = ChatFormat(compact.SYSTEM_PROMPT, _user_text, compact.SYSTEM_PROMPT_ANSWERS)
