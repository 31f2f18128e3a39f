"""The build schema: what a builds/*.yaml file may say about a build, validated on load.

A build is one servable variant of a model (scheme, weights, engine, pinning, sampling); a file holds several.
The plug points below it (`engine_kinds`, `recipe_kinds`) are handed a `Build`, or a `Step` to plan one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from agent_eval.builds.engine_kinds import (
    ENGINE_KINDS,
    UNKNOWN_ENGINE,
    AnyEngineOptions,
    EngineKind,
    EngineOptions,
    engine_kind,
    engine_kinds,
    for_engine,
    holds_engine_options,
    options_model,
)
from agent_eval.builds.ladder_rungs import rung_info
from agent_eval.builds.recipe_kinds import (
    RECIPE_KINDS,
    AnyRecipe,
    Recipe,
    holds_recipes,
    known_kind,
    recipe_kind,
    retunes,
)
from agent_eval.errors import ConfigError
from agent_eval.records import BuildManifest, StrictModel
from agent_eval.registry import in_use

# Nominal bits per weight of each scheme, for builds that do not state their own.
NOMINAL_BITS: dict[str, float] = {
    "fp32": 32.0,
    "bf16": 16.0,
    "fp16": 16.0,
    "w8a8": 8.0,
    "w8a16": 8.0,
    "w4a16": 4.0,
    "w4a8": 4.0,
    "gguf-f16": 16.0,
    "gguf-q8_0": 8.5,
    "gguf-q6_k": 6.5625,
    "gguf-q5_0": 5.5,
    "gguf-q4_k_m": 4.5,
    "gguf-q4_1": 5.0,
    "gguf-q4_0": 4.5,
    "gguf-bf16": 16.0,
    "gguf-q5_k_m": 5.5,
    "gguf-iq4_nl": 4.5,
    "gguf-iq4_xs": 4.25,
    "gguf-q3_k_m": 3.9,
    "gguf-q2_k": 2.6,
}

StructuredOutput = Literal["json_schema", "json_object", "off"]

OptionsT = TypeVar("OptionsT", bound=EngineOptions)
_CPU_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")


class Pinning(StrictModel):
    """Which CPUs the engine may run on, and which NUMA node holds its memory."""

    cpus: str = Field("0-1", description="CPU list as taskset takes it, e.g. '0-1' or '0,2-3'.")
    numa_node: int | None = Field(None, ge=0, description="Bind memory to this node (numactl --membind).")

    @field_validator("cpus")
    @classmethod
    def _cpu_list(cls, value: str) -> str:
        value = value.replace(" ", "")
        if not _CPU_LIST.match(value):
            raise ValueError(f"{value!r} is not a CPU list; write it like '0-1' or '0,2-3'")
        return value

    def cpu_ids(self) -> list[int]:
        ids: list[int] = []
        for part in self.cpus.split(","):
            lo, _, hi = part.partition("-")
            ids.extend(range(int(lo), int(hi or lo) + 1))
        return sorted(set(ids))


class Sampling(StrictModel):
    """Sampling defaults every request of this build is sent with."""

    temperature: float = Field(0.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int = Field(96, gt=0)


# Checks a layer above the builds adds (the agent plug point: does the build's agent fit its engine?).
_BUILD_CHECKS: list[Callable[[Build], None]] = []


def add_build_check(check: Callable[[Build], None]) -> None:
    """Run `check` on every build a file loads; its ValueError is shown as an error of that build."""
    _BUILD_CHECKS.append(check)


# Agents whose prompts extend another agent's (declared by the agent plug point as it registers them).
_EXTENDS: dict[str, str] = {}


def declare_prompt_extension(agent: str, extends: str) -> None:
    """`agent` sends `extends`'s prompts byte for byte, plus lines of its own in some steps: a model tuned
    on `extends`'s prompts may be served with it."""
    _EXTENDS[agent] = extends


def sends_the_prompts_of(agent: str, tuned_for: str) -> bool:
    """Whether a build played by `agent` sends the prompts a model tuned for `tuned_for` was trained on:
    the same agent, or one that extends it (directly or through others)."""
    seen: set[str] = set()
    current: str | None = agent
    while current is not None and current not in seen:
        if current == tuned_for:
            return True
        seen.add(current)
        current = _EXTENDS.get(current)
    return False


