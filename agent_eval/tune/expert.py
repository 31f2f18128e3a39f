"""The demonstrator: a task's scripted solution that also says done (or gives its answer) as soon as the goal
holds, takes detours on purpose (unrecorded), and finds its way back to the script from wherever a detour left
it: the furthest script step it can take on the screen it sees, else back to the task's app, back, home.

Every decision says whether it is a target (an expert action the model should learn) or a detour (executed
so that the history shows it, never taught).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from agent_eval.action import Action, ActionType
from agent_eval.agent.oracle import resolve, visible_text
from agent_eval.agent.policy import Decision, StepContext
from agent_eval.device.backend import EpisodeDevice
from agent_eval.device.gestures import is_text_field
from agent_eval.screen.observation import Observation
from agent_eval.task import TaskInstance, goal_holds
from agent_eval.task.schema import OracleStep
from agent_eval.tune.families import SETTINGS
from agent_eval.tune.launcher import launcher_labels

MAX_BACKS = 3
DETOUR_KINDS: tuple[str, ...] = ("tap", "tap", "scroll", "back", "app")  # drawn with equal chance each
SHADE_DETOUR = "shade"  # pull the quick-settings shade down (opt-in: `tune collect --shade-detours`)


@dataclass(frozen=True)
class ExpertMove:
    """One decision of the demonstrator: `target` says whether the model is taught it."""

    action: Action | None
    target: bool
    problem: str = ""
    script_step: int | None = None  # the script step it takes, if it takes one


class Expert:
    """Plays `instance` on `device`: its script, `done` (or the answer) once the goal holds, detours at
    `detour_rate`."""

    def __init__(
        self,
        instance: TaskInstance,
        device: EpisodeDevice,
        rng: random.Random,
        *,
        detour_rate: float = 0.0,
        detour_kinds: Sequence[str] = DETOUR_KINDS,
    ) -> None:
        if instance.oracle is None:
            raise ValueError(f"task {instance.id} has no oracle")
        self.instance = instance
        self.device = device
        self.rng = rng
        self.detour_rate = detour_rate
        self.detour_kinds = tuple(detour_kinds)
        if instance.start.intent is not None or instance.start.activity is not None:
            # Started on a page the script has no path to: a detour that leaves it cannot be undone.
            self.detour_kinds = tuple(k for k in detour_kinds if k in _STAYING_DETOURS) or ("scroll",)
        script = [s for s in instance.oracle if s.type not in _ENDINGS]
        self.script: list[OracleStep] = script
        # An answer task ends with its oracle's answer, said once the screen that shows it is on screen.
        self.final_answer = next((s.text for s in instance.oracle if s.type is ActionType.ANSWER), None)
        self.position = 0  # the next script step
        self.reached = 0  # furthest script position executed
        self.scroll_repeats = 0
        self.lost = False  # after a detour: the script position must be found again
        self.backs = 0
        self.detours = 0
        self.app = instance.start.app  # the app the task is in (its last hop), reopened after a detour
        self.package = ""  # that app's package, as last seen in the foreground
        self._hopped = False
        self.taken_on: dict[int, str] = {}  # script step → the activity it was taken on
        self.landed_on: dict[int, str] = {}  # script step → the activity the screen showed after it
        self._last_step: int | None = None

    def move(self, context: StepContext) -> ExpertMove:
        obs = context.observation
        if self._hopped or not self.package:
            self.package, self._hopped = _package(obs), False
        if self._last_step is not None:
            self.landed_on.setdefault(self._last_step, obs.activity)
            self._last_step = None
        if not self.instance.verify and goal_holds(self.instance.goal_state, self.device, obs):
            return ExpertMove(self._ending(), target=True)
        if self._wants_detour(context):
            self.detours += 1
            self.lost = True
            return ExpertMove(self._detour(obs), target=False)
        if self.lost:
            return self._recover(obs)
        return self._script_move(obs, recover=True)

    def _recover(self, obs: Observation) -> ExpertMove:
        found = self._find_place(obs)
        if found is None:
            return self._way_back(obs)
        self.position, self.lost, self.backs = found, False, 0
        return self._script_move(obs, recover=False)

    def _ending(self) -> Action:
        if self.final_answer is not None:
            return Action(type=ActionType.ANSWER, text=self.final_answer)
        return Action(type=ActionType.DONE)

    def _wants_detour(self, context: StepContext) -> bool:
        # Never as the last chance to finish, never twice in a row, and not once the script is used up.
        room = context.step < context.max_steps - len(self.script) + self.position - 3
        last_was_detour = self.lost
        return room and not last_was_detour and self.rng.random() < self.detour_rate

    def _script_move(self, obs: Observation, *, recover: bool) -> ExpertMove:
        while self.position < len(self.script):
            step = self.script[self.position]
            if step.until is not None and (
                visible_text(obs, step.until) or self.scroll_repeats >= step.max_repeats
            ):
                self.position += 1
                self.scroll_repeats = 0
                continue
            action = resolve(step, obs)
            if isinstance(action, str):
                if not recover:
                    return ExpertMove(None, target=False, problem=action)
                # Not the screen the script expects (an app resumed deeper than its first screen): find it.
                self.lost = True
                return self._recover(obs)
            self.taken_on.setdefault(self.position, obs.activity)
            if step.until is not None:
                self.scroll_repeats += 1
            else:
                self.position += 1
                self.reached = max(self.reached, self.position)
            if step.type is ActionType.OPEN_APP:
                self.app, self._hopped = step.app, True
            self._last_step = self.taken_index(step)
            return ExpertMove(action, target=True, script_step=self._last_step)
        return ExpertMove(self._ending(), target=True)

    def taken_index(self, step: OracleStep) -> int:
        return next(i for i, s in enumerate(self.script) if s is step)

    def _find_place(self, obs: Observation) -> int | None:
        """The furthest script step (up to the furthest reached) that can be taken on this screen."""
        if not self.script:
            return 0  # nothing to do but the last word (a goal that holds on the start screen)
        for j in range(min(self.reached, len(self.script) - 1), -1, -1):
            step = self.script[j]
            # A step is taken up again only on the screen it was taken on, or, never taken, the screen the
            # step before it led to (a record's detail screen shows the name its list row shows, but the
            # long-press menu is the list's; a folder chooser lists the names of the folders at the root).
            seen = self.taken_on.get(j) or (self.landed_on.get(j - 1) if j > 0 else None)
            if step.until is not None:
                if visible_text(obs, step.until):
                    return j + 1  # what it scrolls to is in view
                if seen in (None, obs.activity) and any(e.scrollable for e in obs.elements):
                    self.scroll_repeats = 0
                    return j  # the list it scrolls, its target not yet in view
                continue
            if step.type is ActionType.SWIPE:
                return j  # the shade comes down from any screen (a detour's back put it away)
            if _anchors(step, obs) and seen in (None, obs.activity):
                if j in self.taken_on and _toggles(step, obs):
                    continue  # a switch already tapped: tapping it again would undo it
                return j
        first = self.script[0] if self.script else None
        if first is None or self.reached > 0:
            return None
        if first.type in (ActionType.OPEN_APP, ActionType.SWIPE, ActionType.KEY):
            return 0  # taken from any screen (a shade pulled down again stays down)
        return 0 if first.text is not None and visible_text(obs, first.text) else None

    def _way_back(self, obs: Observation) -> ExpertMove:
        """Out of the place a detour left: the task's app again when another is in front, else back, then
        home (the app is opened from there at the next step)."""
        self.backs += 1
        if self.backs > MAX_BACKS + 2:
            return ExpertMove(None, target=False, problem="lost after a detour")
        if self.app is not None and self.package and _package(obs) != self.package:
            self._hopped = True
            return ExpertMove(Action(type=ActionType.OPEN_APP, app=self.app), target=True)
        key = "home" if self.backs > MAX_BACKS else "back"
        return ExpertMove(Action(type=ActionType.KEY, key=key), target=True)

    def _detour(self, obs: Observation) -> Action:
        kind = self.rng.choice(self.detour_kinds)
        elements = [e for e in obs.elements if e.clickable and (e.text or e.content_desc)]
        if kind == "tap" and elements:
            return Action(type=ActionType.TAP, element=self.rng.choice(elements).index)
        if kind == "scroll" and any(e.scrollable for e in obs.elements):
            return Action(type=ActionType.SCROLL, direction="down")
        if kind == "app":
            return Action(type=ActionType.OPEN_APP, app=self.rng.choice(other_apps()))
        if kind == SHADE_DETOUR:
            return Action(type=ActionType.SWIPE, direction="down")
        if "back" not in self.detour_kinds:  # a page that must not be left: stay on it
            shade = SHADE_DETOUR in self.detour_kinds
            return Action(type=ActionType.SWIPE if shade else ActionType.SCROLL, direction="down")
        return Action(type=ActionType.KEY, key="back")


def other_apps() -> tuple[str, ...]:
    """The apps a detour may open: every app of the phone's home screen but Settings, where most tasks are."""
    return tuple(label for label in launcher_labels() if label.casefold() != SETTINGS)


