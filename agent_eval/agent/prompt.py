"""The agent's prompt: fixed instructions first (engines cache that prefix), then goal, history, screen.

Also the JSON schema of one action (for structured output) and the prompt hash that makes builds comparable.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_eval.action import Action, ActionType
from agent_eval.agent.policy import PastStep
from agent_eval.screen.observation import Element, Observation

# Short on purpose: the default model (SmolLM2-135M) has 2048 tokens of context for all of it. The examples
# use placeholders, not real numbers or app names, which a small model would copy.
SYSTEM_PROMPT = """\
You control an Android phone to reach a goal. Each turn you see the screen as a numbered list of \
elements. Answer with exactly one JSON action and nothing else. N stands for an element's number \
in the current list. Actions:
{"type": "tap", "element": N}
{"type": "long_press", "element": N}
{"type": "type", "element": N, "text": "..."}
{"type": "scroll", "direction": "down"} (up, down, left, right)
{"type": "key", "key": "back"} (back, home, enter)
{"type": "open_app", "app": "..."}
{"type": "wait"}
{"type": "done"} when the goal is reached on the screen
{"type": "infeasible"} when the goal cannot be reached
Once the goal is reached, answer done; never undo it."""

# For a task whose goal is a question: the same with the answer action listed (other prompts unchanged).
ANSWER_LINE = (
    '{"type": "answer", "text": "..."} when the goal asks a question: the answer, as your last action'
)
SYSTEM_PROMPT_ANSWERS = SYSTEM_PROMPT.replace(
    '{"type": "infeasible"} when the goal cannot be reached\n',
    '{"type": "infeasible"} when the goal cannot be reached\n' + ANSWER_LINE + "\n",
)

MAX_ELEMENTS = 40  # beyond this, the list is cut (and says so): long lists crowd out the model's context
MAX_LABEL_CHARS = 60

_IMAGE_PLACEHOLDER = "image omitted"


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, Any]]  # what is sent, images included
    recorded: list[dict[str, Any]]  # what is stored: images replaced by their sha256
    hash: str  # sha256 of `recorded`, canonical JSON


def action_schema() -> dict[str, Any]:
    """JSON schema for one action: one alternative per form of an action, each with exactly its fields.

    `type` comes first in every alternative so a constrained decoder commits to the action before its fields.
    """

    def alt(kind: ActionType, **fields: dict[str, Any]) -> dict[str, Any]:
        props: dict[str, Any] = {"type": {"type": "string", "enum": [kind.value]}, **fields}
        return {
            "type": "object",
            "properties": props,
            "required": list(props),
            "additionalProperties": False,
        }

    element = {"type": "integer", "minimum": 0}
    text = {"type": "string", "maxLength": 60}
    direction = {"type": "string", "enum": ["up", "down", "left", "right"]}
    return {
        "anyOf": [
            alt(ActionType.TAP, element=element),
            alt(ActionType.LONG_PRESS, element=element),
            alt(ActionType.TYPE, element=element, text=text),  # the field := text
            # Into the field that has focus (a picker's minutes after a tap): the driver types it as it is,
            # and the tuning expert teaches it so. Without this alternative a constrained decoder forces an
            # element the model was never taught to pick, and it copies the last typed one (the hour's).
            alt(ActionType.TYPE, text=text),
            alt(ActionType.SCROLL, direction=direction),
            alt(ActionType.SWIPE, direction=direction),  # e.g. down from the top: the quick-settings shade
            alt(ActionType.KEY, key={"type": "string", "enum": ["back", "home", "enter"]}),
            alt(ActionType.OPEN_APP, app={"type": "string", "maxLength": 40}),
            alt(ActionType.WAIT),
            alt(ActionType.DONE),
            alt(ActionType.INFEASIBLE),
        ]
    }


def with_answer(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with the answer action among its alternatives (for a task whose goal asks a question)."""
    alternatives = schema.get("anyOf")
    if not isinstance(alternatives, list) or any(
        a.get("properties", {}).get("type", {}).get("enum") == [ActionType.ANSWER.value] for a in alternatives
    ):
        return schema
    answer = {
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": [ActionType.ANSWER.value]},
            "text": {"type": "string", "maxLength": 80},
        },
        "required": ["type", "text"],
        "additionalProperties": False,
    }
    return {**schema, "anyOf": [*alternatives, answer]}


