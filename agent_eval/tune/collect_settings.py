"""What a demonstration collection was played with, kept beside it so that a resumed `tune collect` cannot
mix episodes played two ways in one dataset.

A collection made before this file existed was played without shade detours (the option came later) and with
seed 0, and is read as such: the model's defaults are that, not the command's. Likewise a file without the
later fields describes a Settings-only collection with the first wording rules and no contrastive examples.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agent_eval.errors import ConfigError
from agent_eval.records import StrictModel
from agent_eval.tune.expert import DETOUR_KINDS, SHADE_DETOUR

SETTINGS_FILE = "collect.json"
GENERATED_FILE = "generated.json"  # the generated goals played (tune/generator.py), when there are any
WORDINGS = 2  # the goal wordings (the task files' `wordings:` since 2026-12-07, the same words as 2 was)


class CollectSettings(StrictModel):
    prompt_format: str = "compact"
    seed: int = Field(0, description="Seeds the plan: goal wordings, clean or detour, each episode's draws.")
    shade_detours: bool = Field(
        False, description="Detours may also pull the quick-settings shade down (and the expert back out)."
    )

    families: list[str] = Field(
        default_factory=lambda: ["settings"],
        description="The task families whose training tasks were played.",
    )
    wordings: int = Field(1, description="Version of the goal rewording rules (held-out wordings since 2).")
    contrast: bool = Field(
        False, description="Successful single-switch episodes add examples under the opposite goal."
    )
    shade_contrast: bool = Field(
        False, description="The contrastive pairs are made on the quick-settings shade's tiles too."
    )

    @property
    def detour_kinds(self) -> tuple[str, ...]:
        return (*DETOUR_KINDS, SHADE_DETOUR) if self.shade_detours else DETOUR_KINDS


def settle_generated(out_dir: Path, wanted: BaseModel | None, *, played_before: bool) -> None:
    """Keeps the record of the generated goals a collection plays (`GENERATED_FILE`, only when it plays some)
    and refuses to continue a collection with other generated goals, or with some where it had none."""
    path = out_dir / GENERATED_FILE
    text = wanted.model_dump_json(indent=2) + "\n" if wanted is not None else None
    before = path.read_text(encoding="utf-8") if path.is_file() else None
    if before == text:
        return
    if before is not None or played_before:
        raise ConfigError(
            f"{out_dir} holds demonstrations played with other generated goals "
            f"({'none' if before is None else path.name + ' differs'}): collect into another --work "
            "directory, or delete this one to start again"
        )
    if text is not None:
        path.write_text(text, encoding="utf-8")


def read_generated(out_dir: Path) -> dict[str, Any] | None:
    """The record of the generated goals a collection played (for the manifest), None when it played none."""
    path = out_dir / GENERATED_FILE
    if not path.is_file():
        return None
    value: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return value


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
