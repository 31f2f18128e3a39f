"""Shared by the engine tests: the default builds, prepared once per session (idempotent, content-hashed).

Preparing writes into the repo's models/ dir (or $AGENT_EVAL_MODELS), so later sessions skip the work.
"""

from __future__ import annotations

from contextlib import ExitStack
from functools import cache
from pathlib import Path

import psutil
from _cpu import reads_by_design

from agent_eval.builds import BuildSet, ServedBuild, load_builds, prepare, serve, unavailable_reason


@cache
def prepared_default_builds() -> tuple[BuildSet, dict[str, str]]:
    """The default build set and {build: weights_hash} of the builds prepared for this host."""
    builds = load_builds()
    with reads_by_design():  # skips what this CPU cannot serve; cached, so whichever test comes first reads
        ready = prepare(builds, say=lambda line: print(f"[prepare] {line}", flush=True))
    return builds, ready


def servable_default_builds() -> list[str]:
    """Every default build this host can serve, vLLM's and llama.cpp's (the optional ones only where they
    run): what `agent-eval run` plays when no build is named."""
    return [b.name for b in load_builds().builds if unavailable_reason(b) is None]


def servable_vllm_schemes() -> list[str]:
    """One servable default vLLM build per weight scheme (the first in the file: the reference for bf16). A
    second build of a scheme (`bf16-base`, the untuned baseline) loads and serves the same way; the main-job
    test serves it where the CPU has AVX-512 (elsewhere it is skipped) and checks its prepared weights."""
    first: dict[str, str] = {}
    for b in load_builds().builds:
        if b.engine == "vllm-cpu" and unavailable_reason(b) is None:
            first.setdefault(b.scheme, b.name)
    return list(first.values())


def guards_of(harness: int) -> list[int]:
    """Engine guards running for that harness process (`_guard.py HARNESS_PID -- ...`)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        line = proc.info["cmdline"] or []
        if any(part.endswith("_guard.py") for part in line) and str(harness) in line:
            found.append(int(proc.info["pid"]))
    return found


class SharedReference:
    """The default reference build's server, started on first use and shared by the tests that only talk to
    it (a vLLM start costs ~40 s on an AVX2 host). A test may kill it: the next user gets a fresh server."""

    def __init__(self, run_dir: Path) -> None:
        self._run_dir = run_dir
        self._stack = ExitStack()
        self._served: ServedBuild | None = None
        self._starts = 0

    def get(self) -> ServedBuild:
        if self._served is None or not self._served.alive():
            self._stack.close()
            self._starts += 1
            builds, _ = prepared_default_builds()
            run_dir = self._run_dir / f"start-{self._starts}"
            self._served = self._stack.enter_context(serve(builds.reference, run_dir))
        return self._served

    def close(self) -> None:
        self._stack.close()