STOPS = frozenset({ActionType.DONE.value, ActionType.INFEASIBLE.value, ActionType.ANSWER.value})


def without_stops(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with the alternatives that end an episode (done, infeasible, answer) taken out: what a
    navigation probe constrains the engine with, so the model cannot emit them."""
    alternatives = schema.get("anyOf")
    if not isinstance(alternatives, list):
        return schema
    kept = [
        a for a in alternatives if not STOPS & set(a.get("properties", {}).get("type", {}).get("enum", []))
    ]
    return {**schema, "anyOf": kept}


def schema_allows(schema: dict[str, Any], answer: dict[str, Any]) -> bool:
    """Whether a constrained decoder could write `answer` under `schema`: one alternative takes its type, has
    every field it holds and needs no field it lacks (the shapes `action_schema` makes)."""
    for alt in schema.get("anyOf", [schema]):
        props = alt.get("properties", {})
        kinds = props.get("type", {}).get("enum", [])
        if answer.get("type") in kinds and set(alt.get("required", [])) <= set(answer) <= set(props):
            return True
    return False


def is_layout_only(e: Element) -> bool:
    """A node that says nothing and does nothing (a bare container): not worth the model's tokens."""
    return not (
        e.text
        or e.content_desc
        or e.clickable
        or e.long_clickable
        or e.checkable
        or e.scrollable
        or (e.focusable and "EditText" in e.cls)
    )


def row_label(e: Element, observation: Observation) -> str:
    """For a switch or checkbox that says only ON/OFF (or nothing): the title of the row it sits in."""
    nodes = observation.all_nodes
    if not (0 <= e.node < len(nodes)):
        return ""
    row = nodes[e.parent] if 0 <= e.parent < len(nodes) else None
    while row is not None and not row.clickable:
        row = nodes[row.parent] if 0 <= row.parent < len(nodes) else None
    if row is None:
        return ""
    # Descendants of the row follow it in document order; the subtree ends at the first node outside it.
    inside = {row.node}
    for n in nodes[row.node + 1 :]:
        if n.parent not in inside:
            break
        inside.add(n.node)
        if n.node != e.node and n.text and n.text.upper() not in STATE_WORDS:
            return n.text
    return ""


STATE_WORDS = frozenset({"ON", "OFF"})


def element_line(e: Element, observation: Observation | None = None) -> str:
    """One element as the agent sees it, e.g. `[3] Switch "Wi-Fi" checked=false`."""
    parts = [f"[{e.index}]", e.cls.rsplit(".", 1)[-1] or "View"]
    label = e.text or e.content_desc
    if e.checkable and observation is not None and (not label or label.upper() in STATE_WORDS):
        label = row_label(e, observation) or label
    if label:
        parts.append(json.dumps(clip(label), ensure_ascii=False))
    if e.content_desc and e.text and e.content_desc != e.text and label == e.text:
        parts.append("desc=" + json.dumps(clip(e.content_desc), ensure_ascii=False))
    if not label and e.resource_id:
        parts.append("id=" + e.resource_id.rsplit("/", 1)[-1])
    if e.checkable:
        parts.append(f"checked={'true' if e.checked else 'false'}")
    parts.extend(e.flags())
    return " ".join(parts)


def numbered_lines(
    observation: Observation, limit: int, line: Callable[[Element, Observation], str], more: str
) -> list[str]:
    """One `line` per element (layout-only nodes skipped), at most `limit`, then `(… N more; {more})`."""
    shown = [line(e, observation) for e in observation.elements if not is_layout_only(e)]
    if len(shown) > limit:
        shown = [*shown[:limit], f"(… {len(shown) - limit} more; {more})"]
    return shown


def element_lines(observation: Observation, limit: int = MAX_ELEMENTS) -> list[str]:
    """The numbered lines for the screen's elements, layout-only nodes skipped, at most `limit` of them."""
    return numbered_lines(observation, limit, element_line, "scroll to see others")


def action_summary(action: Action | None, observation: Observation | None = None) -> str:
    """A short line about a past step for the history, e.g. `tap 3 "Network & internet"`."""
    if action is None:
        return "invalid answer (ignored)"
    words = [action.type.value]
    if action.element is not None:
        words.append(str(action.element))
        words.append(_named(action.element, observation))
    elif action.x is not None and action.y is not None:
        words.append(f"at {action.x},{action.y}")
    for value in (action.direction, action.key, action.app):
        if value:
            words.append(value)
    if action.text is not None:
        words.append(json.dumps(clip(action.text, 40), ensure_ascii=False))
    return " ".join(w for w in words if w)


UserText = Callable[[str, Observation, int, int, Sequence[PastStep]], str]


@dataclass(frozen=True)
class ChatFormat:
    """A prompt format: fixed instructions as the system message, then the step's own text as the user's.

    Called as `LLMPolicy` calls its prompt format; the screenshot goes inline only for image builds.
    """

    system: str
    user_text: UserText  # (goal, observation, step, max_steps, history) → the user message's text
    answer_system: str | None = None  # the instructions for a task that asks a question (None: `system`)

    def __call__(
        self,
        goal: str,
        observation: Observation,
        *,
        step: int,
        max_steps: int,
        history: Sequence[PastStep] = (),
        with_image: bool = False,
        answers: bool = False,
    ) -> Prompt:
        text = self.user_text(goal, observation, step, max_steps, history)
        system = self.answer_system if answers and self.answer_system is not None else self.system
        return chat_prompt(system, text, observation, with_image=with_image)


def _user_text(
    goal: str, observation: Observation, step: int, max_steps: int, history: Sequence[PastStep]
) -> str:
    """Goal, history, then the screen: the order keeps whatever repeats between steps at the front."""
    lines = [f"Goal: {goal}"]
    if history:
        lines.append("Previous steps:")
        lines.extend(f"{p.step}. {p.summary}" for p in history)
    lines.append(f"Step {step} of {max_steps}. Screen ({short_activity(observation.activity)}):")
    lines.extend(element_lines(observation) or ["(no elements)"])
    lines.append("Your action as JSON:")
    return "\n".join(lines)


build_prompt = ChatFormat(SYSTEM_PROMPT, _user_text, SYSTEM_PROMPT_ANSWERS)  # the default agent's format


def chat_prompt(system: str, text: str, observation: Observation, *, with_image: bool) -> Prompt:
    """A system message and the step's user text (with the screenshot inline for image builds) as a Prompt."""
    user: dict[str, Any]
    if with_image:
        url = "data:image/png;base64," + base64.b64encode(observation.screenshot_png).decode("ascii")
        user = {
            "role": "user",
            "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}],
        }
    else:
        user = {"role": "user", "content": text}
    messages = [{"role": "system", "content": system}, user]
    recorded = elide_images(messages)
    return Prompt(messages=messages, recorded=recorded, hash=prompt_hash(recorded))


def elide_images(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy of the messages with every inline image replaced by `sha256:<hex>` of its bytes."""
    out = copy.deepcopy(list(messages))
    for message in out:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if isinstance(part, dict) and part.get("type") == "image_url":
                url = str(part.get("image_url", {}).get("url", ""))
                digest = hashlib.sha256(_image_bytes(url)).hexdigest()
                part["image_url"] = {"url": f"sha256:{digest}", "note": _IMAGE_PLACEHOLDER}
    return out


def _image_bytes(url: str) -> bytes:
    head, _, data = url.partition(";base64,")
    if head.startswith("data:") and data:
        try:
            return base64.b64decode(data, validate=True)
        except ValueError:
            pass
    return url.encode("utf-8", "replace")


def prompt_hash(recorded: Sequence[dict[str, Any]]) -> str:
    canonical = json.dumps(list(recorded), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _named(index: int, observation: Observation | None) -> str:
    """How a past step names its element: its label in quotes, else its kind in brackets."""
    if observation is None:
        return ""
    for e in observation.elements:
        if e.index == index:
            label = e.text or e.content_desc
            if e.checkable and (not label or label.upper() in STATE_WORDS):
                label = row_label(e, observation) or label
            if label:
                return json.dumps(clip(label, 40), ensure_ascii=False)
            return f"({e.cls.rsplit('.', 1)[-1] or 'View'})"
    return "(not on screen)"


def short_activity(activity: str) -> str:
    return activity.rsplit("/", 1)[-1].rsplit(".", 1)[-1] or "unknown"


def clip(text: str, limit: int = MAX_LABEL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
