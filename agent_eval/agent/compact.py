"""The tuned agent's prompt: the same interface as `agent.prompt.build_prompt`, about a third of the tokens.

The tuned default model was trained on exactly these prompts (`agent-eval tune collect` builds them with this
module), so a build that serves it must be sent them byte for byte: a build picks its prompt format by name
(`prompt_format`), and the training prompt's hash equals the evaluation prompt's for the same screen and
history. Short instructions, one short line per element, the last few steps: the 135M model learns from
many more examples per minute of training than with the long format.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent_eval.agent.policy import PastStep
from agent_eval.agent.prompt import (
    STATE_WORDS,
    ChatFormat,
    clip,
    numbered_lines,
    row_label,
    short_activity,
)
from agent_eval.screen.observation import Element, Observation

SYSTEM_PROMPT = (
    "Phone agent. Reply with one JSON action: tap, long_press, type, scroll, swipe, key, open_app, wait,"
    " done, infeasible."
)
# Only tasks that ask a question see this one: every other prompt stays the one the adapter was trained on.
SYSTEM_PROMPT_ANSWERS = SYSTEM_PROMPT.removesuffix(".") + ', answer (with "text": the answer, last).'

HISTORY_LEN = 4  # steps of history shown; an LLM policy with this format is given no more than these
MAX_ELEMENTS = 40
MAX_LABEL_CHARS = 48

_SHOWN_CLASSES = frozenset({"Switch", "CheckBox", "RadioButton", "EditText", "SeekBar", "ImageButton"})
_FLAG_WORDS = {"selected": "selected", "scrollable": "(scrollable)", "disabled": "(disabled)"}  # no focused


def element_line(e: Element, observation: Observation) -> str:
    """One element, e.g. `3 Wi-Fi switch=off`: the number, the label, and only the state that matters."""
    kind = e.cls.rsplit(".", 1)[-1] or "View"
    label = e.text or e.content_desc
    if e.checkable and (not label or label.upper() in STATE_WORDS):
        label = row_label(e, observation) or label
    parts = [str(e.index)]
    if label:
        parts.append(clip(label, MAX_LABEL_CHARS))
    elif e.resource_id:
        parts.append("id=" + e.resource_id.rsplit("/", 1)[-1])
    if kind in _SHOWN_CLASSES and not e.checkable:
        parts.append(f"({kind})")
    if e.checkable:
        word = {"Switch": "switch", "CheckBox": "checkbox", "RadioButton": "radio"}.get(kind, "check")
        parts.append(f"{word}={'on' if e.checked else 'off'}")
    parts.extend(_FLAG_WORDS[flag] for flag in e.flags() if flag in _FLAG_WORDS)
    return " ".join(parts)


def element_lines(observation: Observation, limit: int = MAX_ELEMENTS) -> list[str]:
    return numbered_lines(observation, limit, element_line, "scroll")


def _user_text(
    goal: str, observation: Observation, step: int, max_steps: int, history: Sequence[PastStep]
) -> str:
    """Goal, the last steps, the screen (`step` and `max_steps` are not shown)."""
    del step, max_steps  # the history says how far the episode is; the count only costs tokens
    lines = [f"Goal: {goal}"]
    recent = list(history)[-HISTORY_LEN:]
    if recent:
        lines.append("Done so far: " + "; ".join(p.summary for p in recent))
    lines.append(f"Screen {short_activity(observation.activity)}:")
    lines.extend(element_lines(observation) or ["(nothing)"])
    return "\n".join(lines)


build_prompt = ChatFormat(SYSTEM_PROMPT, _user_text, SYSTEM_PROMPT_ANSWERS)  # one step, compact format


def answer_text(action_json: dict[str, Any]) -> str:
    """The answer the tuned model is taught for an action: compact JSON with `type` first."""
    ordered = {"type": action_json["type"], **{k: v for k, v in action_json.items() if k != "type"}}
    return json.dumps(ordered, ensure_ascii=False)