class Build(StrictModel):
    """One build: a model served one way. `model_path` resolves against the repo's models/ directory."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", description="Used in paths and reports.")
    reference: bool = False
    scheme: str = Field(description="bf16, w8a8, w4a16, w4a8, gguf-q4_1, endpoint ...")
    bits_per_weight: float | None = Field(None, gt=0)
    engine: str = Field(description="The engine kind that serves it: vllm-cpu, llama.cpp, endpoint ...")
    model_path: str | None = Field(None, description="HF checkpoint dir (vLLM) or .gguf file (llama.cpp).")
    base_url: str | None = Field(None, description="endpoint builds: e.g. http://host:8000/v1")
    model: str | None = Field(None, description="Served model name; default: the build name.")
    engine_args: AnyEngineOptions = Field(
        default_factory=EngineOptions, description="Validated against the engine kind's `options` model."
    )
    pinning: Pinning = Field(default_factory=Pinning)
    sampling: Sampling = Field(default_factory=Sampling)
    accepts_images: bool = Field(
        False, description="Send the screenshot with each step (its engine kind must take images)."
    )
    structured_output: StructuredOutput = Field(
        "json_schema",
        description="endpoint builds: how the action schema is sent (json_schema; json_object, llama.cpp's "
        "form; off: no schema). Started engines use their own form.",
    )
    api_key_env: str = Field(
        "AGENT_EVAL_API_KEY",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="endpoint builds: the environment variable holding the API key (unset: none sent).",
    )
    agent: str | None = Field(
        None, description="The agent that plays it (prompt format and action schema); None: the default."
    )
    request_timeout_s: float = Field(
        120.0,
        gt=0,
        description="Seconds one answer may take before the request is retried (then an infra error).",
    )
    optional: bool = Field(
        False, description="Skipped with a message, not an error, when it cannot run here."
    )
    requires_cpu_flags: list[str] = Field(
        default_factory=list,
        description="/proc/cpuinfo flags the engine needs for the scheme (amx_int8 ...).",
    )
    note: str = Field("", description="Shown when the build is skipped, and in `builds list`.")
    role: Literal["rung", "baseline"] = Field(
        "rung",
        description="rung: a quantization level, topped up until decided and drawn on the ladder; baseline: "
        "a build to compare with that is no level (the untuned model), played on phase 1's seeds only and "
        "left out of the ladder and its knee.",
    )
    prepare: AnyRecipe | None = Field(
        None, description="How `builds prepare` makes it (`kind` names a recipe kind); None: bring your own."
    )
    resources: dict[str, float] | None = Field(
        None,
        description="On a Ray cluster: what the node serving this engine must have, e.g. {CPU: 2} or "
        "{engine_host: 1} (docs/cluster.md); not part of the manifest, placement changes no result.",
    )

    @model_validator(mode="before")
    @classmethod
    def _options_of_its_engine(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {**data, "engine_args": for_engine(data.get("engine"), data.get("engine_args"))}
        return data

    @field_validator("scheme")
    @classmethod
    def _scheme_lower(cls, value: str) -> str:
        return value.strip().lower()

    @field_validator("prepare", mode="before")
    @classmethod
    def _known_recipe(cls, value: Any) -> Any:
        return known_kind(value)

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, value: str) -> str:
        if value not in engine_kinds():
            raise ValueError(f"unknown engine {value!r}; use one of {engine_kinds()}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Build:
        if self.kind.starts_server and not self.model_path:
            raise ValueError(f"a {self.engine} build needs 'model_path'")
        if self.accepts_images and not self.kind.images:
            raise ValueError(
                f"accepts_images: the {self.engine} engine's server takes no image inputs; "
                "set accepts_images: false, or serve the build with an engine kind that takes images"
            )
        self.kind.check(self)
        for check in _BUILD_CHECKS:
            check(self)
        return self

    @property
    def kind(self) -> EngineKind[Build]:
        return engine_kind(self.engine)

    def options(self, model: type[OptionsT]) -> OptionsT:
        """This build's `engine_args` as its engine kind's options model (validated as one on load)."""
        if not isinstance(self.engine_args, model):
            raise TypeError(
                f"build {self.name!r}: its engine_args were validated as {type(self.engine_args).__name__}, "
                f"not {model.__name__} (engine {self.engine!r})"
            )
        return self.engine_args

    @property
    def served_name(self) -> str:
        return self.model or self.name

    @property
    def bits(self) -> float | None:
        if self.bits_per_weight is not None:
            return self.bits_per_weight
        made = recipe_kind(self.prepare.kind).bits(self.prepare, self.scheme) if self.prepare else None
        return made if made is not None else NOMINAL_BITS.get(self.scheme)

    def resolved_path(self) -> Path | None:
        if self.model_path is None:
            return None
        path = Path(os.path.expanduser(self.model_path))
        return path if path.is_absolute() else models_dir() / path

    def manifest(self, weights_hash: str | None = None) -> BuildManifest:
        path = self.resolved_path()
        rung = rung_info(self.scheme, self.bits, self.prepare, path, weights_hash)
        return BuildManifest(
            name=self.name,
            reference=self.reference,
            scheme=self.scheme,
            # A GGUF rung's bits per weight are read from its file (fallback types included).
            bits_per_weight=rung.bits_per_weight if rung is not None else self.bits,
            engine=self.engine,
            model=self.served_name,
            model_path=str(path) if path else self.base_url,
            weights_hash=weights_hash,
            mode=self.kind.manifest_mode(self),
            engine_args=self.engine_args.model_dump(exclude_defaults=False),
            pinning=self.pinning.model_dump() if self.kind.starts_server else {},
            sampling=self.sampling.model_dump(),
            accepts_images=self.accepts_images,
            agent=self.agent,
            role=self.role,
            rung=rung,
        )


class BuildSet(StrictModel):
    """The builds of one file; exactly one of them is the reference the others are compared with."""

    builds: list[Build] = Field(min_length=1)

    @model_validator(mode="after")
    def _names_and_reference(self) -> BuildSet:
        seen: set[str] = set()
        for build in self.builds:
            if build.name in seen:
                raise ValueError(f"build name {build.name!r} appears twice; names must be unique")
            seen.add(build.name)
        refs = [b.name for b in self.builds if b.reference]
        if len(refs) != 1:
            raise ValueError(f"exactly one build must say 'reference: true' (found {len(refs)}: {refs})")
        for build in self.builds:
            src = build.prepare.source if build.prepare else None
            if src is not None and src not in seen and src != "reference":
                raise ValueError(f"build {build.name!r}: prepare.source names unknown build {src!r}")
        for build in self.builds:
            _same_agent_as_source(build, self)
        return self

    def get(self, name: str) -> Build:
        """The build called `name`; 'reference' (unless a build has that name) is the reference build."""
        for build in self.builds:
            if build.name == name:
                return build
        if name == "reference":
            return self.reference
        raise ConfigError(f"no build named {name!r}; this set has {[b.name for b in self.builds]}")

    @property
    def reference(self) -> Build:
        return next(b for b in self.builds if b.reference)


def _same_agent_as_source(build: Build, builds: BuildSet) -> None:
    """A build rounded or converted from another is the same tuned model: it is played by the same agent
    (the prompts it was trained on). Only a recipe that retunes the model (`merge-adapter`) may change it."""
    recipe = build.prepare
    if recipe is None or recipe.source is None or retunes(recipe):
        return
    source = builds.get(recipe.source)  # "reference" names the reference
    if (source.agent or "default") != (build.agent or "default"):
        raise ValueError(
            f"build {build.name!r} is made from {source.name!r} by {recipe.kind!r}, which keeps the model as "
            f"it was tuned, so it is played by {source.name!r}'s agent, {_agent_said(source.agent)}, but it "
            f"names {_agent_said(build.agent)}; set `agent: {source.agent or 'default'}` on {build.name!r}"
        )


def _agent_said(agent: str | None) -> str:
    return repr(agent) if agent else "none (the default)"


holds_recipes(Build, BuildSet)
holds_engine_options(Build, BuildSet)


@dataclass(frozen=True)
class Step:
    """One build to make: what a recipe kind is given to plan it."""

    build: Build
    builds: BuildSet
    shipped: Path  # the shipped GGUF, for recipes made from the shipped model
    made_from: str  # the hash of what it is made from: its source build's weights, else the shipped GGUF

    @property
    def recipe(self) -> Recipe:
        assert self.build.prepare is not None
        return self.build.prepare

    @property
    def out(self) -> Path:
        """Where the weights go: the build's model_path."""
        path = self.build.resolved_path()
        assert path is not None, "a prepared build has a model_path"
        return path

    def source_path(self) -> Path:
        """The weights of the recipe's source build."""
        path = self.builds.get(self.recipe.source or "").resolved_path()
        assert path is not None, "a source build has a model_path"
        return path


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def models_dir() -> Path:
    """Where relative model paths point: $AGENT_EVAL_MODELS, else the repo's (git-ignored) models/ dir."""
    override = os.environ.get("AGENT_EVAL_MODELS")
    return Path(override).expanduser() if override else repo_root() / "models"


