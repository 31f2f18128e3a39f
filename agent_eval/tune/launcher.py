"""The apps the virtual phone's home screen offers, by label: read from the phone's app files as data (every
file with a `launcher_icon`), so that an app added there is one the demonstrator's detours can open.

The harness never imports the phone package (tests/test_import_layers.py); it only finds where its files are.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from agent_eval.errors import ConfigError

PHONE_PACKAGE = "virtual_phone"
APPS_FOLDER = "apps"


def phone_apps_dir() -> Path:
    """The phone's app files' folder, found without importing the phone."""
    spec = importlib.util.find_spec(PHONE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"the {PHONE_PACKAGE} package is not installed: reinstall agent-eval")
    return Path(next(iter(spec.submodule_search_locations))) / APPS_FOLDER


def _icon_place(data: dict[str, Any]) -> tuple[bool, bool, int, str]:
    icon = data["launcher_icon"] or {}
    order = icon.get("order")
    return (icon.get("place") != "grid", order is None, order or 0, str(data.get("label", "")))


@cache
def launcher_labels(apps_dir: Path | None = None) -> tuple[str, ...]:
    """Every app with a launcher icon, by label, as the home screen shows them: the grid, then the hotseat,
    each by its `order`."""
    folder = apps_dir or phone_apps_dir()
    apps = []
    for path in sorted(folder.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("launcher_icon") is not None and data.get("label"):
            apps.append(data)
    if not apps:
        raise ConfigError(f"{folder}: no app file with a launcher icon")
    return tuple(str(a["label"]) for a in sorted(apps, key=_icon_place))
