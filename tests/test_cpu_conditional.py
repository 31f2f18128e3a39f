"""Which tests depend on the real CPU kind, and why: the list in tests/_cpu.py must match the tests that read
the real CPU, so no test is silently one-kind-only; decisions made by the harness are tested on every kind."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from _cpu import (
    CONDITIONAL_ON_THE_REAL_CPU,
    DIFFERING_FLAGS,
    HOSTS,
    WatchedFlags,
    conditional_on_the_real_cpu,
)

from agent_eval.builds.serving import host

TESTS = Path(__file__).resolve().parent
REAL_CPU = {
    "real_cpu_flags",
    "servable_vllm_schemes",
    "servable_default_builds",
    "_gptq_int4_test_name",
    "_served_rungs",
}
"""Names whose value is this CPU's: a test or fixture that uses one runs differently by CPU kind."""


def _is_test_or_fixture(node: ast.FunctionDef) -> bool:
    fixture = any("fixture" in ast.unparse(d) for d in node.decorator_list)
    return node.name.startswith("test_") or fixture


def _names(node: ast.AST) -> set[str]:
    found: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
    return found


def _uses() -> dict[str, set[str]]:
    """Test or fixture (file::name) → the CPU names it reads."""
    uses: dict[str, set[str]] = {}
    for file in sorted(TESTS.rglob("test_*.py")):  # every folder of tests/; named by its path below tests/
        if file == Path(__file__).resolve():  # its own check of the override reads the real flags on purpose
            continue
        for node in ast.parse(file.read_text()).body:
            if isinstance(node, ast.FunctionDef) and _is_test_or_fixture(node):
                names = _names(node) & (REAL_CPU | {"cpu_flags", "CPU_ENV"})
                if names:
                    uses[f"{file.relative_to(TESTS).as_posix()}::{node.name}"] = names
    return uses


def test_every_test_that_reads_the_real_cpu_is_listed_with_why() -> None:
    uses = _uses()
    real = {test for test, names in uses.items() if names & REAL_CPU}
    assert real, "the scan found no CPU-dependent test: it is broken"
    unlisted = sorted(t for t in real if not conditional_on_the_real_cpu(f"tests/{t}", []))
    assert not unlisted, f"add these to CONDITIONAL_ON_THE_REAL_CPU in tests/_cpu.py with why: {unlisted}"
    for entry, why in CONDITIONAL_ON_THE_REAL_CPU.items():
        assert any(t == entry or t.startswith(f"{entry}::") for t in real), f"stale entry {entry!r}"
        assert len(why) > 40, entry


def test_decisions_read_the_cpu_only_through_a_simulated_kind() -> None:
    # `cpu_flags()` in a test is this CPU's unless the test set a simulated kind: then one branch never runs.
    unsimulated = [t for t, names in _uses().items() if "cpu_flags" in names and "CPU_ENV" not in names]
    assert not unsimulated, (
        f"these tests decide by this CPU's flags; simulate each kind instead: {unsimulated}"
    )


def test_a_simulated_kind_replaces_the_cpus_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(host.SIMULATED_CPU_FLAGS, HOSTS["avx2-only"])
    assert "avx2" in host.cpu_flags() and "avx512f" not in host.cpu_flags()
    monkeypatch.setenv(host.SIMULATED_CPU_FLAGS, HOSTS["avx512-amx"])
    assert {"avx512f", "amx_int8"} <= host.cpu_flags()
    monkeypatch.delenv(host.SIMULATED_CPU_FLAGS)
    assert host.cpu_flags() == host.real_cpu_flags()


def test_the_guard_names_a_test_by_file_name_or_listed_fixture_and_watches_the_differing_flags() -> None:
    # tests/conftest.py fails a test that asks this CPU about a flag in DIFFERING_FLAGS unless it is listed
    assert conditional_on_the_real_cpu("tests/test_main_job_e2e.py::test_x[a-b]", [])
    assert conditional_on_the_real_cpu(
        "tests/builds/test_builds_ladder.py::test_y", ["tmp_path", "served_rung"]
    )
    assert not conditional_on_the_real_cpu("tests/builds/test_builds_ladder.py::test_y", ["tmp_path"])
    assert not conditional_on_the_real_cpu("tests/grid/test_grid_spec.py::test_z", ["served_rung"])
    assert {"avx512f", "avx512bw", "amx_int8"} <= DIFFERING_FLAGS and not {"avx2", "sse2"} & DIFFERING_FLAGS
    asked: list[str] = []
    flags = WatchedFlags(frozenset({"avx2", "fma"}), asked)
    assert "avx2" in flags and "avx512f" not in flags and "no_such_flag" not in flags
    assert asked == ["avx2", "avx512f", "no_such_flag"] and set(asked) & DIFFERING_FLAGS == {"avx512f"}
