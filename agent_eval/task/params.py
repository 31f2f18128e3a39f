"""Task parameters: which value a seed picks, and `{name}` substitution into a task's strings.

Works on plain data (the YAML-shaped dicts/lists/strings), so it knows nothing of the schema.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

ParamValue = str | dict[str, str]

PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)\}")


def choose(params: Mapping[str, Sequence[ParamValue]], seed: int) -> dict[str, str]:
    """The parameter values for `seed`, flattened to strings (`name`, or `name.field` for mapping values).

    Seeds count through every combination in a fixed order (mixed radix over the names sorted), so seeds
    0..N-1 cover all N combinations and the same seed always gets the same values.
    """
    chosen: dict[str, str] = {}
    rest = seed
    for name in sorted(params):
        values = params[name]
        value = values[rest % len(values)]
        rest //= len(values)
        if isinstance(value, dict):
            for field, text in value.items():
                chosen[f"{name}.{field}"] = text
        else:
            chosen[name] = value
    return chosen


def combinations(params: Mapping[str, Sequence[ParamValue]]) -> int:
    """How many distinct seeds there are before `choose` repeats itself."""
    count = 1
    for values in params.values():
        count *= len(values)
    return count


def placeholders(params: Mapping[str, Sequence[ParamValue]]) -> set[str]:
    """Every `{…}` name these parameters can fill."""
    return set(choose(params, 0))


def substitute(data: Any, values: Mapping[str, str]) -> Any:
    """`data` with each `{name}` that names a parameter replaced in every string, recursively.

    Braces that name no parameter are left alone, so shell commands such as `awk '{print}'` survive.
    """
    if isinstance(data, str):
        return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), data)
    if isinstance(data, list):
        return [substitute(item, values) for item in data]
    if isinstance(data, tuple):
        return tuple(substitute(item, values) for item in data)
    if isinstance(data, dict):
        return {key: substitute(item, values) for key, item in data.items()}
    return data


def unfilled(text: str, names: set[str]) -> list[str]:
    """Placeholders in `text` that name no parameter (a typo in a goal would otherwise reach the agent)."""
    return [m.group(1) for m in PLACEHOLDER.finditer(text) if m.group(1) not in names]
