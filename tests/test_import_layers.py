"""The import graph read from the source: no cycle, every arrow points down the layers of docs/architecture.md
(runner never imports grid; scoring and report read runs only through `rundir`), and the virtual phone stands
alone: it imports nothing of agent_eval, and only the modules that start phones import it. Inside the phone,
every module sits in a room of its layer and imports only the rooms below it."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agent_eval"
PHONE = PACKAGE.parent / "virtual_phone"
ROOTS = ("agent_eval", "virtual_phone")

# What each part may import besides itself. A part not listed here fails the test: add it on purpose.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "registry": {"errors"},  # the one Registry class every plug point keeps its kinds in
    "action": set(),
    "closing": set(),
    "records": {"action"},
    "screen": {"errors"},
    "rundir": {"closing", "errors", "records"},
    # A build's server as its users talk to it: the endpoint, the chat client, teacher forcing.
    "chat": {"closing", "errors"},
    "device": {"action", "errors", "registry", "screen", "virtual_phone"},  # the adb backend starts phones
    # Loads installed plug-ins after the built-in kinds (lazily imported) have registered.
    "plugins": {"agent", "builds", "device", "errors", "registry", "task"},
    # The one module a plug-in imports: every plug point's types and register functions, nothing that runs.
    "api": {"action", "agent", "builds", "chat", "device", "errors", "plugins", "records", "registry"}
    | {"screen", "task"},
    "task": {"action", "device", "errors", "registry", "screen"},
    "builds": {"chat", "closing", "errors", "records", "registry", "rundir"},
    "agent": {"action", "builds", "chat", "device", "errors", "registry", "screen", "task"},
    "scoring": {"errors", "records", "rundir"},
    "report": {"action", "closing", "errors", "records", "rundir", "scoring", "screen"},
    "runner": {
        "action",
        "agent",
        "builds",
        "chat",
        "device",
        "errors",
        "records",
        "rundir",
        "screen",
        "task",
    },
    "fidelity": {"action", "agent", "builds", "chat", "errors", "records", "rundir", "scoring"},
    "grid": {
        "chat",
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
        "chat",
        "agent",
        "builds",
        "device",
        "errors",
        "records",
        "rundir",
        "runner",
        "task",
        "virtual_phone",  # a phone actor starts its phone
    },
    "commands": {
        "chat",
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
        "tune",
    },
    # chat: the base's chat template, which training renders the agent's prompts with as the server does
    "tune": {"action", "agent", "builds", "chat", "device", "errors", "records", "runner", "screen", "task"},
    "cli": {"commands", "errors", "plugins", "virtual_phone"},  # `agent-eval device` is the phone's command
    "__main__": {"cli"},
    "__init__": {"plugins"},  # installs the plug-in loading that runs before a registry is first asked
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
# The only modules of agent_eval that import the phone package: the device backend and a cluster's phone
# actor start phones (the harness talks to them over adb like any device); the CLI keeps `agent-eval device`.
PHONE_IMPORTERS = {"agent_eval.device.adb_backend", "agent_eval.cluster.phones", "agent_eval.cli"}
# Import edges the cycle check ignores on purpose (none left: the phone's storage no longer reaches back).
KNOWN: set[tuple[str, str]] = set()

# The virtual phone's rooms, from the top down, and what each may import besides itself. A top-level module of
# the package is a room of its own; every other module lives in a sub-package. Imports for annotations only
# (`if TYPE_CHECKING:`) do not count: Android's programs name the `Phone` they run on, which starts them.
PHONE_ROOMS: dict[str, set[str]] = {
    "__init__": {"faults", "fleet"},  # the public names: start_fleet, Fleet, FaultConfig
    "__main__": {"cli"},
    "cli": {"adb", "errors", "faults"},  # the `virtual-phone` command
    "fleet": {"adb", "errors", "faults"},  # start_fleet: the phone process as a child
    "adb": {"phone", "shell", "state", "errors", "faults"},  # adbd, the emulator console, the fleet process
    "phone": {"shell", "app_modules", "screens", "records", "views", "state", "schema", "faults"},
    "shell": {"views", "state", "schema", "errors"},  # mksh and toybox in the sandbox, Android's programs
    "app_modules": {"records", "state", "schema"},  # each app's own code, beside its YAML in apps/
    "screens": {"records", "views", "state", "schema"},  # the layout, Settings' screens, dialogs, the shade
    "records": {"views", "state", "schema", "errors"},  # screens bound to the apps' records
    "views": {"state"},  # the view tree, its pixels and its uiautomator XML
    "state": {"schema"},  # settings and tasks, files, databases and providers, users, the clock
    "schema": {"errors"},  # what apps/*.yaml may say
    "faults": {"errors"},
    "errors": set(),
}
PHONE_TOP_LEVEL = {"__init__", "__main__", "cli", "fleet", "phone", "faults", "errors"}


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part(module: str) -> str:
    """The layer a module belongs to: a part of agent_eval, or the phone package as a whole."""
    parts = module.split(".")
    if parts[0] == "virtual_phone":
        return "virtual_phone"
    return parts[1] if len(parts) > 1 else "__init__"


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, except those under `if TYPE_CHECKING:` (imports for annotations never run)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        yield node
        yield from _runtime_nodes(node)


def _raw_imports(path: Path) -> Iterator[tuple[str, int]]:
    """Every agent_eval or virtual_phone name `path` imports, at any depth of the file (lazy imports too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ROOTS:
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ROOTS:
            for alias in node.names:
                # `from agent_eval.x import y` may name the module agent_eval.x.y or a name in x.
                yield f"{node.module}.{alias.name}", node.lineno


SOURCES = [*PACKAGE.rglob("*.py"), *PHONE.rglob("*.py")]
MODULES = {_module(p) for p in SOURCES}


def _imports(path: Path) -> Iterator[tuple[str, int]]:
    """The agent_eval and virtual_phone modules `path` imports, with the line of each import."""
    for name, line in _raw_imports(path):
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name:
            yield name, line


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SOURCES:
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


def test_the_phone_imports_nothing_of_the_harness() -> None:
    reaching = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for path in PHONE.rglob("*.py")
        for name, line in _raw_imports(path)
        if name.split(".")[0] != "virtual_phone"
    ]
    assert len(MODULES) > len(list(PACKAGE.rglob("*.py"))) + 50, "the scan did not find the phone's modules"
    assert not reaching, "the virtual phone is a package of its own:\n" + "\n".join(reaching)


