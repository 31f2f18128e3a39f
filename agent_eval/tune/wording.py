"""A goal's other wordings, as its task file gives them (`wordings:` with `train` and `held_out`), so the
tuned model learns the goal's meaning rather than one sentence; and a single switch's opposite goal, for the
contrastive pairs.
"""

from __future__ import annotations

import re

from agent_eval.task import TaskInstance


def goal_variants(instance: TaskInstance) -> list[str]:
    """The goal as the instance states it first, then the rewordings the collection may use."""
    return [instance.goal, *instance.wordings.train]


def held_out_wordings(instance: TaskInstance) -> list[str]:
    """Rewordings of the instance's goal kept out of the training data (for evaluation)."""
    return list(instance.wordings.held_out)


def opposite_goal(goal: str) -> str | None:
    """The single-switch goal with its on/off word swapped ("Turn on X." → "Turn off X."), None for any
    other goal (two switches, a value, an app's record)."""
    if " and " in goal:
        return None
    patterns = (
        (r"(Turn|Switch) (on|off) (.+)\.", "{0} {w} {2}."),
        (r"(Turn|Switch) (.+) (on|off)\.", "{0} {1} {w}."),
        (r"(Enable|Disable) (.+)\.", "{w} {1}."),
        (r"(Make sure|Check that|Ensure) (.+) is (on|off)\.", "{0} {1} is {w}."),
        (r"(.+) should be (on|off)\.", "{0} should be {w}."),
        (r"(Show|Hide) the (.+)\.", "{w} the {1}."),
    )
    swap = {
        "on": "off",
        "off": "on",
        "Show": "Hide",
        "Hide": "Show",
        "Enable": "Disable",
        "Disable": "Enable",
    }
    for pattern, template in patterns:
        m = re.fullmatch(pattern, goal)
        if m:
            word = next(g for g in m.groups() if g in swap)
            return template.format(*m.groups(), w=swap[word])
    return None
