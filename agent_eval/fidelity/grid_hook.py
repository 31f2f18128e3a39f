"""`fidelity: true` in a grid: probe each build's engine right after its phase-1 episodes, while it is still
served (no extra engine start), then write fidelity.json when the grid ends.

The reference's steps must be recorded before the other builds are probed; one engine at a time serves the
reference first, and side by side serves every build at once after all of phase 1, so both orders work.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agent_eval.builds.endpoint import Endpoint
from agent_eval.builds.spec import Build
from agent_eval.errors import AgentEvalError
from agent_eval.fidelity.probe import Span
from agent_eval.fidelity.run import assemble, probe_build, probed_builds, schema_mask
from agent_eval.fidelity.select import can_probe
from agent_eval.fidelity.steps import SourceStep, StepsFrom, load_source_steps
from agent_eval.rundir import FIDELITY_FILE
from agent_eval.scoring.fidelity_fields import read_fidelity_json


class GridFidelity:
    def __init__(self, run_dir: Path, reference: Build, say: Callable[[str], None]) -> None:
        self.run_dir, self.reference, self.say = run_dir, reference, say
        self.steps: list[SourceStep] | None = None
        self.skipped: dict[str, int] = {}
        self.spans: dict[tuple[str, int], Span] = {}
        self.requests: dict[str, object] = {}
        self.speed: dict[str, float] = {}
        self.probed: list[str] = []
        self.mask = schema_mask(reference, say)

    def probe(self, builds: Sequence[Build], endpoints: Mapping[str, Endpoint]) -> None:
        """Probe the served `builds` on the reference's recorded steps; problems are said, never raised."""
        try:
            if self.steps is None:
                self.steps, self.skipped = load_source_steps(
                    self.run_dir, StepsFrom.REFERENCE, self.reference.name
                )
            for build in sorted(builds, key=lambda b: b.name != self.reference.name):
                if not can_probe(build) or build.name not in endpoints:
                    continue
                self.say(f"fidelity: probing {build.name} on {len(self.steps)} recorded steps ...")
                _, per_min, settings = probe_build(
                    self.run_dir,
                    build.name,
                    endpoints[build.name],
                    self.steps,
                    self.spans,
                    mask=self.mask,
                )
                self.requests[build.name] = settings
                self.speed[build.name] = per_min
                self.probed.append(build.name)
                self.say(f"fidelity: {build.name} done, {per_min:.0f} steps/min")
        except AgentEvalError as e:
            self.say(f"[yellow]fidelity: {e}")

    def finish(self) -> None:
        """fidelity.json from every build's probe file on disk: a continued grid probes only the builds whose
        phase 1 it ran, so the others' probes (and their recorded speeds) come from the earlier session."""
        on_disk = probed_builds(self.run_dir)
        if self.reference.name not in on_disk:
            self.say("[yellow]fidelity: the reference has no probes; run agent-eval fidelity")
            return
        earlier = read_fidelity_json(self.run_dir) or {}
        requests = {**earlier.get("requests", {}), **self.requests}
        speed = {
            **{b["build"]: b["steps_per_min"] for b in earlier.get("builds", []) if b.get("steps_per_min")},
            **self.speed,
        }
        if self.steps is None:
            self.steps, self.skipped = load_source_steps(
                self.run_dir, StepsFrom.REFERENCE, self.reference.name
            )
        assemble(
            self.run_dir,
            self.reference.name,
            sorted(on_disk, key=lambda b: b != self.reference.name),
            steps_from=StepsFrom.REFERENCE,
            skipped=self.skipped or earlier.get("skipped", {}),
            requests=requests,
            speed=speed,
        )
        self.say(f"fidelity: wrote {self.run_dir / FIDELITY_FILE}")
