"""Which builds a fidelity session probes: the ones asked for that can answer prompt_logprobs here.

By default (no builds named) a build that cannot run here, cannot score given tokens, or has no prepared
weights is left out with the reason. A build named on the command line (and the reference) must have its
weights: one that has none is refused before any engine starts, not after the others were probed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from agent_eval.builds.serving.weights import missing_weights, read_prepared
from agent_eval.builds.spec import Build, BuildSet
from agent_eval.errors import ConfigError
from agent_eval.rundir.layout import MANIFEST_FILE
from agent_eval.rundir.run_manifest import read_manifest


def can_probe(build: Build) -> bool:
    """Whether the build's engine kind scores given tokens (its `teacher_forcing` capability)."""
    return build.kind.teacher_forcing


def probe_builds(
    builds: BuildSet, names: tuple[str, ...], reference: str, say: Callable[[str], None] = print
) -> list[Build]:
    """The builds to probe: those named (all by default) that can answer prompt_logprobs on this host."""
    from agent_eval.builds.serving.host import unavailable_reason

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


def check_against_run(run_dir: Path, builds: BuildSet, *, file_given: bool) -> dict[str, str | None]:
    """What the run played (run.json: build name → weights hash; empty without run.json). Without
    `--builds-file`, a build the run played that the default file lacks is refused: the run's own builds
    file is wanted, or the run's builds would go unprobed without a word."""
    if not (run_dir / MANIFEST_FILE).is_file():
        return {}
    played = {b.name: b.weights_hash for b in read_manifest(run_dir).builds}
    missing = sorted(set(played) - {b.name for b in builds.builds})
    if missing and not file_given:
        raise ConfigError(
            f"{run_dir} played {', '.join(missing)}, which the default builds file does not define; "
            "pass --builds-file with the builds file the run's grid named (grid.yaml in the run "
            "directory says builds_file)"
        )
    return played


def say_changed_weights(
    chosen: list[Build], played: dict[str, str | None], say: Callable[[str], None] = print
) -> None:
    """A probed build whose prepared weights are not the ones the run played is said: its probes measure
    the weights on disk, not the run's."""
    for build in chosen:
        was = played.get(build.name)
        if was is None or build.resolved_path() is None:
            continue
        prepared = read_prepared(build)
        if prepared is not None and prepared.weights_hash != was:
            say(
                f"note: {build.name}'s weights on disk ({prepared.weights_hash[:19]}) are not the ones "
                f"the run played ({was[:19]}); its probes measure the weights on disk"
            )


def tokenizer_dir(build: Build, builds: BuildSet) -> Path | None:
    """The checkpoint directory whose tokenizer `build` carries: its own, or for a build made by a recipe
    (a GGUF file converted or quantized from another build) the first directory up its `prepare.source`
    chain; None when the chain has none."""
    seen: set[str] = set()
    current: Build | None = build
    while current is not None and current.name not in seen:
        seen.add(current.name)
        path = current.resolved_path()
        if path is not None and path.is_dir():
            return path
        source = current.prepare.source if current.prepare else None
        current = builds.get(source) if source is not None else None
    return None
