"""The harness's functions, and the virtual phone's (a package of its own), stay short enough to read in one
screen."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = [REPO / "agent_eval", REPO / "virtual_phone"]
MAX_LINES = 60


def test_no_function_is_longer_than_sixty_lines() -> None:
    long = []
    paths = sorted(path for package in PACKAGES for path in package.rglob("*.py"))
    assert any(p.parent.name == "virtual_phone" for p in paths), "the scan misses the phone"
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    where = path.relative_to(REPO)
                    long.append(f"{where}:{node.lineno} {node.name}: {lines} lines")
    assert not long, "split these into smaller functions:\n" + "\n".join(long)
