"""The scripts `builds prepare` runs by path (`_quantize_script.py` in .venv-quant, `_convert_script.py` in
the harness venv) put agent_eval/builds/ first on sys.path: no module there may hide a package they import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_eval.builds.serving.host import quant_python

BUILDS = Path(__file__).resolve().parents[2] / "agent_eval" / "builds"
FIND = "import importlib.util, sys; print(' '.join(n for n in sys.argv[1:] if importlib.util.find_spec(n)))"


def _siblings() -> list[str]:
    return sorted(p.stem for p in BUILDS.glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("venv", ["quant", "harness"])
def test_no_module_beside_the_scripts_hides_an_installed_package(venv: str) -> None:
    python = str(quant_python()) if venv == "quant" else sys.executable
    names = _siblings()
    assert "gguf_rungs" in names and "_quantize_script" in names  # the scan sees the folder
    found = subprocess.run(
        [python, "-I", "-c", FIND, *names], capture_output=True, text=True, check=True, cwd="/"
    ).stdout.split()
    assert not found, f"agent_eval/builds/ modules named like installed packages of the {venv} venv: {found}"


def test_the_check_finds_a_package_that_is_installed() -> None:
    found = subprocess.run(
        [str(quant_python()), "-I", "-c", FIND, "gguf", "transformers", "no_such_package_here"],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    ).stdout.split()
    assert found == ["gguf", "transformers"]
