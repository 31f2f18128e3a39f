"""What an engine kind can do is a field of the kind, checked when a build file loads: a build that sends
screenshots, or plays an agent that needs them, on a server that takes no images is refused there, as is a
`prepare.kind` or an `agent:` no registry knows. No engine starts here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_eval.agent.agents import AGENTS, PromptAgent, register_agent
from agent_eval.agent.prompt import action_schema, build_prompt
from agent_eval.builds.engine_kinds import ENGINE_KINDS, register_engine_kind
from agent_eval.builds.preparing.prepare_builds import prepare
from agent_eval.builds.recipe_kinds import (
    RECIPE_KINDS,
    Plan,
    Recipe,
    Say,
    Weights,
    register_recipe_kind,
)
from agent_eval.builds.serving.built_in_engines import EndpointKind
from agent_eval.builds.spec import Step, parse_builds
from agent_eval.errors import BuildError, ConfigError
from agent_eval.records import RungInfo

EYES = "eyes-only-test"  # an agent that cannot play without the screenshot
register_agent(PromptAgent(EYES, build_prompt, action_schema, needs_images=True))


def _vllm(**extra: Any) -> dict[str, Any]:
    return {
        "name": "v",
        "reference": True,
        "scheme": "bf16",
        "engine": "vllm-cpu",
        "model_path": "m/v",
        **extra,
    }


def _llamacpp(**extra: Any) -> dict[str, Any]:
    build = {
        "name": "g",
        "reference": True,
        "scheme": "gguf-q4_1",
        "engine": "llama.cpp",
        "model_path": "g.gguf",
    }
    return build | extra


def _endpoint(**extra: Any) -> dict[str, Any]:
    build = {"name": "e", "reference": True, "scheme": "endpoint", "engine": "endpoint"}
    return build | {"base_url": "http://127.0.0.1:9/v1", "model": "m", **extra}


def _refused(build: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as err:
        parse_builds({"builds": [build]}, "test.yaml")
    return str(err.value)


def test_each_built_in_engine_kind_states_whether_its_server_takes_images() -> None:
    images = {
        name: kind.images for name, kind in ENGINE_KINDS.in_order() if name in ("vllm-cpu", "llama.cpp")
    }
    assert images == {"vllm-cpu": False, "llama.cpp": False}  # text-only checkpoints, no vision projector
    assert ENGINE_KINDS.get("endpoint").images is True  # someone else's server: the build says


@pytest.mark.parametrize("build", [_vllm(accepts_images=True), _llamacpp(accepts_images=True)])
def test_screenshots_to_a_server_that_takes_no_images_are_refused_at_load(build: dict[str, Any]) -> None:
    message = _refused(build)
    assert message.startswith("test.yaml: ") and f"build {build['name']!r}" in message
    assert f"accepts_images: the {build['engine']} engine's server takes no image inputs" in message


@pytest.mark.parametrize("build", [_vllm(agent=EYES), _llamacpp(agent=EYES)])
def test_an_agent_that_needs_images_on_an_engine_without_them_is_refused_at_load(
    build: dict[str, Any],
) -> None:
    message = _refused(build)
    assert f"build {build['name']!r}" in message
    assert (
        f"agent: {EYES!r} needs the screenshot, and the {build['engine']} engine's server takes no image"
        in message
    )


def test_an_agent_that_needs_images_gets_them_from_an_endpoint_that_sends_them() -> None:
    assert "set accepts_images: true" in _refused(_endpoint(agent=EYES))
    build = parse_builds({"builds": [_endpoint(agent=EYES, accepts_images=True)]}, "test.yaml").builds[0]
    assert build.manifest().accepts_images and build.manifest().agent == EYES


def test_an_unknown_agent_is_refused_at_load_with_the_known_ones() -> None:
    message = _refused(_vllm(agent="no-such-agent"))
    assert "build 'v'" in message and "agent: unknown agent 'no-such-agent'; known: " in message
    assert all(name in message for name in AGENTS.names())


def test_an_unknown_recipe_kind_names_the_build_the_field_and_the_known_kinds() -> None:
    message = _refused(_vllm(prepare={"kind": "sharpen", "source": "v"}))
    known = ", ".join(RECIPE_KINDS.names())
    assert f"build 'v' builds[0].prepare: unknown recipe kind 'sharpen'; known: {known}" in message
    assert "prepare: a recipe needs 'kind'" in _refused(_vllm(prepare={"source": "v"}))


def test_a_recipe_field_error_names_the_field_as_the_file_writes_it() -> None:
    message = _refused(_vllm(prepare={"kind": "quantize", "source": "v", "weights": "int3"}))
    assert "build 'v' builds[0].prepare.weights: Input should be 'int8' or 'int4'" in message
    # A field another kind takes is not this kind's: refused, not ignored.
    message = _refused(_vllm(prepare={"kind": "round", "source": "v", "bits": 4, "gguf_type": "q4_0"}))
    assert "prepare.gguf_type: Extra inputs are not permitted" in message
    assert "takes no 'source'" in _refused(_vllm(prepare={"kind": "shipped-gguf", "source": "v"}))


def test_an_engine_kind_that_does_not_state_its_capabilities_is_refused() -> None:
    class Vague(EndpointKind):
        name = "vague-test"
        images = None  # type: ignore[assignment]  # a kind that does not say

    with pytest.raises(ConfigError, match=r"engine kind 'vague-test' must state images \(True or False\)"):
        register_engine_kind(Vague())
    assert "vague-test" not in ENGINE_KINDS


def test_nothing_outside_the_kinds_compares_engine_names() -> None:
    package = Path(__file__).resolve().parents[2] / "agent_eval"
    kinds = {package / "builds" / "serving" / "built_in_engines.py", package / "builds" / "engine_kinds.py"}
    found = []
    for path in package.rglob("*.py"):
        if path in kinds:
            continue
        text = path.read_text(encoding="utf-8")
        for name in ("vllm-cpu", "llama.cpp", "endpoint"):
            for compare in (f'== "{name}"', f'!= "{name}"', f'in ("{name}"'):
                if compare in text:
                    found.append(f"{path.relative_to(package.parent)}: {compare}")
    assert not found, found


class _Loose:
    """A recipe kind that records a prepared.json field of its own invention."""

    name = "loose-test"
    fields = Recipe

    def bits(self, recipe: Recipe, scheme: str) -> float | None:
        return None

    def list_group(self, recipe: Recipe, scheme: str) -> str:
        return "other"

    def rung(self, recipe: Recipe, weights: Weights) -> RungInfo | None:
        return None

    def plan(self, step: Step) -> Plan:
        def make(say: Say) -> dict[str, Any]:
            step.out.mkdir(parents=True, exist_ok=True)
            (step.out / "model.safetensors").write_bytes(b"weights")
            return {"colour": "red"}

        return Plan(step.made_from, make)


def test_a_recipe_kind_that_records_a_field_prepared_json_has_not_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register_recipe_kind(_Loose())
    monkeypatch.setenv("AGENT_EVAL_MODELS", str(tmp_path))
    builds = parse_builds({"builds": [_vllm(prepare={"kind": "loose-test"})]}, "test.yaml")
    with pytest.raises(
        BuildError, match=r"recipe kind 'loose-test' returned prepared.json fields \['colour'\]"
    ):
        prepare(builds, say=lambda _: None)
    assert not (tmp_path / "m" / "v" / "prepared.json").exists()
