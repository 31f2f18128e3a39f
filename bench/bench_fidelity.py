"""Teacher-forced fidelity throughput per build, and the reference-against-itself check (eager and compiled).

Usage: .venv/bin/python bench/bench_fidelity.py RUN_DIR [--builds bf16,w8a8,w4a16] [--steps 200] [--workers 4]
                                                 [--self-check N] [--compiled]
Serves each build in turn (one engine at a time, pinned as the builds file says) and probes the run's recorded
reference steps: steps per minute (one prefill with prompt_logprobs per step, decodes where needed; the
tokenization is done once beforehand and not timed; identical requests are asked once, see `asked`).
--self-check N: the reference decodes N steps greedily (temperature 0, no seed), then those answers are
forced on it again (agreement must be 1.0), and the recorded steps are probed twice (KL between the passes
must be 0). --compiled: the same greedy answers forced on the reference served compiled (enforce_eager
false). Writes JSON to RUN_DIR/bench-fidelity-<time>.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent_eval.agent.prompt import action_schema
from agent_eval.builds import load_builds, serve
from agent_eval.builds.spec import Build
from agent_eval.chat.client import ChatClient
from agent_eval.chat.endpoint import Endpoint
from agent_eval.fidelity.mask import SchemaMask
from agent_eval.fidelity.probe import BuildProber, Span, StepProbe
from agent_eval.fidelity.result import step_kls
from agent_eval.fidelity.run import TEACHER_FORCING, schema_mask
from agent_eval.fidelity.steps import SourceStep, load_source_steps


def _timed_probe(
    name: str,
    endpoint: Endpoint,
    steps: list[SourceStep],
    spans: dict[tuple[str, int], Span],
    args: Any,
    mask: Any,
) -> tuple[list[StepProbe], float]:
    prober = BuildProber(name, endpoint, workers=args.workers, mask=mask)
    try:
        prober.probe_all(steps[: args.workers], spans)  # warm-up, not timed
        started = time.perf_counter()
        probes = prober.probe_all(steps, spans)
        return probes, 60.0 * len(probes) / (time.perf_counter() - started)
    finally:
        prober.close()


def _greedy_steps(endpoint: Endpoint, steps: list[SourceStep], n: int) -> list[SourceStep]:
    """The first n steps with the answers the build itself gives at temperature 0 (no seed)."""
    greedy = dataclasses.replace(endpoint, temperature=0.0, top_p=1.0)
    out = []
    with ChatClient(greedy, stream=False) as chat:
        for step in steps[:n]:
            text = chat.chat(step.messages, json_schema=action_schema()).text
            out.append(dataclasses.replace(step, answer=text))
    return out


def _agreement_and_kl(first: list[StepProbe], second: list[StepProbe]) -> dict[str, Any]:
    kls = list(step_kls(second, first).values())
    diffs = [
        abs(a - b)
        for p, q in zip(first, second, strict=True)
        for a, b in zip(p.logprobs, q.logprobs, strict=False)
    ]
    return {
        "steps": len(second),
        "agreement": sum(bool(p.agrees) for p in second) / max(len(second), 1),
        "forced_all_top1_masked": sum(all(r == 1 for r in (p.masked_ranks or [0])) for p in second),
        "forced_all_top1_plain": sum(all(r == 1 for r in p.ranks) for p in second),
        "kl_mean": sum(kls) / len(kls) if kls else None,
        "kl_max": max(kls, default=None),
        "max_abs_logprob_diff": max(diffs, default=None),
    }


def _self_check(
    reference: Build, endpoint: Endpoint, steps: list[SourceStep], args: Any, mask: SchemaMask | None
) -> tuple[dict[str, Any], list[SourceStep], list[StepProbe]]:
    spans: dict[tuple[str, int], Span] = {}
    greedy = _greedy_steps(endpoint, steps, args.self_check)
    prober = BuildProber(reference.name, endpoint, workers=args.workers, mask=mask, decode=False)
    try:
        forced = prober.probe_all(greedy, spans)
        again = prober.probe_all(greedy, spans)
    finally:
        prober.close()
    return {"greedy_forced_on_itself": _agreement_and_kl(forced, again)}, greedy, forced


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--builds", default="bf16,w8a8,w4a16")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--self-check", type=int, default=0)
    parser.add_argument("--compiled", action="store_true")
    args = parser.parse_args()
    builds = load_builds()
    steps, _ = load_source_steps(args.run_dir)
    steps = steps[: args.steps]
    mask = schema_mask(builds.reference, print)
    spans: dict[tuple[str, int], Span] = {}
    report: dict[str, Any] = {
        "steps": len(steps),
        "workers": args.workers,
        "load": os.getloadavg(),
        "builds": {},
    }
    bench_dir = args.run_dir / "bench-fidelity"
    greedy: list[SourceStep] = []
    eager_forced: list[StepProbe] = []
    for name in args.builds.split(","):
        build = builds.get(name)
        with serve(build, bench_dir, serving=TEACHER_FORCING) as served:
            if not spans:
                started = time.perf_counter()
                prober = BuildProber(name, served.endpoint, workers=args.workers)
                for step in steps:
                    prober._span(step, spans)
                prober.close()
                report["tokenize_s_per_step"] = (time.perf_counter() - started) / len(steps)
            probes, per_min = _timed_probe(name, served.endpoint, steps, spans, args, mask)
            entry: dict[str, Any] = {"steps_per_min": per_min, "load_after": os.getloadavg()}
            entry["decoded"] = sum(p.via == "decoded" for p in probes)
            entry["asked"] = sum(not p.reused for p in probes)  # distinct requests; the rest are identical
            entry["asked_per_min"] = per_min * entry["asked"] / max(len(probes), 1)
            if build.reference and args.self_check:
                check, greedy, eager_forced = _self_check(build, served.endpoint, steps, args, mask)
                again, _ = _timed_probe(name, served.endpoint, steps, spans, args, mask)
                check["recorded_steps_probed_twice"] = _agreement_and_kl(probes, again)
                entry.update(check)
            report["builds"][name] = entry
            print(name, json.dumps(entry, indent=1), flush=True)
    if args.compiled and greedy:
        compiled = builds.reference.model_copy(
            update={
                "name": builds.reference.name + "-compiled",
                "engine_args": builds.reference.engine_args.model_copy(update={"enforce_eager": False}),
            }
        )
        with serve(compiled, bench_dir, serving=TEACHER_FORCING) as served:
            prober = BuildProber(
                compiled.name, served.endpoint, workers=args.workers, mask=mask, decode=False
            )
            try:
                forced = prober.probe_all(greedy, {})
            finally:
                prober.close()
        report["compiled_vs_eager"] = _agreement_and_kl(eager_forced, forced)
        print("compiled", json.dumps(report["compiled_vs_eager"], indent=1), flush=True)
    out = args.run_dir / f"bench-fidelity-{datetime.now(UTC):%Y%m%d-%H%M%S}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
