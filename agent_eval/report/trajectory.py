"""One episode as the trajectory viewer shows it: each step's screenshot, the action on it, the answer.

Overlay geometry is worked out here in screen pixels, so the page's script only draws; a tap on element N is
placed by re-reading the step's UI dump with the same parser that numbered the elements for the agent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from agent_eval.action import Action, ActionType
from agent_eval.errors import AgentEvalError
from agent_eval.records import EpisodeRecord, StepRecord
from agent_eval.report.thumbnails import Thumbnail, thumbnail
from agent_eval.screen.uitree import parse_ui

ElementCentres = Callable[[str], dict[int, tuple[int, int]]]
_SWIPE_FRACTION = 0.3  # of the screen's shorter side: how long a drawn swipe arrow is


@dataclass(frozen=True)
class Overlay:
    """What to draw on a screenshot, in its own pixels. `kind` is an ActionType value or "invalid"."""

    kind: str
    label: str
    x: int | None = None
    y: int | None = None
    x2: int | None = None
    y2: int | None = None


def element_centres(xml: str) -> dict[int, tuple[int, int]]:
    """Element number → centre of its bounds, numbered as the agent saw them (by the device part's parser)."""
    elements, _ = parse_ui(xml)
    return {e.index: e.bounds.center for e in elements}


def describe(action: Action | None) -> str:
    """A short line for an action, as a person would say it."""
    if action is None:
        return "invalid answer"
    kind = action.type
    if kind in (ActionType.TAP, ActionType.LONG_PRESS):
        target = f"[{action.element}]" if action.element is not None else f"({action.x}, {action.y})"
        return f"{kind.value.replace('_', ' ')} {target}"
    if kind in (ActionType.SWIPE, ActionType.SCROLL):
        where = f" on [{action.element}]" if action.element is not None else ""
        return f"{kind.value} {action.direction or ''}{where}".strip()
    if kind is ActionType.TYPE:
        return f'type "{action.text or ""}"'
    if kind is ActionType.KEY:
        return f"key {action.key}"
    if kind is ActionType.OPEN_APP:
        return f"open {action.app}"
    if kind is ActionType.WAIT:
        return f"wait {action.seconds:g} s" if action.seconds else "wait"
    if kind is ActionType.ANSWER:
        return f'answer "{action.text or ""}"'
    return kind.value


def _target(action: Action, xml: str | None, centres: ElementCentres | None) -> tuple[int, int] | None:
    if action.x is not None and action.y is not None:
        return action.x, action.y
    if action.element is None or xml is None or centres is None:
        return None
    try:
        return centres(xml).get(action.element)
    except (AgentEvalError, ValueError):  # a dump the parser rejects costs the drawn point, not the report
        return None


def overlay(
    action: Action | None, width: int, height: int, xml: str | None, centres: ElementCentres | None
) -> Overlay:
    label = describe(action)
    if action is None:
        return Overlay("invalid", label)
    kind = action.type
    point = _target(action, xml, centres)
    if kind in (ActionType.TAP, ActionType.LONG_PRESS, ActionType.TYPE) and point is not None:
        return Overlay(kind.value, label, *point)
    if kind in (ActionType.SWIPE, ActionType.SCROLL):
        x, y = point if point is not None else (width // 2, height // 2)
        length = int(min(width, height) * _SWIPE_FRACTION)
        dx, dy = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}.get(
            action.direction or "", (0, 0)
        )
        return Overlay(
            kind.value,
            label,
            x - dx * length // 2,
            y - dy * length // 2,
            x + dx * length // 2,
            y + dy * length // 2,
        )
    return Overlay(kind.value, label)


def element_name(lines: list[str], number: int) -> str:
    """What the agent was shown for element `number`: its quoted label when it has one, e.g. "Wi-Fi"."""
    prefix = f"[{number}] "
    line = next((line[len(prefix) :] for line in lines if line.startswith(prefix)), "")
    quoted = re.search(r'"(?:[^"\\]|\\.)*"', line)
    return quoted.group(0) if quoted else line[:40]


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


Thumbnails = Mapping[Path, Thumbnail | None]


def screenshots(run_dir: Path, episode: EpisodeRecord, steps: list[StepRecord]) -> list[Path]:
    """The screenshot files an episode's view shows (made into thumbnails in one batch before viewing)."""
    return [run_dir / episode.episode_dir / s.screenshot for s in steps if s.screenshot]


def step_view(
    run_dir: Path, episode_dir: Path, step: StepRecord, centres: ElementCentres | None, made: Thumbnails
) -> dict[str, Any]:
    path = episode_dir / step.screenshot if step.screenshot else None
    shot = (made[path] if path in made else thumbnail(run_dir, path)) if path else None
    width, height = (shot.width, shot.height) if shot else (1080, 2400)
    needs_xml = step.action is not None and step.action.element is not None and step.ui_xml is not None
    xml = _read_text(episode_dir / step.ui_xml) if needs_xml and step.ui_xml else None
    latency = step.latency.model_dump()
    drawn = overlay(step.action, width, height, xml, centres)
    if step.action is not None and step.action.element is not None:
        drawn = replace(
            drawn, label=f"{drawn.label} {element_name(step.elements, step.action.element)}".strip()
        )
    return {
        "n": step.step,
        "thumb": shot.path if shot else None,
        "full": (episode_dir / step.screenshot).relative_to(run_dir).as_posix()
        if shot and step.screenshot
        else None,
        "w": width,
        "h": height,
        "overlay": {k: v for k, v in asdict(drawn).items() if v is not None},
        "raw": step.raw_answer,
        "invalid": step.invalid_reason,
        "elements": step.elements,
        "activity": step.activity,
        "goal": step.goal_after,
        "latency": {k: round(v, 3) for k, v in latency.items()},
        "total_s": round(sum(latency.values()), 3),
        "tokens": [step.prompt_tokens, step.completion_tokens],
    }


def _answer_view(episode: EpisodeRecord) -> dict[str, Any]:
    if episode.answer is None:
        return {}
    return {"answer": episode.answer, "answer_correct": episode.answer_correct}


def episode_view(
    run_dir: Path, episode: EpisodeRecord, steps: list[StepRecord], made: Thumbnails | None = None
) -> dict[str, Any]:
    """Everything the viewer shows for one episode, as plain JSON values (`made`: thumbnails already made)."""
    episode_dir = run_dir / episode.episode_dir
    return {
        "build": episode.build,
        "task": episode.task_id,
        "seed": episode.seed,
        "outcome": episode.outcome.value,
        "reached": episode.reached,
        "success": episode.success,
        "said": episode.said,
        "said_at": episode.said_at_step,
        "timeline": episode.goal_timeline,
        "first_reached": episode.first_reached_step,
        "attempt": episode.attempt,
        "error": episode.error,
        "params": episode.params,
        "steps": [step_view(run_dir, episode_dir, s, element_centres, made or {}) for s in steps],
        # Only answer episodes carry these, so the page of a run without answers stays as it was.
        **_answer_view(episode),
        **({"kind": "probe"} if episode.kind == "probe" else {}),
    }
