"""`dequantize-gguf`, a base brought as a GGUF file: its fields are checked when the build file loads, and a
GGUF or chat template that is not there is refused by name before anything runs. (The recipe itself runs in
tests/tune/test_second_family.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_eval.builds.preparing import built_in_recipes
from agent_eval.builds.recipe_kinds import recipe_kind
from agent_eval.builds.spec import Step, parse_builds
from agent_eval.errors import BuildError, ConfigError


def _build(**prepare: Any) -> dict[str, Any]:
    recipe = {"kind": "dequantize-gguf", **prepare}
    return {
        "name": "base",
        "reference": True,
        "scheme": "bf16",
        "engine": "vllm-cpu",
        "model_path": "b/bf16",
    } | {"prepare": recipe}


def _refused(build: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as err:
        parse_builds({"builds": [build]}, "family.yaml")
    return str(err.value)


def test_its_fields_are_checked_when_the_file_loads() -> None:
    assert "builds[0].prepare.gguf: Field required" in _refused(_build())
    assert "takes no 'source'" in _refused(_build(gguf="g.gguf", source="other"))
    assert "prepare.gguf_type: Extra inputs are not permitted" in _refused(
        _build(gguf="g.gguf", gguf_type="q8_0")
    )


def _plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **prepare: Any) -> None:
    monkeypatch.setattr(built_in_recipes, "models_dir", lambda: tmp_path)
    builds = parse_builds({"builds": [_build(**prepare)]}, "family.yaml")
    build = builds.get("base")
    recipe_kind("dequantize-gguf").plan(Step(build, builds, tmp_path / "shipped.gguf", "sha256:x"))


def test_a_gguf_or_template_that_is_not_there_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(
        BuildError, match=r"build 'base': its GGUF family/base\.gguf is not in .*put the file"
    ):
        _plan(tmp_path, monkeypatch, gguf="family/base.gguf")
    (tmp_path / "family").mkdir()
    (tmp_path / "family" / "base.gguf").write_bytes(b"GGUF")
    with pytest.raises(BuildError, match=r"cannot read its chat_template builds/no-such\.jinja"):
        _plan(tmp_path, monkeypatch, gguf="family/base.gguf", chat_template="builds/no-such.jinja")
