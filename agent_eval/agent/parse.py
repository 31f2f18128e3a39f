"""Turns a model's answer into an `Action`, tolerating the junk small models put around their JSON.

An answer that cannot be used becomes an invalid step with a reason: counted against the build, never fatal.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agent_eval.action import Action
from agent_eval.screen.observation import Observation


@dataclass(frozen=True)
class ParsedAnswer:
    action: Action | None
    reason: str | None = None  # why the answer is invalid; None when `action` is set


# Words models use for each action type (lower case, spaces and hyphens as underscores).
_TYPE_SYNONYMS: dict[str, str] = {
    **{
        w: "tap"
        for w in ("tap", "click", "press", "touch", "select", "tap_element", "click_element", "toggle")
    },
    **{w: "long_press" for w in ("long_press", "longpress", "long_click", "longclick", "long_tap", "hold")},
    **{w: "type" for w in ("type", "input", "type_text", "input_text", "enter_text", "write", "set_text")},
    **{w: "scroll" for w in ("scroll",)},
    **{w: "swipe" for w in ("swipe", "fling", "drag")},
    **{w: "key" for w in ("key", "keyevent", "press_key", "navigate")},
    **{w: "open_app" for w in ("open_app", "open", "launch", "launch_app", "start_app", "start", "app")},
    **{w: "wait" for w in ("wait", "sleep", "pause", "noop", "no_op")},
    **{
        w: "done"
        for w in ("done", "finish", "finished", "complete", "completed", "stop", "task_complete", "success")
    },
    **{w: "infeasible" for w in ("infeasible", "impossible", "give_up", "abort", "fail", "not_possible")},
    **{w: "answer" for w in ("answer", "reply", "respond", "final_answer")},
}
# Actions named after their argument: "back" is key back, "scroll_down" is scroll down.
_KEY_WORDS = {"back": "back", "go_back": "back", "home": "home", "go_home": "home", "enter": "enter"}
_KEY_SYNONYMS = {"back": "back", "home": "home", "enter": "enter", "return": "enter", "ok": "enter"}
_DIRECTIONS = ("up", "down", "left", "right")

_FIELD_SYNONYMS: dict[str, str] = {
    **{w: "type" for w in ("type", "action", "action_type", "name", "kind", "act", "command", "op")},
    **{
        w: "element"
        for w in ("element", "index", "idx", "id", "element_id", "target", "number", "num", "elem")
    },
    **{w: "direction" for w in ("direction", "dir")},
    **{w: "text" for w in ("text", "value", "input", "content", "string")},
    **{w: "key" for w in ("key", "keycode", "button")},
    **{w: "app" for w in ("app", "app_name", "package", "application")},
    **{w: "seconds" for w in ("seconds", "secs", "duration", "time")},
    "x": "x",
    "y": "y",
}


def parse_action(answer: str, observation: Observation | None = None) -> ParsedAnswer:
    """The first usable action in `answer`. With `observation`, an element given by its label is resolved."""
    if not answer.strip():
        return ParsedAnswer(None, "empty answer")
    first_problem: str | None = None
    for candidate in _json_objects(answer):
        obj = _load_lenient(candidate)
        if obj is None:
            first_problem = first_problem or "the JSON in the answer could not be read"
            continue
        parsed = _to_action(obj, observation)
        if parsed.action is not None:
            return parsed
        first_problem = first_problem or parsed.reason
    if first_problem is not None:
        return ParsedAnswer(None, first_problem)
    return _from_plain_words(answer, observation)


def _json_objects(text: str) -> Iterator[str]:
    """Each top-level `{...}` in the text, in order; an object cut off at the end is closed for it."""
    i = 0
    while (start := text.find("{", i)) != -1:
        depth, quote, escaped = 0, "", False
        end = -1
        for j in range(start, len(text)):
            c = text[j]
            if quote:
                if escaped:
                    escaped = False
                elif c == "\\":
                    escaped = True
                elif c == quote:
                    quote = ""
            elif c in "\"'":
                quote = c
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    end = j
                    break
        if end == -1:
            # Cut off by the token limit: close what is open and try it.
            yield text[start:] + quote + "}" * max(depth, 1)
            return
        yield text[start : end + 1]
        i = end + 1


_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][\w\-]*)\s*:")
_JSON_LITERALS = {"true": "True", "false": "False", "null": "None"}


def _load_lenient(text: str) -> dict[str, Any] | None:
    attempts = [text, _TRAILING_COMMA.sub(r"\1", text)]
    attempts.append(_BARE_KEY.sub(r'\1"\2":', attempts[-1]))
    for attempt in attempts:
        try:
            obj = json.loads(attempt)
        except ValueError:
            pass
        else:
            return obj if isinstance(obj, dict) else None
    # Python-style dicts: single quotes, True/None (and JSON's true/null mixed in).
    pythonish = re.sub(r"\b(true|false|null)\b", lambda m: _JSON_LITERALS[m.group(1)], attempts[-1])
    try:
        obj = ast.literal_eval(pythonish)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _word(value: Any) -> str:
    return re.sub(r"[\s\-]+", "_", str(value).strip().lower())


def _to_action(obj: dict[str, Any], observation: Observation | None) -> ParsedAnswer:
    # {"action": {...}} and {"next_action": {...}} wrap the real object.
    for wrapper in ("action", "next_action", "answer", "response"):
        inner = obj.get(wrapper)
        if isinstance(inner, dict):
            obj = {**{k: v for k, v in obj.items() if k != wrapper}, **inner}
    fields: dict[str, Any] = {}
    for key, value in obj.items():
        name = _FIELD_SYNONYMS.get(_word(key))
        if name is not None and name not in fields:
            fields[name] = value
        elif name is None and "type" not in obj and _word(key) in _TYPE_SYNONYMS | _KEY_WORDS:
            # {"tap": 3}, {"click": "Wi-Fi"}, {"done": true}
            fields.setdefault("type", key)
            if not isinstance(value, bool) and value is not None:
                fields.setdefault(_argument_field(_word(key)), value)
    if "type" not in fields:
        return ParsedAnswer(None, 'the JSON has no action type (expected a "type" field)')
    return _build(fields, observation)


def _argument_field(kind: str) -> str:
    canonical = _TYPE_SYNONYMS.get(kind, "")
    return {
        "type": "text",
        "answer": "text",
        "open_app": "app",
        "scroll": "direction",
        "swipe": "direction",
    }.get(canonical, "element")


def _build(fields: dict[str, Any], observation: Observation | None) -> ParsedAnswer:
    kind = _word(fields.pop("type"))
    if kind in _KEY_WORDS:
        fields.setdefault("key", _KEY_WORDS[kind])
        kind = "key"
    for prefix in ("scroll", "swipe"):
        for d in _DIRECTIONS:
            if kind in (f"{prefix}_{d}", f"{prefix}{d}"):
                fields.setdefault("direction", d)
                kind = prefix
    canonical = _TYPE_SYNONYMS.get(kind)
    if canonical is None:
        return ParsedAnswer(None, f"unknown action type {kind!r}")
    values: dict[str, Any] = {"type": canonical}
    problem = _fill(canonical, fields, values, observation)
    if problem:
        return ParsedAnswer(None, problem)
    try:
        return ParsedAnswer(Action.model_validate(values))
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return ParsedAnswer(None, f"{canonical}: {where}: {first['msg']}")


def _fill(kind: str, fields: dict[str, Any], values: dict[str, Any], observation: Observation | None) -> str:
    """Copies the fields `kind` uses into `values`; returns what is missing or wrong ('' when fine)."""
    if kind in ("tap", "long_press", "type"):
        given = fields.get("element")
        if given is None and kind != "type" and isinstance(fields.get("text"), str):
            given = fields["text"]  # {"type": "tap", "text": "Wi-Fi"}: the element by its label
        element = _element(given, observation)
        if isinstance(element, str):
            return f"{kind}: {element}"
        x, y = _int_or_none(fields.get("x")), _int_or_none(fields.get("y"))
        if (
            element is None
            and isinstance(fields.get("element"), list | tuple)
            and len(fields["element"]) == 2
        ):
            x, y = _int_or_none(fields["element"][0]), _int_or_none(fields["element"][1])
        if element is not None:
            values["element"] = element
        elif x is not None and y is not None:
            values["x"], values["y"] = x, y
        elif kind != "type":
            return f"{kind} needs an element number (or x and y)"
    if kind == "type":
        text = fields.get("text")
        if text is None or isinstance(text, dict | list):
            return 'type needs the "text" to enter'
        values["text"] = str(text)
    if kind in ("scroll", "swipe"):
        direction = _word(fields.get("direction", ""))
        if direction not in _DIRECTIONS:
            return f"{kind} needs a direction (up, down, left or right), got {fields.get('direction')!r}"
        values["direction"] = direction
    if kind == "key":
        key = _KEY_SYNONYMS.get(_word(fields.get("key", "")).removeprefix("keycode_"))
        if key is None:
            return f"key needs one of back, home, enter; got {fields.get('key')!r}"
        values["key"] = key
    if kind == "open_app":
        app = fields.get("app", fields.get("text"))
        if not isinstance(app, str) or not app.strip():
            return 'open_app needs the "app" to open'
        values["app"] = app.strip()
    if kind == "answer":
        text = fields.get("text")
        if text is None or isinstance(text, dict | list | bool):
            return 'answer needs the "text" of the answer'
        values["text"] = str(text).strip()
    if kind == "wait" and fields.get("seconds") is not None:
        try:
            values["seconds"] = min(max(float(fields["seconds"]), 0.0), 10.0)
        except (TypeError, ValueError):
            return f"wait: seconds must be a number, got {fields['seconds']!r}"
    return ""


def _element(value: Any, observation: Observation | None) -> int | str | None:
    """The element number, None when absent, or a message when it cannot be one."""
    if value is None or isinstance(value, bool | list | tuple):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    text = str(value).strip()
    if m := re.fullmatch(r"\[?\s*#?(\d+)\s*\]?", text):
        return int(m.group(1))
    if observation is not None and text:
        wanted = text.strip("\"'").casefold()
        for e in observation.elements:
            if wanted in (e.text.casefold(), e.content_desc.casefold()):
                return e.index
    return f"element {value!r} is not an element number"


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# `tap 3`, `click(3)`, `tap [3]`, `done`, `Action: back` — a whole first line with no JSON around it.
_PLAIN = re.compile(r"(?:action\s*:\s*)?([a-z_ \-]+?)\s*[(\[]?\s*(\d+)?\s*[)\]]?\s*\.?", re.IGNORECASE)


def _from_plain_words(answer: str, observation: Observation | None) -> ParsedAnswer:
    line = answer.strip().strip("`").strip().splitlines()[0].strip() if answer.strip("` \n") else ""
    m = _PLAIN.fullmatch(line)
    if m:
        kind = _word(m.group(1))
        if kind in _TYPE_SYNONYMS or kind in _KEY_WORDS or kind.startswith(("scroll_", "swipe_")):
            fields: dict[str, Any] = {"type": kind}
            if m.group(2) is not None:
                fields["element"] = int(m.group(2))
            parsed = _build(fields, observation)
            if parsed.action is not None:
                return parsed
    return ParsedAnswer(None, f"no JSON action in the answer: {_clip(answer)!r}")


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