def _room(module: str) -> str:
    """The room of a phone module: its sub-package, or the top-level module itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_phone_module_is_in_a_room_of_the_table() -> None:
    homeless, rooms = [], set()
    for path in sorted(PHONE.rglob("*.py")):
        where = path.relative_to(PHONE)
        room = _room(_module(path))
        rooms.add(room)
        if len(where.parts) == 1 and room not in PHONE_TOP_LEVEL:
            homeless.append(f"virtual_phone/{where}: a module at the top; move it into the room of its layer")
        elif len(where.parts) > 1 and (room in PHONE_TOP_LEVEL or room not in PHONE_ROOMS):
            homeless.append(f"virtual_phone/{where}: {room}/ is not a room of PHONE_ROOMS")
    stale = sorted(set(PHONE_ROOMS) - rooms)
    assert len(rooms) >= len(PHONE_TOP_LEVEL) + 5, (
        f"the scan found too few rooms of the phone: {sorted(rooms)}"
    )
    assert not homeless, "every module of the phone belongs to a room of this test's table:\n" + "\n".join(
        homeless
    )
    assert not stale, f"PHONE_ROOMS lists rooms the phone no longer has: {stale}"


def test_the_phone_rooms_point_down_in_the_order_of_the_table() -> None:
    rooms = list(PHONE_ROOMS)
    upward = [
        f"{room} → {target}"
        for i, room in enumerate(rooms)
        for target in sorted(PHONE_ROOMS[room])
        if target not in rooms[i + 1 :]
    ]
    assert not upward, "PHONE_ROOMS lists a room's imports above it (or unknown): " + ", ".join(upward)


def test_every_phone_import_points_down_the_rooms() -> None:
    upward = []
    for path in sorted(PHONE.rglob("*.py")):
        source = _room(_module(path))
        for name, line in _imports(path):
            target = _room(name)
            if target != source and target not in PHONE_ROOMS.get(source, set()):
                where = path.relative_to(PACKAGE.parent)
                upward.append(f"{where}:{line} imports {name} ({source} → {target})")
    assert not upward, "the phone's imports against its rooms (PHONE_ROOMS):\n" + "\n".join(upward)


def test_only_the_modules_that_start_phones_import_the_phone() -> None:
    importers = {
        _module(path): line
        for path in PACKAGE.rglob("*.py")
        for name, line in _imports(path)
        if _part(name) == "virtual_phone"
    }
    assert set(importers) == PHONE_IMPORTERS, f"import the phone only to start one: {importers}"
    top_level = [
        f"{module}:{node.lineno}"
        for module in PHONE_IMPORTERS - {"agent_eval.cli"}
        for node in ast.parse(_source(module)).body
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(_part(name) == "virtual_phone" for name in _names_of(node))
    ]
    assert not top_level, f"the harness loads the phone package only when it starts a phone: {top_level}"


def _source(module: str) -> str:
    return (PACKAGE.parent / module.replace(".", "/")).with_suffix(".py").read_text(encoding="utf-8")


def _names_of(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return [node.module or ""]


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
        if _module(path) == "agent_eval.rundir.layout":
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


# -- the public module for extenders -----------------------------------------------------------------------

PLUGIN_PACKAGE = PACKAGE.parent / "tests" / "plugin_pkg"


def test_nothing_in_the_harness_imports_the_public_module() -> None:
    # agent_eval.api only gathers names for plug-ins: the harness depending on it would make it a layer.
    assert all("api" not in allowed for allowed in ALLOWED.values())
    importers = [
        f"{_module(path)}:{line}"
        for path in PACKAGE.rglob("*.py")
        for name, line in _imports(path)
        if name == "agent_eval.api" and _module(path) != "agent_eval.api"
    ]
    assert not importers, f"the harness imports agent_eval.api: {importers}"


def test_the_public_module_offers_every_register_function_and_plug_point() -> None:
    import agent_eval.api as api

    defined = {
        node.name
        for path in PACKAGE.rglob("*.py")
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("register_")
    }
    assert len(defined) >= 5 and defined <= set(api.__all__), sorted(defined - set(api.__all__))
    plug_points = {"EngineKind", "EngineOptions", "RecipeKind", "Agent", "DeviceBackend", "GoalPredicate"}
    assert plug_points <= set(api.__all__)
    objects = {n: getattr(api, n) for n in api.__all__}
    named = [n for n, o in objects.items() if isinstance(o, type) or inspect.isfunction(o)]
    undocumented = [n for n in named if not objects[n].__doc__]
    assert not undocumented, f"say what these are for: {undocumented}"


def test_the_plugin_package_imports_only_the_public_module() -> None:
    sources = list(PLUGIN_PACKAGE.rglob("*.py"))
    imported = {name for path in sources for name, _ in _raw_imports(path)}
    assert sources and imported, "the scan found no imports in the plug-in package"
    assert {name.rpartition(".")[0] or name for name in imported} == {"agent_eval.api"}, imported


# builds/: the interface (a builds file and the plug points it names) is the folder's own modules, in a line
# from the lowest up; serving/ and preparing/ stand below it. Serving never imports preparing: it reads a
# build's weights and their prepared.json through its own `weights`. Preparing imports serving (the host's
# facts, the weights check a brought build gets). The package's front door (`__init__`) gathers all three.
BUILDS = PACKAGE / "builds"
BUILDS_INTERFACE = ("bandwidth", "engine_kinds", "recipe_kinds", "ladder_rungs", "spec")
# What each room of builds/ may import there besides the interface.
BUILDS_ROOMS = {"serving": {"serving"}, "preparing": {"preparing", "serving"}}


def _every_import(path: Path) -> Iterator[str]:
    """The agent_eval modules `path` imports, those only for annotations (`if TYPE_CHECKING:`) included."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agent_eval."):
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.startswith("agent_eval."))


