"""Contrastive examples for the done decision: the same screen and history under the goal with its on/off
word swapped, so that only the goal's word separates `done` from the tap on the switch.

From a successful single-switch episode: where the expert taps the switch (the goal does not hold yet), the
opposite goal already holds, so its answer is `done`; right after, where the expert says `done`, the opposite
goal does not hold, so its answer is the tap on that switch (the step a verify task must not take). With
`shade`, the quick-settings shade's tiles count as switches too (a tile names itself and is tapped by its
label); off by default: none of the three adapters trained with them met every target (docs/tuning.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from agent_eval.action import Action, ActionType
from agent_eval.agent.oracle import resolve
from agent_eval.agent.policy import StepContext
from agent_eval.agent.prompt import row_label
from agent_eval.task import TaskInstance
from agent_eval.task.goal_kinds import AllPredicate, NotPredicate, SettingPredicate, ShellPredicate
from agent_eval.tune.expert import ExpertMove
from agent_eval.tune.wording import opposite_goal

CONTRAST = "contrast"  # the examples' source


def single_switch(instance: TaskInstance) -> bool:
    """An action task whose goal is one setting (or its negation, or one setting with a shell check of the
    same service) and whose script ends tapping (the switch, checked where it is tapped)."""
    script = [s for s in instance.oracle or () if s.type is not ActionType.DONE]
    return (
        not instance.verify
        and instance.task.answer is None
        and _settings_named(instance.goal_state) == 1
        and bool(script)
        and script[-1].type is ActionType.TAP
    )


def _settings_named(state: object) -> int:
    """How many settings the goal names; -1 when it checks anything but settings and shell commands."""
    if isinstance(state, NotPredicate):
        return _settings_named(state.not_)
    if isinstance(state, SettingPredicate):
        return 1
    if isinstance(state, ShellPredicate):
        return 0
    if isinstance(state, AllPredicate):
        parts = [_settings_named(p) for p in state.all_]
        return -1 if -1 in parts else sum(parts)
    return -1


def contrast_moves(
    instance: TaskInstance,
    goal: str,
    moves: Sequence[tuple[StepContext, ExpertMove]],
    forbidden: Collection[str],
    shade: bool = False,
) -> list[tuple[int, StepContext, Action]]:
    """(move number, its context under the opposite goal, the action taught there) from one successful
    episode."""
    opposite = opposite_goal(goal)
    if opposite is None or opposite in forbidden or not single_switch(instance):
        return []
    script = [s for s in instance.oracle or () if s.type is not ActionType.DONE]
    last = len(script) - 1
    out: list[tuple[int, StepContext, Action]] = []
    for k, (context, move) in enumerate(moves):
        if not move.target or move.action is None:
            continue
        if move.script_step == last and taps_a_switch(move.action, context, shade):
            out.append((k, dataclasses.replace(context, goal=opposite), Action(type=ActionType.DONE)))
        elif move.action.type is ActionType.DONE and k > 0 and moves[k - 1][1].script_step == last:
            tap = resolve(script[last], context.observation)
            if isinstance(tap, Action) and taps_a_switch(tap, context, shade):
                out.append((k, dataclasses.replace(context, goal=opposite), tap))
    return out


def taps_a_switch(action: Action, context: StepContext, shade: bool = False) -> bool:
    """The action taps a switch or checkbox, the row label a switch sits beside (`5 Wi-Fi`, `6 Wi-Fi
    switch=off`), or, with `shade`, the label inside a switch that names itself (the shade's tiles:
    `0 Internet switch=on`, `1 Internet`)."""
    obs = context.observation
    tapped = next((e for e in obs.elements if e.index == action.element), None)
    if action.type is not ActionType.TAP or tapped is None:
        return False
    if tapped.checkable:
        return True
    label = tapped.text or tapped.content_desc
    return bool(label) and any(
        e.checkable and (row_label(e, obs) == label or (shade and (e.text or e.content_desc) == label))
        for e in obs.elements
    )