_ENDINGS = frozenset({ActionType.DONE, ActionType.ANSWER})
_STAYING_DETOURS = frozenset({"scroll", SHADE_DETOUR})  # back (or home) brings the same page back
_NO_ANCHOR = frozenset({ActionType.OPEN_APP, ActionType.KEY, ActionType.SWIPE, ActionType.WAIT})


def _package(obs: Observation) -> str:
    return obs.activity.split("/", 1)[0]


def _toggles(step: OracleStep, obs: Observation) -> bool:
    action = resolve(step, obs)
    return (
        not isinstance(action, str)
        and action.type is ActionType.TAP
        and any(e.index == action.element and e.checkable for e in obs.elements)
    )


def _anchors(step: OracleStep, obs: Observation) -> bool:
    """Whether the expert may take up its script at `step` on this screen: the step names an element and
    that element is in the agent's list (a bare key, swipe or typing into whatever has focus names none)."""
    if step.type in _NO_ANCHOR:
        return False
    action = resolve(step, obs)
    if isinstance(action, str) or action.element is None:
        return False
    if step.type is ActionType.TYPE:  # a field of that id, not a list row's label
        return any(e.index == action.element and is_text_field(e.cls) for e in obs.elements)
    return (
        step.type not in (ActionType.TAP, ActionType.LONG_PRESS)
        or step.text is None
        or any(e.text == step.text for e in obs.elements)
    )


class DemoPolicy:
    """Wraps an Expert as a Policy for the episode loop; `moves` keeps each step's move for the recorder."""

    def __init__(self, expert: Expert) -> None:
        self.expert = expert
        self.moves: list[tuple[StepContext, ExpertMove]] = []

    def decide(self, context: StepContext) -> Decision:
        move = self.expert.move(context)
        self.moves.append((context, move))
        if move.action is None:
            # The demonstrator is stuck: end the episode (what was recorded so far stays).
            return Decision(action=Action(type=ActionType.INFEASIBLE), raw_answer=move.problem)
        return Decision(action=move.action, raw_answer=move.action.model_dump_json(exclude_none=True))
