"""The package's functions, the virtual phone's included, stay short enough to read in one screen."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agent_eval"
MAX_LINES = 60


def test_no_function_is_longer_than_sixty_lines() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    where = path.relative_to(PACKAGE.parent)
                    long.append(f"{where}:{node.lineno} {node.name}: {lines} lines")
    assert not long, "split these into smaller functions:\n" + "\n".join(long)
