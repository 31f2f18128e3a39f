"""The ladder's recipe kinds ('round', 'gptq', 'awq'): their fields, the grid checked against the source's
layers, the calibration prompts gathered, and the job `.venv-quant` runs.

The calibration set is the agent's own prompts: the recorded steps of a run dir, or a JSONL of chat messages
(the tuning demonstrations). Its hash joins the source hash, so new calibration data re-prepares the rung.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import Field, model_validator

from agent_eval.builds.ladder_rungs import CALIBRATED, check_ladder_recipe, effective_bits, grid_rung
from agent_eval.builds.preparing.quant_env import run_quant_tools
from agent_eval.builds.recipe_kinds import Plan, Recipe, Say, Weights
from agent_eval.builds.spec import Build, Step, models_dir, repo_root, sends_the_prompts_of
from agent_eval.errors import BuildError
from agent_eval.records import RungInfo


class RoundRecipe(Recipe):
    """`round`: the source's weights rounded to nearest on an integer grid."""

    group_size: int | None = Field(None, gt=0, description="Weights per scale; None = per channel.")
    symmetric: bool = True
    bits: int | None = Field(None, description="Integer grid width, 2..8 bits.")

    @model_validator(mode="after")
    def _makeable(self) -> RoundRecipe:
        check_ladder_recipe(self.kind, self.source, self.bits, getattr(self, "calibration", None))
        return self


class CalibratedRecipe(RoundRecipe):
    """`gptq`/`awq`: rounding that minimises the error on the agent's own prompts."""

    calibration: str | None = Field(
        None, description="A run dir (its recorded prompts) or a JSONL of chat messages."
    )
    calibration_samples: int = Field(64, gt=0, description="Prompts used at most.")


class AwqRecipe(CalibratedRecipe):
    """`awq`: GPTQ's calibration fields, and how finely AWQ searches each layer pair's scale."""

    search_points: int = Field(
        20,
        ge=2,
        description="Scales AWQ tries per norm → projection pair (llmcompressor's n_grid); fewer is faster "
        "and coarser.",
    )


@runtime_checkable
class Calibrated(Protocol):
    """A recipe calibrated on the agent's prompts (gptq, awq, a gguf rung with an importance matrix)."""

    calibration: str | None
    calibration_samples: int


@dataclass(frozen=True)
class LadderKind:
    """A ladder rung made in `.venv-quant`: served in its own format, or rounded and served as bf16."""

    name: str
    fields: type[Recipe]

    def bits(self, recipe: Recipe, scheme: str) -> float | None:
        own = recipe.own(RoundRecipe)
        return effective_bits(own.bits, own.group_size, own.symmetric)

    def list_group(self, recipe: Recipe, scheme: str) -> str:
        return "rounded" if scheme == "bf16" else "served"

    def rung(self, recipe: Recipe, weights: Weights) -> RungInfo | None:
        own = recipe.own(RoundRecipe)
        method = "rtn" if self.name == "round" else self.name
        served = "bf16" if self.list_group(recipe, weights.scheme) == "rounded" else "own"
        return grid_rung(method, own.bits, own.group_size, own.symmetric, served, weights)

    def plan(self, step: Step) -> Plan:
        build, own = step.build, step.recipe.own(RoundRecipe)
        job, calibration = ladder_job(build, step.source_path(), step.out, models_dir())

        def make(say: Say) -> dict[str, Any]:
            say(f"{build.name}: {own.kind} of {own.source} to int{own.bits} ({build.scheme} checkpoint)")
            run_quant_tools([job], say)
            return {}

        source_hash = f"{step.made_from};calibration={calibration}" if calibration else step.made_from
        return Plan(source_hash, make, calibration)


LADDER = (
    LadderKind("round", RoundRecipe),
    LadderKind("gptq", CalibratedRecipe),
    LadderKind("awq", AwqRecipe),
)


def layer_widths(source_dir: Path) -> dict[str, int]:
    """Input widths of the Linear layers a grid groups along (Llama-style config.json)."""
    try:
        config = json.loads((source_dir / "config.json").read_text())
    except (OSError, ValueError) as e:
        raise BuildError(
            f"{source_dir}: cannot read config.json ({e}); prepare the source build first"
        ) from None
    heads = config.get("num_attention_heads", 0) * config.get("head_dim", 0)
    widths = {"hidden_size": config.get("hidden_size"), "intermediate_size": config.get("intermediate_size")}
    if heads:
        widths["attention heads × head_dim"] = heads
    return {k: int(v) for k, v in widths.items() if v}