def default_builds_file() -> Path:
    return repo_root() / "builds" / "default.yaml"


def _where(loc: tuple[int | str, ...], data: Any = None) -> str:
    out = ""
    for before, part in zip((None, *loc), loc, strict=False):
        if before == "prepare" and part in RECIPE_KINDS:
            continue  # the recipe kind a field was validated as: the file does not write it there
        if before == "engine_args" and (part in ENGINE_KINDS or part == UNKNOWN_ENGINE):
            continue  # the engine kind whose options they were validated as
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    builds = data.get("builds") if isinstance(data, dict) else None
    if isinstance(builds, list) and len(loc) > 1 and loc[0] == "builds" and isinstance(loc[1], int):
        entry = builds[loc[1]] if loc[1] < len(builds) else None
        if isinstance(entry, dict) and entry.get("name"):
            out = f"build {entry['name']!r} {out}"  # its name says more than its index
    return out or "(top level)"


def _message(err: Any) -> str:
    """Pydantic's message, or for a key an engine kind's options do not know, the options it has."""
    loc = tuple(err["loc"])
    at = loc.index("engine_args") if "engine_args" in loc else -1
    if err["type"] == "extra_forbidden" and 0 <= at < len(loc) - 2 and loc[at + 1] in ENGINE_KINDS:
        engine = str(loc[at + 1])
        known = ", ".join(options_model(engine_kind(engine)).model_fields)
        return f"not an option of engine {engine!r} (its engine_args: {known})"
    return str(err["msg"]).removeprefix("Value error, ")


