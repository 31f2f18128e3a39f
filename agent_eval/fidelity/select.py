"""Which builds a fidelity session probes: the ones asked for that can answer prompt_logprobs here.

By default (no builds named) a build that cannot run here, cannot score given tokens, or has no prepared
weights is left out with the reason. A build named on the command line (and the reference) must have its
weights: one that has none is refused before any engine starts, not after the others were probed."""

from __future__ import annotations

from collections.abc import Callable

from agent_eval.builds.prepare import missing_weights
from agent_eval.builds.spec import Build, BuildSet


def can_probe(build: Build) -> bool:
    """Whether the build's engine kind scores given tokens (its `teacher_forcing` capability)."""
    return build.kind.teacher_forcing


def probe_builds(
    builds: BuildSet, names: tuple[str, ...], reference: str, say: Callable[[str], None] = print
) -> list[Build]:
    """The builds to probe: those named (all by default) that can answer prompt_logprobs on this host."""
    from agent_eval.builds.host import unavailable_reason

    chosen = [builds.get(n) for n in names] if names else list(builds.builds)
    if reference not in {b.name for b in chosen}:
        chosen.insert(0, builds.get(reference))
    kept = []
    for build in chosen:
        why = unavailable_reason(build) if build.optional else None
        if not can_probe(build):
            why = f"engine {build.engine} cannot return prompt_logprobs"
        if why is not None and not names:
            say(f"skipping {build.name}: {why}")
            continue
        missing = missing_weights(build)
        if missing is not None:
            if names or build.name == reference:
                raise missing
            say(f"skipping {build.name}: not prepared (no weights at {build.resolved_path()})")
            continue
        kept.append(build)
    return kept
