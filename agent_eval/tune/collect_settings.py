"""What a demonstration collection was played with, kept beside it so that a resumed `tune collect` cannot
mix episodes played two ways in one dataset.

A collection made before this file existed was played without shade detours (the option came later) and with
seed 0, and is read as such: the model's defaults are that, not the command's.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from agent_eval.errors import ConfigError
from agent_eval.records import StrictModel
from agent_eval.tune.expert import DETOUR_KINDS, SHADE_DETOUR

SETTINGS_FILE = "collect.json"


class CollectSettings(StrictModel):
    prompt_format: str = "compact"
    seed: int = Field(0, description="Seeds the plan: goal wordings, clean or detour, each episode's draws.")
    shade_detours: bool = Field(
        False, description="Detours may also pull the quick-settings shade down (and the expert back out)."
    )

    @property
    def detour_kinds(self) -> tuple[str, ...]:
        return (*DETOUR_KINDS, SHADE_DETOUR) if self.shade_detours else DETOUR_KINDS


def read_settings(out_dir: Path) -> CollectSettings:
    """The settings a collection was played with (one older than the file: the model's defaults)."""
    path = out_dir / SETTINGS_FILE
    if not path.is_file():
        return CollectSettings()
    return CollectSettings.model_validate_json(path.read_text(encoding="utf-8"))


def settle_settings(out_dir: Path, wanted: CollectSettings, *, played_before: bool) -> None:
    """Writes `wanted` beside a new collection; refuses to continue one that was played otherwise."""
    path = out_dir / SETTINGS_FILE
    if path.is_file() or played_before:
        before = read_settings(out_dir)
    else:
        path.write_text(wanted.model_dump_json(indent=2) + "\n", encoding="utf-8")
        return
    if before != wanted:
        changed = ", ".join(
            f"{name} {getattr(before, name)!r} → {getattr(wanted, name)!r}"
            for name in CollectSettings.model_fields
            if getattr(before, name) != getattr(wanted, name)
        )
        raise ConfigError(
            f"{out_dir} holds demonstrations played with other settings ({changed}): collect into another "
            "--work directory, or delete this one to start again"
        )
    if not path.is_file():
        path.write_text(before.model_dump_json(indent=2) + "\n", encoding="utf-8")
