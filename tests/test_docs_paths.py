"""The docs that describe the code stay true to it: every file they name exists, and the plug points'
registries and every built-in kind in them are where and as the docs say: each name the docs give a registry
is registered, and each kind a file may name is one the docs list or one their own examples register."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

from agent_eval.plugins import load_plugins
from agent_eval.registry import Registry

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "docs" / "architecture.md", REPO / "docs" / "extending.md", REPO / "tasks" / "README.md"]
PATH_DOCS = [*DOCS, REPO / "docs" / "virtual_phone.md", REPO / "README.md", REPO / "docs" / "results.md"]
_PATH = re.compile(r"`((?:agent_eval|virtual_phone|docs|tests|tasks|builds|grids|scripts|bench)/[\w./-]*)`")
# The registry of each plug point, as docs/architecture.md and docs/extending.md name it: (module, name).
REGISTRIES = {
    "ENGINE_KINDS": "agent_eval.builds.engine_kinds",
    "AGENTS": "agent_eval.agent.agents",
    "DEVICE_BACKENDS": "agent_eval.device.backend",
    "PREDICATES": "agent_eval.task.registry",
    "RECIPE_KINDS": "agent_eval.builds.recipe_kinds",
}
# The field of a file that names a kind of each registry (the predicate's is the key of a goal mapping).
NAMED_BY = {
    "engine": "ENGINE_KINDS",
    "agent": "AGENTS",
    "device_backend": "DEVICE_BACKENDS",
    "kind": "RECIPE_KINDS",
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
    engines = importlib.import_module("agent_eval.builds.engine_kinds").ENGINE_KINDS.names()
    predicates = importlib.import_module("agent_eval.task.registry").predicate_kinds()
    unnamed = [f"engine {e}" for e in engines if f"`{e}`" not in extending]
    unnamed += [f"predicate {p}" for p in predicates if f"`{p}" not in tasks]
    assert not unnamed, "registered but not documented: " + ", ".join(unnamed)


@cache
def built_in_names() -> dict[str, list[str]]:
    """Each registry's names in a fresh interpreter with no plug-in installed: the built-in kinds only (other
    tests of this session register kinds of their own)."""
    code = (
        "import importlib, json\n"
        "from agent_eval.plugins import load_plugins\n"
        "load_plugins()\n"
        f"registries = {REGISTRIES!r}\n"
        "names = {n: getattr(importlib.import_module(m), n).names() for n, m in registries.items()}\n"
        "print(json.dumps(names))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    names: dict[str, list[str]] = json.loads(done.stdout)
    return names


def listed_in_tables(text: str, registry: str) -> list[list[str]]:
    """The names in the last cell ("built in") of each plug-point table row: a row with a cell starting with
    the registry's name."""
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines() if line.startswith("|")]
    rows = [row for row in rows if any(c.startswith(f"`{registry}`") for c in row)]
    return [re.findall(r"`([^`]+)`", row[-1]) for row in rows]


def test_the_built_in_kinds_the_docs_list_are_exactly_the_registered_ones() -> None:
    registered = built_in_names()
    wrong = []
    for doc in DOCS[:2]:
        text, where = doc.read_text(encoding="utf-8"), doc.relative_to(REPO)
        for registry, names in registered.items():
            rows = listed_in_tables(text, registry)
            if len(rows) != 1:
                wrong.append(
                    f"{where}: {len(rows)} table rows list the built-in kinds of {registry} (want 1)"
                )
                continue
            wrong += [f"{where}: {registry} has no {n!r}" for n in rows[0] if n not in names]
            wrong += [f"{where}: {registry}'s {n!r} is not listed" for n in names if n not in rows[0]]
    assert not wrong, "\n".join(wrong)


def test_every_kind_the_docs_write_in_a_file_is_built_in_or_registered_by_their_examples() -> None:
    registered = built_in_names()
    unknown = []
    for doc in DOCS[:2]:
        text = doc.read_text(encoding="utf-8")
        code = "\n".join(re.findall(r"```\w*\n(.*?)```", text, flags=re.S))
        by_examples = set(re.findall(r'"([\w.-]+)"', code))  # `name = "terse"`, `PromptAgent("terse", ...)`
        prose = re.sub(r"```\w*\n.*?```", "", text, flags=re.S)
        spans = re.findall(r"`([^`\n]+)`", prose)
        for field, registry in NAMED_BY.items():
            for name in (n for span in spans for n in re.findall(rf"\b{field}: ([\w.-]+)", span)):
                if name not in registered[registry] and name not in by_examples and name != "null":
                    unknown.append(f"{doc.relative_to(REPO)}: `{field}: {name}` names no {registry} entry")
    assert not unknown, "\n".join(unknown)
