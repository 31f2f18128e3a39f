"""The import graph read from the source: no cycle, and every arrow points down the layers of
docs/architecture.md (runner never imports grid; scoring and report read runs only through `rundir`)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agent_eval"

# What each part may import besides itself. A part not listed here fails the test: add it on purpose.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "registry": {"errors"},  # the one Registry class every plug point keeps its kinds in
    "action": set(),
    "closing": set(),
    "virtual_device": set(),  # standalone: its errors are its own
    "records": {"action"},
    "screen": {"errors"},
    "rundir": {"closing", "errors", "records"},
    "device": {"action", "errors", "registry", "screen", "virtual_device"},
    # Loads installed plug-ins after the built-in kinds (lazily imported) have registered.
    "plugins": {"agent", "builds", "device", "errors", "task"},
    "task": {"action", "device", "errors", "registry", "screen"},
    "builds": {"closing", "errors", "records", "registry", "rundir"},
    "agent": {"action", "builds", "device", "errors", "registry", "screen", "task"},
    "scoring": {"errors", "records", "rundir"},
    "report": {"action", "closing", "errors", "records", "rundir", "scoring", "screen"},
    "runner": {"action", "agent", "builds", "device", "errors", "records", "rundir", "screen", "task"},
    "fidelity": {"action", "agent", "builds", "errors", "records", "rundir", "scoring"},
    "grid": {
        "fidelity",
        "agent",
        "builds",
        "device",
        "errors",
        "records",
        "cluster",  # only when a grid names a cluster (lazily)
        "report",
        "rundir",
        "runner",
        "scoring",
        "task",
    },
    # Phones and engines on a Ray cluster: below the grid, above the runner (its phones are runner seats).
    "cluster": {
        "agent",
        "builds",
        "device",
        "errors",
        "records",
        "rundir",
        "runner",
        "task",
        "virtual_device",
    },
    "commands": {
        "builds",
        "device",
        "errors",
        "fidelity",
        "grid",
        "report",
        "rundir",
        "runner",
        "scoring",
        "task",
    },
    "tune": {"action", "agent", "builds", "device", "errors", "records", "runner", "screen", "task"},
    "cli": {"commands", "errors", "plugins", "tune", "virtual_device"},
    "__main__": {"cli"},
    "__init__": set(),
}
# File and folder names of a run that only `rundir/layout.py` may spell out: everyone else asks it.
RUN_FILES = {
    "episodes.jsonl",
    "steps.jsonl",
    "run.json",
    "scorecard.json",
    "scorecard.md",
    "report.html",
    "fidelity.json",
    "fidelity-power.json",
    "grid.yaml",
    "bandwidth.json",
    "thumbs",
    "engines",
    "probes",
}
# Import edges the cycle check ignores on purpose (none left: the phone's storage no longer reaches back).
KNOWN: set[tuple[str, str]] = set()


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, except those under `if TYPE_CHECKING:` (imports for annotations never run)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        yield node
        yield from _runtime_nodes(node)


def _raw_imports(path: Path) -> Iterator[tuple[str, int]]:
    """Every agent_eval name `path` imports, at any depth of the file (lazy imports count too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("agent_eval"):
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agent_eval"):
            for alias in node.names:
                # `from agent_eval.x import y` may name the module agent_eval.x.y or a name in x.
                yield f"{node.module}.{alias.name}", node.lineno


MODULES = {_module(p) for p in PACKAGE.rglob("*.py")}


def _imports(path: Path) -> Iterator[tuple[str, int]]:
    """The agent_eval modules `path` imports, with the line of each import."""
    for name, line in _raw_imports(path):
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name:
            yield name, line


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = _module(path)
        graph[module] = {name for name, _ in _imports(path) if name != module}
    return graph


def test_every_import_points_down_the_layers() -> None:
    upward = []
    for path in PACKAGE.rglob("*.py"):
        source = _part(_module(path))
        assert source in ALLOWED, f"{path}: part {source!r} is not in the layer table of this test"
        for name, line in _imports(path):
            target = _part(name)
            if target not in (source, "__init__") and target not in ALLOWED[source]:
                where = path.relative_to(PACKAGE.parent)
                upward.append(f"{where}:{line} imports {name} ({source} → {target})")
    assert not upward, "imports against the layers:\n" + "\n".join(upward)


def test_the_runner_never_imports_the_grid_and_the_report_never_the_device() -> None:
    assert "grid" not in ALLOWED["runner"] and "device" not in ALLOWED["report"]
    assert "cluster" not in ALLOWED["runner"] and "grid" not in ALLOWED["cluster"]
    assert "runner" not in ALLOWED["scoring"] and "runner" not in ALLOWED["report"]


def test_there_is_no_import_cycle() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            # A package's __init__ re-exporting its own modules is how packages work, not a cycle.
            if module.startswith(target + ".") or target.startswith(module + "."):
                continue
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target] if target in path else [module, target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(" → ".join(c) for c in cycles)


def _string_constants(tree: ast.Module) -> Iterator[ast.Constant]:
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node


def test_only_rundir_names_the_files_of_a_run() -> None:
    named = []
    for path in PACKAGE.rglob("*.py"):
        if _module(path) == "agent_eval.rundir.layout" or _part(_module(path)) == "virtual_device":
            continue
        for node in _string_constants(ast.parse(path.read_text(encoding="utf-8"))):
            if node.value in RUN_FILES:
                named.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} spells {node.value!r}")
    assert not named, "ask agent_eval.rundir.layout for these names:\n" + "\n".join(named)


def _run_file_strings(source: str) -> list[str]:
    return [n.value for n in _string_constants(ast.parse(source)) if n.value in RUN_FILES]


def test_the_run_file_check_sees_a_name_spelled_in_an_f_string_or_a_join() -> None:
    # The check must catch the ways a name was spelled before it moved to the layout module.
    spelled = "r = Path('x')\nprint(f\"wrote {r / 'fidelity.json'}\")\nr / 'thumbs'\n"
    assert sorted(_run_file_strings(spelled)) == ["fidelity.json", "thumbs"]
