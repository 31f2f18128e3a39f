"""The recipe plug point: a recipe kind validates a build's `prepare:` fields, makes its weights and says what
the manifest records about them. A build's `prepare.kind` names a registered kind (built-ins:
`preparing/built_in_recipes.py`); what a kind is given to plan one build is `spec.Step`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Protocol, TypeVar

from pydantic import BaseModel, Field, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

from agent_eval.errors import ConfigError
from agent_eval.records import RungInfo, StrictModel
from agent_eval.registry import Registry

Say = Callable[[str], None]
R = TypeVar("R", bound="Recipe")
# What a kind is given to plan one build (`spec.Step`): a parameter, so that this plug point needs nothing of
# the schema that imports it.
StepT = TypeVar("StepT", contravariant=True)


class Recipe(StrictModel):
    """The fields every recipe has; a kind's own model subclasses it with the fields it takes."""

    kind: str = Field(description="The recipe kind that makes the weights (a registered name).")
    source: str | None = Field(
        None, description="The build whose weights it is made from; None: the shipped model."
    )

    def own(self, model: type[R]) -> R:
        """This recipe as its kind's model (the registry validated it as one)."""
        if not isinstance(self, model):
            raise TypeError(f"a {self.kind!r} recipe was validated as {type(self).__name__}")
        return self


@dataclass(frozen=True)
class Weights:
    """What the manifest's rung is told about a build's weights."""

    scheme: str
    bits_per_weight: float | None
    path: Path | None
    weights_hash: str | None


@dataclass(frozen=True)
class Plan:
    """How a kind will make a build, known before it does: a changed source hash re-makes the build."""

    source_hash: str  # recorded in prepared.json and compared on the next prepare
    make: Callable[[Say], dict[str, Any]]  # writes the weights; returns further prepared.json fields
    calibration_hash: str | None = None


class RecipeKind(Protocol[StepT]):
    """One way of making a build's weights (`prepare: {kind: ...}`)."""

    @property
    def name(self) -> str:
        """What a build file's `prepare.kind` says."""
        ...

    @property
    def fields(self) -> type[Recipe]:
        """The pydantic model of its `prepare:` fields (a `Recipe`), validated when the build file loads."""
        ...

    def bits(self, recipe: Recipe, scheme: str) -> float | None:
        """Bits per weight of what it makes (None: the scheme's nominal bits)."""
        ...

    def list_group(self, recipe: Recipe, scheme: str) -> str:
        """Its heading in `builds list`: 'served', 'rounded' (on a grid, served as bf16) or 'other'."""
        ...

    def rung(self, recipe: Recipe, weights: Weights) -> RungInfo | None:
        """The manifest's rung (None: not a quantization level)."""
        ...

    def plan(self, step: StepT) -> Plan:
        """The source hash and the maker of one build (calibration sets are gathered here)."""
        ...


_HOLDERS: list[type[BaseModel]] = []  # models with a recipe field: rebuilt when a kind is added


def _rebuild_holders(kind: RecipeKind[Any]) -> None:
    for holder in _HOLDERS:
        holder.model_rebuild(force=True)


RECIPE_KINDS: Registry[RecipeKind[Any]] = Registry("recipe kind", on_register=_rebuild_holders)


def register_recipe_kind(kind: RecipeKind[Any]) -> None:
    """Make `kind` usable as a build's `prepare.kind` (a later registration under the same name replaces
    it)."""
    if not issubclass(kind.fields, Recipe):
        raise ConfigError(
            f"recipe kind {kind.name!r}: its fields model must subclass Recipe (agent_eval.api)"
        )
    RECIPE_KINDS.register(kind.name, kind)


def recipe_kind(name: str) -> RecipeKind[Any]:
    return RECIPE_KINDS.get(name)


def retunes(recipe: Recipe) -> bool:
    """Whether a recipe changes what its model was trained to answer (its kind says `retunes = True`, as
    `merge-adapter` does), so that the build may be played by another agent than its source; a kind that
    says nothing only rounds or converts its source's weights."""
    return bool(getattr(RECIPE_KINDS.get(recipe.kind), "retunes", False))


def kind_of(value: Any) -> str | None:
    """The registered kind a `prepare:` mapping (or a recipe model) names, or None."""
    kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", None)
    return kind if isinstance(kind, str) and kind in RECIPE_KINDS else None


def known_kind(value: Any) -> Any:
    """Before validation: a `prepare:` mapping whose kind is missing or unknown gets the registry's error."""
    if isinstance(value, dict):
        kind = value.get("kind")
        if not isinstance(kind, str):
            raise ValueError(f"a recipe needs 'kind', one of: {', '.join(RECIPE_KINDS.names())}")
        try:
            RECIPE_KINDS.get(kind)
        except ConfigError as e:
            raise ValueError(str(e)) from None
    return value


class _RegisteredKinds:
    """The pydantic schema of `AnyRecipe`: a tagged union of the kinds' models registered when it is built."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        choices: dict[Any, CoreSchema] = {
            name: handler.generate_schema(kind.fields) for name, kind in RECIPE_KINDS.registered()
        }
        if not choices:  # while the built-in kinds are being defined
            return handler.generate_schema(Recipe)
        return core_schema.tagged_union_schema(
            choices,
            discriminator=kind_of,
            custom_error_type="unknown_recipe_kind",
            custom_error_message="unknown recipe kind; known: " + ", ".join(sorted(choices)),
        )


AnyRecipe = Annotated[Recipe, _RegisteredKinds()]


def holds_recipes(*models: type[BaseModel]) -> None:
    """Declare models with an AnyRecipe field: rebuilt now and whenever a kind is registered."""
    _HOLDERS.extend(models)
    for model in models:
        model.model_rebuild(force=True)


def recipe_record(recipe: dict[str, Any] | None) -> dict[str, Any] | None:
    """A recipe as prepared.json records and compares it: fields at their default are left out, so a new
    optional recipe field (ladder's bits/calibration, tuning's adapter) does not make older builds stale."""
    if recipe is None:
        return None
    kind = kind_of(recipe)
    fields = RECIPE_KINDS.get(kind).fields.model_fields if kind is not None else {}
    return {k: v for k, v in recipe.items() if k not in fields or v != fields[k].default}
