"""The scripts run by path put their own folder first on sys.path: `_quantize_script.py` (in .venv-quant) and
`_convert_script.py` (in the harness venv) put agent_eval/builds/preparing/ there, `_guard.py` (harness venv)
agent_eval/builds/serving/. No module beside them may hide a package (or a standard module) they import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent_eval.builds.serving.host import quant_python

BUILDS = Path(__file__).resolve().parents[2] / "agent_eval" / "builds"
FIND = "import importlib.util, sys; print(' '.join(n for n in sys.argv[1:] if importlib.util.find_spec(n)))"
# Each folder with a script run by path, the script, and the venvs its scripts run in.
SCRIPTS = [
    ("preparing", "_quantize_script", "quant"),
    ("preparing", "_convert_script", "harness"),
    ("serving", "_guard", "harness"),
]


def _siblings(folder: str) -> list[str]:
    return sorted(p.stem for p in (BUILDS / folder).glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize(("folder", "script", "venv"), SCRIPTS)
def test_no_module_beside_the_scripts_hides_an_installed_package(folder: str, script: str, venv: str) -> None:
    python = str(quant_python()) if venv == "quant" else sys.executable
    names = _siblings(folder)
    assert script in names and len(names) > 3  # the scan sees the folder
    found = subprocess.run(
        [python, "-I", "-c", FIND, *names], capture_output=True, text=True, check=True, cwd="/"
    ).stdout.split()
    assert not found, f"builds/{folder}/ modules named like installed modules of the {venv} venv: {found}"


def test_the_check_finds_a_package_that_is_installed() -> None:
    found = subprocess.run(
        [str(quant_python()), "-I", "-c", FIND, "gguf", "transformers", "no_such_package_here"],
        capture_output=True,
        text=True,
        check=True,
        cwd="/",
    ).stdout.split()
    assert found == ["gguf", "transformers"]
