"""Other ways to say a task's goal, so the tuned model learns the goal's meaning rather than one sentence."""

from __future__ import annotations

import re

# (pattern on the whole goal, replacements using its groups)
_RULES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"Turn on (.+)\."), ("Switch on {0}.", "Enable {0}.", "Turn {0} on.")),
    (re.compile(r"Turn off (.+)\."), ("Switch off {0}.", "Disable {0}.", "Turn {0} off.")),
    (re.compile(r"Turn (.+) on\."), ("Turn on {0}.", "Switch {0} on.", "Enable {0}.")),
    (re.compile(r"Turn (.+) off\."), ("Turn off {0}.", "Switch {0} off.", "Disable {0}.")),
    (re.compile(r"Make sure (.+) is (on|off)\."), ("Check that {0} is {1}.", "{0} should be {1}.")),
    (re.compile(r"Set the (.+) to (.+)\."), ("Change the {0} to {1}.", "Make the {0} {1}.")),
    (re.compile(r"Change the (.+) to (.+)\."), ("Set the {0} to {1}.", "Rename: {0} to {1}.")),
    (re.compile(r"Open the (.+) page\."), ("Go to the {0} page.", "Show the {0} page.")),
    (re.compile(r"Show the (.+)\."), ("Display the {0}.", "Make the phone show the {0}.")),
)


def goal_variants(goal: str) -> list[str]:
    """The goal as written first, then its rewordings (none when no rule fits)."""
    out = [goal]
    for pattern, replacements in _RULES:
        m = pattern.fullmatch(goal)
        if m:
            groups = m.groups()
            for r in replacements:
                text = r.format(*groups)
                out.append(text[0].upper() + text[1:])
            break
    return out
