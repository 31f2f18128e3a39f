"""The tests' folders mirror the packages and stay importable: pytest puts tests/ and each test's folder on
sys.path (pyproject's `pythonpath`, its default import mode), so a folder or a file there must not take a name
that a package or another test already has."""

from __future__ import annotations

import ast
import tomllib
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


def _top_level_packages() -> set[str]:
    """The distribution's packages (`include` of setuptools' find), e.g. agent_eval and virtual_phone."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    include = pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    return {pattern.rstrip("*") for pattern in include}


def test_no_test_folder_shadows_a_package() -> None:
    # A folder of tests/ named like an installed package is a namespace package on sys.path, found before
    # an editable install's finder: `import virtual_phone` would then import the tests' folder.
    packages = _top_level_packages()
    assert {"agent_eval", "virtual_phone"} <= packages
    folders = {p.name for p in TESTS.iterdir() if p.is_dir()}
    assert not folders & packages, f"rename these test folders: {sorted(folders & packages)}"


def test_every_test_file_name_is_unique_across_folders() -> None:
    names = Counter(p.name for p in TESTS.rglob("test_*.py") if "plugin_pkg" not in p.parts)
    assert len(names) > 80, "the scan found too few test files"
    twice = sorted(name for name, n in names.items() if n > 1)
    assert not twice, f"pytest imports a test by its file name: rename one of each {twice}"


def test_the_test_folders_mirror_the_packages() -> None:
    parts = {p.name for p in (REPO / "agent_eval").iterdir() if (p / "__init__.py").exists()}
    folders = {p.parent.name for p in TESTS.glob("*/test_*.py")}
    strays = folders - parts - {"phone", "chaos"}  # the virtual phone's own tests; faults across the parts
    assert not strays, f"a test folder that mirrors no package: {sorted(strays)}"


def test_no_test_imports_a_test_of_another_folder() -> None:
    # Only a test's own folder (and tests/) is on the path while it runs: code that tests of two folders share
    # goes in a tests/_helper module.
    sources = [p for p in TESTS.rglob("*.py") if "plugin_pkg" not in p.parts]
    imports = []
    for path in sources:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            imports += [
                f"{path.relative_to(TESTS)}: {n}"
                for n in names
                if n.startswith("test_") and not (path.parent / f"{n}.py").exists()
            ]
    assert len(sources) > 90, "the scan found too few files"
    assert not imports, "move what these import into a tests/_helper module:\n" + "\n".join(imports)
