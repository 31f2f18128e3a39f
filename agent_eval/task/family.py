"""A task's family (`contacts/add`, `settings/switch`, ...): what the scorecard groups rates and verdicts by.

Read from the task's tags, so no task file names its family twice; tasks/README.md states the rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_eval.action import ActionType
from agent_eval.task.schema import OracleStep

# Settings tasks are tagged by topic first (wifi, display, ...); their family is the kind of work instead.
_SETTINGS_KINDS = (
    ("quick-settings", "shade"),
    ("verify", "verify"),
    ("typing", "typed"),
    ("navigation", "open"),
)


def task_family(tags: Sequence[str]) -> str:
    """`app/family` from a task's tags.

    A Settings task (tagged `settings` or `quick-settings`, or untagged) is `settings/shade`,
    `settings/verify`, `settings/typed` or `settings/open` by its tags, else `settings/switch`. A cross-app
    task (first tag `cross`) is `cross/answer` when it ends in an answer, else `cross/typed`. Any other task
    is its first tag (the app) and its second (the family): `contacts/add`, `clock/answer`.
    """
    if not tags or "settings" in tags or "quick-settings" in tags:
        kind = next((name for tag, name in _SETTINGS_KINDS if tag in tags), "switch")
        return f"settings/{kind}"
    if tags[0] == "cross":
        return "cross/answer" if "answer" in tags else "cross/typed"
    return f"{tags[0]}/{tags[1]}" if len(tags) > 1 else tags[0]


def typed_fields(oracle: Sequence[OracleStep] | None) -> list[tuple[str, str]]:
    """(field, text) of each `type` step of a task's oracle: the text the task means to be typed, its
    `{parameters}` still in it. The field is the resource id's last part (what the agent's element lines
    show as `id=`), '' when the step names none."""
    return [
        ((step.resource_id or "").rsplit("/", 1)[-1], step.text)
        for step in oracle or ()
        if step.type is ActionType.TYPE and step.text
    ]
