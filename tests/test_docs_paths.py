"""The docs that describe the code stay true to it: every file they name exists, and the plug points'
registries and every built-in kind in them are where and as the docs say."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from agent_eval.plugins import load_plugins
from agent_eval.registry import Registry

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "docs" / "architecture.md", REPO / "docs" / "extending.md", REPO / "tasks" / "README.md"]
PATH_DOCS = [*DOCS, REPO / "docs" / "virtual_phone.md", REPO / "README.md"]
_PATH = re.compile(r"`((?:agent_eval|virtual_phone|docs|tests|tasks|builds|grids|scripts|bench)/[\w./-]*)`")
# The registry of each plug point, as docs/architecture.md and docs/extending.md name it: (module, name).
REGISTRIES = {
    "ENGINE_KINDS": "agent_eval.builds.kinds",
    "AGENTS": "agent_eval.agent.agents",
    "DEVICE_BACKENDS": "agent_eval.device.backend",
    "PREDICATES": "agent_eval.task.registry",
}


def test_every_path_the_docs_name_exists() -> None:
    missing = []
    for doc in PATH_DOCS:
        for path in _PATH.findall(doc.read_text(encoding="utf-8")):
            path = path.rstrip("/")
            # The parts table of architecture.md names modules inside agent_eval/, sometimes without `.py`.
            places = [REPO / path, REPO / "agent_eval" / path]
            if not any(p.exists() or p.with_suffix(".py").exists() for p in places):
                missing.append(f"{doc.relative_to(REPO)} names {path}")
    assert not missing, "\n".join(missing)


def test_the_registries_are_where_the_docs_say_and_hold_the_kinds_they_list() -> None:
    load_plugins()  # the built-in kinds register on import; no plug-in is installed in the test environment
    architecture, extending, tasks = (" ".join(doc.read_text(encoding="utf-8").split()) for doc in DOCS)
    for name, module in REGISTRIES.items():
        registry = getattr(importlib.import_module(module), name)
        assert isinstance(registry, Registry), f"{module}.{name} is not a Registry"
        where = module.removeprefix("agent_eval.").replace(".", "/") + ".py"
        assert f"`{name}`" in architecture and f"`{name}` in `agent_eval/{where}`" in extending, name
    engines = importlib.import_module("agent_eval.builds.kinds").ENGINE_KINDS.names()
    predicates = importlib.import_module("agent_eval.task.registry").predicate_kinds()
    unnamed = [f"engine {e}" for e in engines if f"`{e}`" not in extending]
    unnamed += [f"predicate {p}" for p in predicates if f"`{p}" not in tasks]
    assert not unnamed, "registered but not documented: " + ", ".join(unnamed)
