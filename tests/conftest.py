"""Every test: deciding by a CPU flag whose presence differs between the CPU kinds this project meets
(tests/_cpu.py's HOSTS) while no kind is simulated is an error, unless the test is listed there as conditional
on the real CPU (with why). Such a test takes one branch on an AVX-512 host and the other on an AVX2-only one:
two passed where they were written and failed in CI on the other kind. Simulate each kind instead. Engine
tests are left to tests/test_cpu_conditional.py's scan: they serve what this host can run, by design."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from _cpu import DIFFERING_FLAGS, WatchedFlags, conditional_on_the_real_cpu, reading_by_design
from _engines import SharedReference

from agent_eval.builds.serving import host


@pytest.fixture(autouse=True)
def _cpu_decisions_are_simulated(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    nodeid = request.node.nodeid
    if (
        request.node.get_closest_marker("engine") is not None  # serves this host's builds: the static scan's
        or nodeid.split("::")[0].endswith("test_cpu_conditional.py")  # reads the real flags on purpose
        or conditional_on_the_real_cpu(nodeid, list(request.fixturenames))  # conditional by design, with why
    ):
        yield
        return
    asked: list[str] = []
    flags_of = host.cpu_flags

    def watched() -> frozenset[str]:
        flags = flags_of()
        if os.environ.get(host.SIMULATED_CPU_FLAGS) is not None or reading_by_design():
            return flags
        return WatchedFlags(flags, asked)

    monkeypatch.setattr(host, "cpu_flags", watched)
    yield
    by_host = sorted(set(asked) & DIFFERING_FLAGS)
    assert not by_host, (
        f"this test decided by the CPU flags {by_host} of this host, which another CPU kind lacks or has: it "
        "takes another branch there. Simulate each kind (monkeypatch.setenv(_cpu.ENV, _cpu.HOSTS[kind])), or "
        "list the test in tests/_cpu.py's CONDITIONAL_ON_THE_REAL_CPU with why"
    )


@pytest.fixture(scope="session")
def shared_reference(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedReference]:
    """The default reference build's engine, one per session for the engine tests that only talk to it."""
    shared = SharedReference(tmp_path_factory.mktemp("reference-engine"))
    try:
        yield shared
    finally:
        shared.close()
