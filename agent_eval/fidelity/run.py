"""A fidelity session: probe the recorded steps on each build (served here, or already served by a grid),
keep every probe in fidelity/probes/<build>.jsonl, and assemble fidelity.json from those files.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel

from agent_eval.agent.prompt import action_schema
from agent_eval.builds.engine_kinds import Serving
from agent_eval.builds.serving.launcher import serve
from agent_eval.builds.spec import Build
from agent_eval.chat.endpoint import Endpoint
from agent_eval.errors import RunStoreError
from agent_eval.fidelity.mask import SchemaMask
from agent_eval.fidelity.probe import BuildProber, Span, StepProbe
from agent_eval.fidelity.result import (
    BuildFidelity,
    DisagreementStep,
    EarlyWarning,
    FidelityResult,
    StepPlace,
    build_fidelity,
    judge,
    step_kls,
)
from agent_eval.fidelity.steps import SourceStep, StepsFrom, load_source_steps
from agent_eval.rundir import FIDELITY_FILE, fidelity_serving_dir, probes_dir

Say = Callable[[str], None]
# Engines started to score given answers: llama.cpp's builds then run on the server that can
# (builds/serving/built_in_engines.py).
TEACHER_FORCING = Serving(teacher_forcing=True)
MOST_DISAGREEING = 15


def probes_path(run_dir: Path, build: str) -> Path:
    return probes_dir(run_dir) / f"{build}.jsonl"


def probe_build(
    run_dir: Path,
    build: str,
    endpoint: Endpoint,
    steps: Sequence[SourceStep],
    spans: dict[tuple[str, int], Span],
    *,
    top_k: int = 20,
    decode: bool = True,
    mask: SchemaMask | None = None,
) -> tuple[list[StepProbe], float, dict[str, object]]:
    """Probe every step on one served build and write its probe file: (probes, steps per minute, settings)."""
    prober = BuildProber(build, endpoint, top_k=top_k, decode=decode, mask=mask)
    path = probes_path(run_dir, build)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        started = time.perf_counter()
        probes = prober.probe_all(steps, spans, out=path)
        elapsed = time.perf_counter() - started
        settings = prober.request_settings()
    finally:
        prober.close()
    return probes, (60.0 * len(probes) / elapsed if elapsed > 0 else 0.0), settings


def probed_builds(run_dir: Path) -> list[str]:
    """The builds with a probe file in the run, by name."""
    return sorted(p.stem for p in probes_dir(run_dir).glob("*.jsonl"))


def read_probes(run_dir: Path, build: str) -> list[StepProbe]:
    path = probes_path(run_dir, build)
    if not path.is_file():
        raise RunStoreError(f"{path} is missing: probe {build} first (agent-eval fidelity {run_dir})")
    return [
        StepProbe.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line
    ]


def _most_disagreeing(probes: dict[str, list[StepProbe]], reference: str) -> list[DisagreementStep]:
    kls = {b: step_kls(p, probes[reference]) for b, p in probes.items() if b != reference}
    agrees = {b: {(p.episode, p.step): p.agrees for p in ps} for b, ps in probes.items()}
    rows = []
    for p in probes[reference]:
        key = (p.episode, p.step)
        by_build = {b: k.get(key) for b, k in kls.items()}
        rows.append(
            DisagreementStep(
                **p.model_dump(include=set(StepPlace.model_fields)),
                source_answer="".join(p.tokens),
                kl=by_build,
                agrees={b: a.get(key) for b, a in agrees.items()},
            )
        )

    def weight(row: DisagreementStep) -> tuple[int, float]:
        return (
            sum(a is False for a in row.agrees.values()),
            max((v or 0.0 for v in row.kl.values()), default=0.0),
        )

    return sorted(rows, key=weight, reverse=True)[:MOST_DISAGREEING]


def assemble(
    run_dir: Path,
    reference: str,
    builds: Sequence[str],
    *,
    steps_from: StepsFrom,
    skipped: dict[str, int],
    requests: dict[str, object],
    speed: dict[str, float],
    early_warnings: Sequence[EarlyWarning] = (),
) -> FidelityResult:
    """fidelity.json from the probe files of `builds` (the reference among them); written and returned."""
    probes = {b: read_probes(run_dir, b) for b in builds}
    if reference not in probes:
        raise RunStoreError(f"fidelity needs the reference {reference!r} among the probed builds")
    results: list[BuildFidelity] = []
    for b in builds:
        result = build_fidelity(b, probes[b], probes[reference], b == reference)
        result.steps_per_min = speed.get(b)
        results.append(result)
    judge(results)
    ref = probes[reference]
    out = FidelityResult(
        run_id=run_dir.name,
        reference=reference,
        steps_from=steps_from.value,
        steps=len(ref),
        episodes=len({p.episode for p in ref}),
        skipped=skipped,
        requests=requests,
        builds=results,
        most_disagreeing=_most_disagreeing(probes, reference),
        notes=[
            "KL is a lower bound: tokens outside either build's top-k share one 'other' bucket.",
            "P(done) sums the top-k tokens that spell done, without the structured-output mask.",
        ],
        early_warnings=list(early_warnings),
    )
    write_fidelity(run_dir, out)
    return out


def write_json_record(run_dir: Path, name: str, record: BaseModel) -> Path:
    """`record` as run_dir/name, replaced in one step so a reader never sees half a file."""
    target = run_dir / name
    fd, temporary = tempfile.mkstemp(dir=run_dir, prefix=f".{target.stem}-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(record.model_dump(mode="json"), indent=2) + "\n")
    os.replace(temporary, target)
    return target


def write_fidelity(run_dir: Path, result: FidelityResult) -> Path:
    return write_json_record(run_dir, FIDELITY_FILE, result)


def schema_mask(build: Build, say: Say, tokenizer: Path | None = None) -> SchemaMask | None:
    """The action schema's mask with `build`'s tokenizer (`tokenizer`: its checkpoint directory, or for a
    GGUF file the one it was made from; default: the build's own directory); None (said why) when it cannot
    be replayed."""
    path = tokenizer or build.resolved_path()
    if path is None or not path.is_dir():
        say(f"no tokenizer directory for {build.name}: agreement counts plain top-1 ranks (fewer forced)")
        return None
    try:
        return SchemaMask(path, action_schema())
    except (ImportError, OSError, ValueError) as e:
        say(f"cannot replay the structured-output mask ({e}): agreement counts plain top-1 ranks")
        return None


def run_fidelity(
    run_dir: Path,
    builds: Sequence[Build],
    reference: str,
    *,
    steps_from: StepsFrom = StepsFrom.REFERENCE,
    top_k: int = 20,
    decode: bool = True,
    max_steps: int | None = None,
    tokenizer: Path | None = None,
    say: Say = print,
) -> FidelityResult:
    """Serve each build in turn (the reference first) and probe the recorded steps on it (`tokenizer`: the
    reference's tokenizer directory when its weights are one GGUF file)."""
    steps, skipped = load_source_steps(run_dir, steps_from, reference)
    if max_steps is not None and len(steps) > max_steps:
        # A fixed random subset spreads over every episode (the first N steps would favour early steps).
        skipped = {**skipped, f"left out by --max-steps {max_steps}": len(steps) - max_steps}
        steps = sorted(random.Random(0).sample(steps, max_steps), key=lambda s: (s.episode, s.step))
    episodes = len({s.episode for s in steps})
    say(f"{len(steps)} recorded steps from {episodes} episodes (--steps-from {steps_from.value})")
    for reason, n in skipped.items():
        say(f"skipped {n} step(s): {reason}")
    spans: dict[tuple[str, int], Span] = {}
    requests: dict[str, object] = {}
    speed: dict[str, float] = {}
    ordered = sorted(builds, key=lambda b: b.name != reference)
    mask = schema_mask(ordered[0], say, tokenizer)
    for build in ordered:
        say(f"serving {build.name} ...")
        with serve(build, fidelity_serving_dir(run_dir), serving=TEACHER_FORCING) as served:
            _, per_min, settings = probe_build(
                run_dir, build.name, served.endpoint, steps, spans, top_k=top_k, decode=decode, mask=mask
            )
            requests[build.name] = {**settings, "manifest": served.manifest.model_dump(mode="json")}
        speed[build.name] = per_min
        say(f"{build.name}: {len(steps)} steps probed, {per_min:.0f} steps/min")
    return assemble(
        run_dir,
        reference,
        [b.name for b in ordered],
        steps_from=steps_from,
        skipped=skipped,
        requests=requests,
        speed=speed,
    )