def parse_builds(data: Any, source: str) -> BuildSet:
    """Validate already-loaded YAML data; errors name the source and the field."""
    if isinstance(data, list):
        data = {"builds": data}
    in_use()  # installed plug-ins' engine and recipe kinds are in the schema before it validates
    try:
        return BuildSet.model_validate(data)
    except ValidationError as e:
        lines = []
        for err in e.errors():
            lines.append(f"  {_where(tuple(err['loc']), data)}: {_message(err)}")
        raise ConfigError(f"{source}: invalid build file:\n" + "\n".join(lines)) from None


def load_builds(path: Path | str | None = None) -> BuildSet:
    """Read a builds file (default: builds/default.yaml)."""
    file = Path(path) if path is not None else default_builds_file()
    if not file.is_file():
        raise ConfigError(f"{file}: no such build file")
    try:
        data = yaml.safe_load(file.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{file}: not valid YAML: {e}") from None
    if isinstance(data, dict) and "include" in data:
        data = _with_included(data, file)
    return parse_builds(data, str(file))


def _with_included(data: dict[str, Any], file: Path) -> dict[str, Any]:
    """`include: {file: default.yaml, builds: [bf16, ...]}`: those builds, as that file defines them today."""
    spec = data.pop("include")
    if not isinstance(spec, dict) or not isinstance(spec.get("file"), str):
        raise ConfigError(f"{file}: include needs 'file' (a builds file) and 'builds' (names from it)")
    other = load_builds(file.parent / spec["file"])
    names = spec.get("builds") or [b.name for b in other.builds]
    included = [other.get(str(n)).model_dump(exclude_defaults=True) for n in names]
    return {**data, "builds": included + list(data.get("builds") or [])}