def check_group_size(build: Build, source_dir: Path) -> None:
    group = build.prepare.own(RoundRecipe).group_size if build.prepare else None
    if group is None:
        return
    for what, width in layer_widths(source_dir).items():
        if width % group:
            raise BuildError(
                f"build {build.name!r}: prepare.group_size {group} does not divide the layer width {width} "
                f"({what}); pick a divisor of {width}, e.g. 32, 64 or 128"
            )


def _conversations_in(path: Path) -> tuple[list[list[dict[str, Any]]], set[str]]:
    """The prompts in a run dir's steps or a demonstrations JSONL, and the prompt formats its lines name."""
    files = sorted(path.glob("episodes/**/steps.jsonl")) if path.is_dir() else [path]
    out: list[list[dict[str, Any]]] = []
    formats: set[str] = set()
    for file in files:
        for line in file.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            messages = record.get("prompt") or record.get("messages") if isinstance(record, dict) else record
            if isinstance(messages, list) and messages:
                out.append(messages)
                if isinstance(record, dict) and isinstance(record.get("prompt_format"), str):
                    formats.add(record["prompt_format"])
    return out, formats


def calibration_set(build: Build) -> tuple[list[list[dict[str, Any]]], str]:
    """The distinct prompts the rung is calibrated on (sorted, capped) and their sha256."""
    recipe = build.prepare
    if not isinstance(recipe, Calibrated):
        raise BuildError(
            f"build {build.name!r}: a {recipe.kind if recipe else None!r} recipe is not calibrated"
        )
    where = Path(recipe.calibration or "")
    path = where if where.is_absolute() else repo_root() / where
    if not recipe.calibration or not path.exists():
        raise BuildError(
            f"build {build.name!r}: prepare.calibration {recipe.calibration!r} does not exist; record a run "
            "of the reference (its steps hold the prompts) or point it at the demonstrations JSONL"
        )
    try:
        found, formats = _conversations_in(path)
    except (OSError, ValueError) as e:
        raise BuildError(f"build {build.name!r}: prepare.calibration {path}: unreadable ({e})") from None
    played_by = build.agent or "default"
    # Prompts the build's agent sends: its own, or those of an agent it extends (it sends them byte for
    # byte, with lines of its own in some steps), as a tuned adapter may be served (built_in_recipes.py).
    if alien := sorted(f for f in formats if not sends_the_prompts_of(played_by, f)):
        raise BuildError(
            f"build {build.name!r}: prepare.calibration {recipe.calibration!r} holds prompts of the "
            f"agent(s) {alien}, but the build is played by {played_by!r}, which does not send them: "
            f"calibrate on the prompts it will be sent (`agent-eval tune collect --prompt-format "
            f"{played_by}`, or a run of the reference)"
        )
    unique = sorted({json.dumps(c, sort_keys=True) for c in found})
    if not unique:
        raise BuildError(
            f"build {build.name!r}: prepare.calibration {recipe.calibration!r} holds no prompts "
            "(no episodes/**/steps.jsonl with a 'prompt', no JSONL line with 'messages')"
        )
    # Spread over the set, not its first N: the sorted order groups prompts of one task together.
    step = max(1, len(unique) // recipe.calibration_samples)
    chosen = unique[::step][: recipe.calibration_samples]
    digest = hashlib.sha256("\n".join(chosen).encode()).hexdigest()
    return [json.loads(c) for c in chosen], "sha256:" + digest


def ladder_job(
    build: Build, source_dir: Path, out_dir: Path, scratch: Path
) -> tuple[dict[str, Any], str | None]:
    """The quantization job for a ladder rung, and its calibration hash (None for round-to-nearest)."""
    assert build.prepare is not None
    recipe = build.prepare.own(RoundRecipe)
    check_group_size(build, source_dir)
    job: dict[str, Any] = {
        "kind": recipe.kind,
        "name": build.name,
        "source_dir": str(source_dir),
        "out_dir": str(out_dir),
        "bits": recipe.bits,
        "group_size": recipe.group_size,
        "symmetric": recipe.symmetric,
        "output": "rounded" if build.scheme == "bf16" else "compressed",
    }
    if isinstance(recipe, AwqRecipe):
        job["search_points"] = recipe.search_points
    calibration = None
    if recipe.kind in CALIBRATED:
        prompts, calibration = calibration_set(build)
        scratch.mkdir(parents=True, exist_ok=True)
        file = scratch / f".{build.name}-calibration.json"
        file.write_text(json.dumps(prompts))
        job["calibration_file"] = str(file)
    return job, calibration
