"""`fidelity: true` in a grid: probe each build's engine right after its phase-1 episodes, while it is still
served (no extra engine start), then write fidelity.json when the grid ends. `fidelity: first`: probe each
build but the reference before its episodes instead, and say and record an early warning.

The reference's steps must be recorded before the other builds are probed; one engine at a time serves the
reference first, and side by side serves every build at once after all of phase 1, so both orders work.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agent_eval.builds.spec import Build
from agent_eval.chat.endpoint import Endpoint
from agent_eval.errors import AgentEvalError
from agent_eval.fidelity.early_warning import early_warning, read_warnings, record_warning, sentence
from agent_eval.fidelity.probe import Span, StepProbe
from agent_eval.fidelity.result import EarlyWarning
from agent_eval.fidelity.run import assemble, probe_build, probed_builds, read_probes, schema_mask
from agent_eval.fidelity.select import can_probe
from agent_eval.fidelity.steps import SourceStep, StepsFrom, load_source_steps
from agent_eval.rundir import FIDELITY_FILE
from agent_eval.scoring.fidelity_fields import read_fidelity_json


class GridFidelity:
    """The probes a grid runs on its served engines, and the fidelity.json it writes at its end."""

    def __init__(
        self, run_dir: Path, reference: Build, say: Callable[[str], None], tokenizer: Path | None = None
    ) -> None:
        self.run_dir, self.reference, self.say = run_dir, reference, say
        self.steps: list[SourceStep] | None = None
        self.skipped: dict[str, int] = {}
        self.spans: dict[tuple[str, int], Span] = {}
        self.requests: dict[str, object] = {}
        self.speed: dict[str, float] = {}
        self.probed: list[str] = []
        self.mask = schema_mask(reference, say, tokenizer)

    def _steps(self) -> list[SourceStep]:
        if self.steps is None:
            self.steps, self.skipped = load_source_steps(
                self.run_dir, StepsFrom.REFERENCE, self.reference.name
            )
        return self.steps

    def _probe_one(self, build: Build, endpoint: Endpoint) -> tuple[list[StepProbe], float]:
        """Probe one build on the reference's steps: (its probes, the wall seconds they took)."""
        steps = self._steps()
        self.say(f"fidelity: probing {build.name} on {len(steps)} recorded steps ...")
        started = time.monotonic()
        probes, per_min, settings = probe_build(
            self.run_dir, build.name, endpoint, steps, self.spans, mask=self.mask
        )
        self.requests[build.name] = settings
        self.speed[build.name] = per_min
        self.probed.append(build.name)
        self.say(f"fidelity: {build.name} done, {per_min:.0f} steps/min")
        return probes, time.monotonic() - started

    def probe(
        self, builds: Sequence[Build], endpoints: Mapping[str, Endpoint], *, reference_only: bool = False
    ) -> None:
        """Probe the served `builds` (or only the reference among them) on the reference's recorded steps;
        problems are said, never raised."""
        try:
            for build in sorted(builds, key=lambda b: b.name != self.reference.name):
                if reference_only and build.name != self.reference.name:
                    continue
                if can_probe(build) and build.name in endpoints:
                    self._probe_one(build, endpoints[build.name])
        except AgentEvalError as e:
            self.say(f"[yellow]fidelity: {e}")

    def warn_early(self, builds: Sequence[Build], endpoints: Mapping[str, Endpoint]) -> list[EarlyWarning]:
        """`fidelity: first`: probe each served build but the reference before its episodes, say whether
        the probes flag it and record that; the reference's own probes (after its episodes) come first."""
        warnings = []
        try:
            for build in builds:
                if build.name == self.reference.name or build.name not in endpoints:
                    continue
                if not can_probe(build):
                    self.say(f"fidelity: no early warning for {build.name} ({build.engine} is not probed)")
                    continue
                reference = read_probes(self.run_dir, self.reference.name)
                probes, took = self._probe_one(build, endpoints[build.name])
                warning = early_warning(build.name, probes, reference, took)
                record_warning(self.run_dir, warning)
                self.say(("[bold red]" if warning.flagged else "") + sentence(warning))
                warnings.append(warning)
        except AgentEvalError as e:
            self.say(f"[yellow]fidelity: no early warning: {e}")
        return warnings

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
        self._steps()
        assemble(
            self.run_dir,
            self.reference.name,
            sorted(on_disk, key=lambda b: b != self.reference.name),
            steps_from=StepsFrom.REFERENCE,
            skipped=self.skipped or earlier.get("skipped", {}),
            requests=requests,
            speed=speed,
            early_warnings=read_warnings(self.run_dir),
        )
        self.say(f"fidelity: wrote {self.run_dir / FIDELITY_FILE}")
