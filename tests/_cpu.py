"""Simulated CPU kinds for the host-independent part of CPU-dependent tests, and the tests whose outcome
still depends on the real CPU (each with why), checked by tests/test_cpu_conditional.py.

A simulated flag set changes what the harness decides (which builds run, what it says); kernels still run on
the real CPU, so only a test that starts no engine on a simulated build can trust it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from agent_eval.builds.serving.host import SIMULATED_CPU_FLAGS

_X86_64 = "fpu sse sse2 ssse3 sse4_1 sse4_2 popcnt avx f16c fma bmi1 bmi2"
AVX2_ONLY = f"{_X86_64} avx2"
AVX512 = f"{AVX2_ONLY} avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni avx512_bf16"
AVX512_AMX = f"{AVX512} amx_bf16 amx_tile amx_int8"

HOSTS = {"avx2-only": AVX2_ONLY, "avx512": AVX512, "avx512-amx": AVX512_AMX}
"""The CPU kinds this project meets: a test of a decision runs once per kind."""

ENV = SIMULATED_CPU_FLAGS

CONDITIONAL_ON_THE_REAL_CPU = {
    "builds/test_builds_engine_lifecycle.py::"
    "test_int4_weights_on_a_cpu_without_avx512_fail_at_the_first_token": (
        "needs a CPU without AVX-512: it shows vLLM's missing int4 kernel failing the first token, which an "
        "AVX-512 CPU has"
    ),
    "builds/test_builds_engine.py": (
        "serves one default vLLM build per weight scheme this CPU can run: w4a16 needs AVX-512 and w4a8 AMX, "
        "so the set of served builds differs by CPU kind (bf16 and w8a8 run everywhere)"
    ),
    "test_main_job_e2e.py": "plays every default build this CPU can run (as test_builds_engine.py)",
    "builds/test_builds_ladder.py::served_rung": (
        "serves the GPTQ int4 rung in its own int4 format where vLLM's int4 kernel exists (AVX-512); "
        "elsewhere its rounded bf16 twin is prepared and checked without an engine, as each calibrated rung"
    ),
    "builds/test_builds_ladder.py::test_each_calibrated_recipe_kind_records_its_rung": (
        "prepares the GPTQ int4 rung in its own int4 format where vLLM's int4 kernel exists (AVX-512), "
        "else its rounded bf16 twin, as served_rung serves it"
    ),
    "builds/test_builds_spec.py::test_the_real_cpu_decides_the_default_builds": (
        "checks that without a simulated flag set the decisions follow this CPU's /proc/cpuinfo flags"
    ),
}
"""Test (its path below tests/, or path::name) → why its real-kernel part depends on the CPU kind. Everything
else in these tests (parsing, planning, skip decisions, messages) runs on both kinds through HOSTS."""


def conditional_on_the_real_cpu(nodeid: str, fixtures: list[str]) -> bool:
    """Whether the test with this pytest node id (tests/<path>::<name>[<params>]), using these fixtures, is
    listed above: by its file, by its name, or by a listed fixture of its file that it uses."""
    below_tests = nodeid.split("[", 1)[0].split("tests/", 1)[-1]
    test_file = below_tests.split("::", 1)[0]
    named = {below_tests, test_file, *(f"{test_file}::{fixture}" for fixture in fixtures)}
    return bool(named & CONDITIONAL_ON_THE_REAL_CPU.keys())


DIFFERING_FLAGS = frozenset(set.union(*(set(f.split()) for f in HOSTS.values()))) - frozenset(
    set.intersection(*(set(f.split()) for f in HOSTS.values()))
)
"""The flags one kind has and another lacks: a decision on one of them depends on the host."""


class WatchedFlags(frozenset[str]):
    """A flag set that notes each flag asked about (`flag in flags`), in `asked`."""

    asked: list[str]

    def __new__(cls, flags: frozenset[str], asked: list[str]) -> WatchedFlags:
        made = super().__new__(cls, flags)
        made.asked = asked
        return made

    def __contains__(self, flag: object) -> bool:
        self.asked.append(str(flag))
        return super().__contains__(flag)


_reads_by_design = 0  # how many reads_by_design() blocks are open


@contextmanager
def reads_by_design() -> Iterator[None]:
    """Flag reads inside are not the calling test's decision: preparing the builds this host can serve, for
    the engine tests, reads this CPU's flags on purpose, once per test process, in whichever test asks
    first."""
    global _reads_by_design
    _reads_by_design += 1
    try:
        yield
    finally:
        _reads_by_design -= 1


def reading_by_design() -> bool:
    return _reads_by_design > 0