def _builds_place(name: str) -> str | None:
    """Where in builds/ an imported name lives: an interface module, a room, or `__init__` for the package
    itself (`from agent_eval.builds import Build`); None: outside builds/."""
    parts = name.split(".")
    if parts[:2] != ["agent_eval", "builds"]:
        return None
    place = parts[2] if len(parts) > 2 else "__init__"
    return place if place in BUILDS_INTERFACE or place in BUILDS_ROOMS else "__init__"


def test_the_builds_folder_is_the_interface_and_two_rooms() -> None:
    modules = {p.stem for p in BUILDS.glob("*.py")} - {"__init__"}
    rooms = {p.parent.name for p in BUILDS.glob("*/__init__.py")}
    assert modules == set(BUILDS_INTERFACE), "a module of the interface was added or renamed: update the line"
    assert rooms == set(BUILDS_ROOMS), "a room of builds/ was added or renamed: update BUILDS_ROOMS"
    assert "preparing" not in BUILDS_ROOMS["serving"]


def test_the_builds_interface_is_a_line_even_counting_annotations() -> None:
    against = [
        f"builds/{name}.py imports {target}"
        for at, name in enumerate(BUILDS_INTERFACE)
        for target in _every_import(BUILDS / f"{name}.py")
        if _builds_place(target) not in (None, name, *BUILDS_INTERFACE[:at])
    ]
    assert not against, "an interface module imports only those before it:\n" + "\n".join(against)


def test_serving_and_preparing_import_the_interface_and_the_room_below_only() -> None:
    against = [
        f"{path.relative_to(BUILDS)} imports {target}"
        for room, allowed in BUILDS_ROOMS.items()
        for path in sorted((BUILDS / room).rglob("*.py"))
        for target in _every_import(path)
        if _builds_place(target) not in (None, *BUILDS_INTERFACE, *allowed)
    ]
    assert not against, "imports against the rooms of builds/:\n" + "\n".join(against)


def test_the_builds_checks_count_imports_made_only_for_annotations(tmp_path: Path) -> None:
    module = tmp_path / "annotated.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from agent_eval.builds.spec import Build\n"
        "from agent_eval.builds import Serving\n"
    )
    assert sorted(str(_builds_place(name)) for name in _every_import(module)) == ["__init__", "spec"]
