"""The demonstrator: a task's scripted solution that also says done as soon as the goal holds, takes detours
on purpose (unrecorded), and finds its way back to the script from wherever a detour left it.

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
from agent_eval.screen.observation import Observation
from agent_eval.task import TaskInstance, goal_holds
from agent_eval.task.schema import OracleStep

OTHER_APPS = ("Clock", "Files", "Calendar", "Phone", "Messages", "Chrome", "Camera")
MAX_BACKS = 3
DETOUR_KINDS: tuple[str, ...] = ("tap", "tap", "scroll", "back", "app")  # drawn with equal chance each
SHADE_DETOUR = "shade"  # pull the quick-settings shade down (opt-in: `tune collect --shade-detours`)


@dataclass(frozen=True)
class ExpertMove:
    """One decision of the demonstrator: `target` says whether the model is taught it."""

    action: Action | None
    target: bool
    problem: str = ""


class Expert:
    """Plays `instance` on `device`: its script, `done` once the goal holds, detours at `detour_rate`."""

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
        self.script: list[OracleStep] = [s for s in instance.oracle if s.type is not ActionType.DONE]
        self.position = 0  # the next script step
        self.reached = 0  # furthest script position executed
        self.scroll_repeats = 0
        self.lost = False  # after a detour: the script position must be found again
        self.backs = 0
        self.detours = 0

    def move(self, context: StepContext) -> ExpertMove:
        obs = context.observation
        if not self.instance.verify and goal_holds(self.instance.goal_state, self.device, obs):
            return ExpertMove(Action(type=ActionType.DONE), target=True)
        if self._wants_detour(context):
            self.detours += 1
            self.lost = True
            return ExpertMove(self._detour(obs), target=False)
        if self.lost:
            found = self._find_place(obs)
            if found is None:
                return self._way_back()
            self.position, self.lost, self.backs = found, False, 0
        return self._script_move(obs)

    def _wants_detour(self, context: StepContext) -> bool:
        # Never as the last chance to finish, never twice in a row, and not once the script is used up.
        room = context.step < context.max_steps - len(self.script) + self.position - 2
        last_was_detour = self.lost
        return room and not last_was_detour and self.rng.random() < self.detour_rate

    def _script_move(self, obs: Observation) -> ExpertMove:
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
                return ExpertMove(None, target=False, problem=action)
            if step.until is not None:
                self.scroll_repeats += 1
            else:
                self.position += 1
                self.reached = max(self.reached, self.position)
            return ExpertMove(action, target=True)
        return ExpertMove(Action(type=ActionType.DONE), target=True)

    def _find_place(self, obs: Observation) -> int | None:
        """The furthest script step (up to the furthest reached) that can be taken on this screen."""
        for j in range(min(self.reached, len(self.script) - 1), -1, -1):
            step = self.script[j]
            if step.until is not None:
                nxt = self.script[j + 1] if j + 1 < len(self.script) else None
                if nxt is not None and nxt.text is not None and visible_text(obs, nxt.text):
                    return j + 1
                continue
            if step.type is ActionType.OPEN_APP:
                continue
            if not isinstance(resolve(step, obs), str) and _selector_listed(step, obs):
                return j
        if self.reached == 0 or self.script[0].type is ActionType.OPEN_APP:
            return 0 if _at_start_screen(obs, self.script[0]) else None
        return None

    def _way_back(self) -> ExpertMove:
        self.backs += 1
        if self.backs > MAX_BACKS + 1:
            return ExpertMove(None, target=False, problem="lost after a detour")
        if self.backs > MAX_BACKS and self.script[0].type is ActionType.OPEN_APP:
            return ExpertMove(Action(type=ActionType.OPEN_APP, app=self.script[0].app), target=True)
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
            return Action(type=ActionType.OPEN_APP, app=self.rng.choice(OTHER_APPS))
        if kind == SHADE_DETOUR:
            return Action(type=ActionType.SWIPE, direction="down")
        return Action(type=ActionType.KEY, key="back")


def _selector_listed(step: OracleStep, obs: Observation) -> bool:
    """The step's element is in the agent's list by its text (not only somewhere in the tree)."""
    if step.text is None:
        return True
    return any(e.text == step.text for e in obs.elements)


def _at_start_screen(obs: Observation, first: OracleStep) -> bool:
    return first.type is ActionType.OPEN_APP or (first.text is not None and visible_text(obs, first.text))


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
