"""The oracle policy: replays a task's scripted solution, finding named elements on the screen it sees.

Used to validate tasks (`agent-eval validate`): a correct oracle must reach the goal and end with done.
"""

from __future__ import annotations

import json

from agent_eval.action import Action, ActionType
from agent_eval.agent.policy import Decision, StepContext
from agent_eval.screen.observation import Element, Observation
from agent_eval.task.schema import OracleStep, TaskInstance

_SELECTING = (ActionType.TAP, ActionType.LONG_PRESS)
_ACTION_FIELDS = ("element", "x", "y", "direction", "key", "app", "seconds")


def _matches(step: OracleStep, element: Element, *, by_text: bool) -> bool:
    if by_text and step.text is not None and element.text != step.text:
        return False
    rid = step.resource_id
    if rid is not None and element.resource_id != rid and not element.resource_id.endswith("/" + rid):
        return False
    if step.content_desc is not None and element.content_desc != step.content_desc:
        return False
    return step.cls is None or element.cls == step.cls or element.cls.endswith("." + step.cls)


def _selects_element(step: OracleStep) -> bool:
    named_by_text = step.type in _SELECTING and step.text is not None
    return named_by_text or any(v is not None for v in (step.resource_id, step.content_desc, step.cls))


def visible_text(observation: Observation, text: str) -> bool:
    return any(node.text == text for node in observation.all_nodes or observation.elements)


def resolve(step: OracleStep, observation: Observation) -> Action | str:
    """The concrete action for `step` on this screen, or why there is none."""
    fields = {name: getattr(step, name) for name in _ACTION_FIELDS if getattr(step, name) is not None}
    if step.type not in _SELECTING and step.text is not None:
        fields["text"] = step.text
    if step.element is None and _selects_element(step):
        by_text = step.type in _SELECTING
        listed = [e for e in observation.elements if _matches(step, e, by_text=by_text)]
        if listed:
            fields["element"] = listed[0].index
        else:
            # Not in the agent's list (e.g. a label of a row listed by its other text): tap its centre.
            nodes = [
                n for n in observation.all_nodes if _matches(step, n, by_text=by_text) and n.bounds.width > 0
            ]
            if not nodes:
                wanted = step.model_dump(mode="json", by_alias=True, exclude_none=True, exclude_defaults=True)
                return f"no element matching {wanted} on screen"
            fields["x"], fields["y"] = nodes[0].bounds.center
    return Action(type=step.type, **fields)


class OraclePolicy:
    """Replays `instance.oracle`, one step per decision, then says done. Satisfies agent.policy.Policy."""

    def __init__(self, instance: TaskInstance) -> None:
        if instance.oracle is None:
            raise ValueError(f"task {instance.id} has no oracle")
        self.instance = instance
        self._steps = instance.oracle
        self._position = 0
        self._repeats = 0

    def _advance(self) -> None:
        self._position += 1
        self._repeats = 0

    def _next_step(self, observation: Observation) -> OracleStep | None:
        """Skips `until` scrolls whose target is already visible; None when the script is used up."""
        while self._position < len(self._steps):
            step = self._steps[self._position]
            if step.until is None:
                return step
            if visible_text(observation, step.until) or self._repeats >= step.max_repeats:
                self._advance()
                continue
            return step
        return None

    def decide(self, context: StepContext) -> Decision:
        step = self._next_step(context.observation)
        number = self._position + 1
        if step is None:
            action: Action | str = Action(type=ActionType.DONE)
        else:
            action = resolve(step, context.observation)
            if step.until is not None:
                self._repeats += 1
            else:
                self._advance()
        if isinstance(action, str):
            reason = f"oracle step {number}: {action}"
            return Decision(action=None, raw_answer=reason, invalid_reason=reason)
        answer = json.dumps(action.model_dump(mode="json", exclude_none=True))
        return Decision(action=action, raw_answer=answer)
