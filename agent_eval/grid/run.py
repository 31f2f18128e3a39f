"""Running a grid end to end: prepare and serve its builds, play phase 1 and the top-ups, write the scorecard.

`run_grid` takes a spec; `run_from_path` a grid file (or task files). Re-running continues the run directory.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from rich.console import Console
from rich.markup import escape

from agent_eval.builds import Build, BuildSet, Serving, prepare
from agent_eval.builds.bandwidth import measure_once
from agent_eval.device.backend import EpisodeDevice
from agent_eval.errors import BuildError, ConfigError, InfraError, RunStoreError
from agent_eval.grid.plan import (
    Budget,
    CellKey,
    GridBuilds,
    cells_for,
    initial_targets,
    resolve_builds,
    resolve_tasks,
    seed_range,
    top_up,
)
from agent_eval.grid.probes import probe_follow_up, refuse_unprobeable
from agent_eval.grid.progress import GridProgress
from agent_eval.grid.schedule import Engines, phones
from agent_eval.grid.spec import GridSpec, is_task_id, load_grid, parse_grid, resolve_path
from agent_eval.records import BuildManifest, EpisodeRecord, Outcome
from agent_eval.report.thumbnails import episode_thumbnails
from agent_eval.rundir import GRID_COPY, RunStore
from agent_eval.runner.lines import unfinished_problems
from agent_eval.runner.loop import Cell, RunSummary, Seat, run_cells
from agent_eval.runner.new_run_manifest import new_manifest
from agent_eval.scoring.scorecard import Scorecard
from agent_eval.task import Task

if TYPE_CHECKING:
    from agent_eval.cluster import Cluster, ClusterEngines
    from agent_eval.fidelity.grid_hook import GridFidelity

PHONES_BUSY = 0.9  # share of a phase's wall the phones spend in episodes (measured: 0.89-0.95 on 4 phones)


@dataclass
class GridResult:
    """What a grid run did this session, and the scorecard of everything the run directory holds."""

    run_dir: Path
    reference: str
    phases: int = 0
    targets: dict[CellKey, int] = field(default_factory=dict)  # seeds per (build, task) at the end
    kept: int = 0  # finished in an earlier session
    outcomes: Counter[Outcome] = field(default_factory=Counter)  # episodes finished this session
    infra_attempts: int = 0  # failed attempts this session (retried; never scored)
    failed: list[EpisodeRecord] = field(default_factory=list)  # cells out of attempts
    not_run: list[Cell] = field(default_factory=list)
    retired_devices: list[str] = field(default_factory=list)
    skipped_builds: dict[str, str] = field(default_factory=dict)
    engine_errors: list[str] = field(default_factory=list)  # engines that would not start or restart
    notes: list[str] = field(default_factory=list)
    scorecard: Scorecard | None = None
    max_attempts: int = 3

    @property
    def planned(self) -> int:
        return sum(self.targets.values())

    def add(self, summary: RunSummary) -> None:
        """Count what a call of run_cells played (its unfinished cells are taken from the last call)."""
        self.outcomes.update(summary.outcomes)
        self.infra_attempts += summary.infra_attempts
        self.retired_devices += summary.retired_devices

    def unfinished(self, summary: RunSummary) -> None:
        self.failed += summary.failed
        self.not_run += summary.not_run
        if summary.gave_up:
            self.notes.append(summary.gave_up)

    @property
    def problems(self) -> list[str]:
        engines = [e.splitlines()[0] for e in self.engine_errors]
        return engines + unfinished_problems(
            self.failed, self.retired_devices, self.not_run, None, self.max_attempts
        )

    def raise_for_problems(self) -> None:
        if self.problems:
            raise InfraError(
                "; ".join(self.problems)
                + f". Fix the cause and rerun the same command to continue {self.run_dir}."
            )


def _manifests(spec_builds: GridBuilds, say: Any) -> list[BuildManifest]:
    """Each build's manifest, with its weights prepared (made if missing, checked if present) and hashed."""
    served = [b.name for b in spec_builds.builds if b.kind.starts_server]
    hashes = prepare(spec_builds.build_set, only=served, say=say) if served else {}
    out = []
    for build in spec_builds.builds:
        if not build.kind.starts_server:
            out.append(build.manifest())
        elif build.name in hashes:
            out.append(build.manifest(weights_hash=hashes[build.name]))
        else:
            raise BuildError(f"build {build.name!r} has no prepared weights; run `agent-eval builds prepare`")
    return out


def _config(spec: GridSpec, reference: str) -> dict[str, Any]:
    # Reference and margin sit at the top so `agent-eval report` reads them like any run's.
    return {
        "command": "grid",
        "grid": {**spec.measured(), "reference": reference},  # as resolved: default and named alike
        "reference": reference,
        "margin": spec.margin,
        "seeds": spec.seeds,
        "devices": spec.devices,
        "looks": len(spec.schedule),  # the verdicts' alpha is spent over these (scoring/sequential.py)
        "navigation_probes": spec.navigation_probes,
    }


def _refuse_fewer_seeds(store: RunStore, spec: GridSpec) -> None:
    if not store.manifest_path.exists():
        return
    before = store.read_manifest().config.get("seeds")
    if isinstance(before, int) and spec.seeds < before:
        raise ConfigError(
            f"{store.run_dir} already runs {before} seeds per cell; a grid may grow its seeds, not shrink "
            f"them (asked for {spec.seeds}). Use seeds: {before} or more, or another run_dir."
        )


def grid_fidelity(spec: GridSpec, builds: GridBuilds, run_dir: Path, say: Any) -> GridFidelity | None:
    """The fidelity probes of a grid with `fidelity: true` (docs/fidelity.md); None otherwise."""
    if not spec.fidelity:
        return None
    from agent_eval.fidelity.grid_hook import GridFidelity
    from agent_eval.fidelity.select import tokenizer_dir

    reference = builds.build_set.get(builds.reference)
    return GridFidelity(run_dir, reference, say, tokenizer_dir(reference, builds.build_set))


class _Grid:
    """One session of a grid: the store, the phones, the engines and the bars, phase by phase."""

    def __init__(
        self,
        spec: GridSpec,
        tasks: list[Task],
        builds: GridBuilds,
        store: RunStore,
        engines: Engines | ClusterEngines,
        progress: GridProgress,
        result: GridResult,
    ) -> None:
        self.spec, self.tasks, self.builds, self.store = spec, tasks, builds, store
        self.engines, self.progress, self.result = engines, progress, result
        self.devices: list[EpisodeDevice | Seat] = []
        self.fidelity = grid_fidelity(spec, builds, store.run_dir, progress.say)
        self.follow_up = probe_follow_up(spec.navigation_probes, builds.builds, builds.baselines)

    def show_plan(self, targets: dict[CellKey, int]) -> None:
        finished = self.store.finished()
        planned: Counter[str] = Counter()
        done: Counter[str] = Counter()
        for (build, task_id), count in targets.items():
            planned[build] += count
            done[build] += sum(1 for seed in range(count) if (build, task_id, seed) in finished)
        self.progress.plan(planned, done)

    def run(self, devices: Sequence[EpisodeDevice | Seat]) -> None:
        self.devices = list(devices)
        before = set(self.store.finished())
        try:
            self._phases()
            if self.fidelity is not None:
                self.fidelity.finish()
        finally:
            self.result.kept = sum(
                1
                for (b, t), n in self.result.targets.items()
                for s in seed_range(n, self.spec.first_seed)
                if (b, t, s) in before
            )

    def _phases(self) -> None:
        names = self.builds.names
        targets = initial_targets(self.tasks, names, self.spec.seeds)
        schedule = self.spec.schedule
        started = time.monotonic()
        while True:
            self.show_plan(targets)
            self.result.phases = self.progress.phase
            self.result.targets = dict(targets)
            side_by_side, first = self.spec.serving == "side-by-side", self.spec.first_seed
            self.play(cells_for(targets, self.tasks, names, side_by_side=side_by_side, first_seed=first))
            if len(schedule) < 2 or not self.devices:
                return
            step = top_up(
                targets,
                self.store.finished(),
                self.builds.reference,
                schedule,
                margin=self.spec.margin,
                baselines=self.builds.baselines,
                budget=self._budget(targets, time.monotonic() - started),
                first_seed=self.spec.first_seed,
            )
            for note in step.notes:
                if note not in self.result.notes:
                    self.result.notes.append(note)
            if not step.grown:
                return
            targets = step.targets
            self.progress.phase += 1
            grown = ", ".join(sorted({f"{b}→{targets[(b, t)]}" for b, t in step.grown}))
            self.progress.say(f"[bold]phase {self.progress.phase}[/]: top-up of undecided builds {grown}")

    def _budget(self, targets: dict[CellKey, int], elapsed_s: float) -> Budget:
        """What the next top-up may spend: the episodes the budget has left, and the minutes left, priced at
        each build's own pace (its episodes' mean wall over the phones, which are ~90% busy)."""
        adaptive = self.spec.adaptive
        episodes = None
        if adaptive.budget_episodes is not None:
            phase_one = len(targets) * self.spec.seeds
            episodes = max(adaptive.budget_episodes - (sum(targets.values()) - phase_one), 0)
        if adaptive.budget_minutes is None:
            return Budget(episodes=episodes)
        walls: dict[str, list[float]] = {}
        for (build, _, _), e in self.store.finished().items():
            walls.setdefault(build, []).append((e.finished_at - e.started_at).total_seconds())
        # An episode's navigation probe (when it gets one) is part of what growing its cell costs.
        probing: dict[str, float] = {}
        for (build, _, _), e in self.store.finished("probe").items():
            probing[build] = probing.get(build, 0.0) + (e.finished_at - e.started_at).total_seconds()
        phones = max(len(self.devices), 1)
        pace = {
            b: (sum(w) + probing.get(b, 0.0)) / len(w) / phones / PHONES_BUSY for b, w in walls.items() if w
        }
        return Budget(episodes, adaptive.budget_minutes * 60 - elapsed_s, pace)

    def _left_to_play(self, cells: Sequence[Cell]) -> set[str]:
        """The builds with a cell unfinished, or a finished episode whose navigation probe is left to play."""
        finished, probed = self.store.finished(), self.store.finished("probe")
        left = {c.build for c in cells if c.key not in finished}
        if self.follow_up is not None:
            for cell in cells:
                done = finished.get(cell.key)
                after = self.follow_up(cell, done) if done is not None else None
                if after is not None and after.key not in probed:
                    left.add(cell.build)
        return left

    def play(self, cells: Sequence[Cell]) -> None:
        """Run a phase's cells: the builds with something left to do, one engine at a time or all at once."""
        left = self._left_to_play(cells)
        pending = [b for b in self.builds.builds if b.name in left]
        groups = [pending] if self.spec.serving == "side-by-side" and pending else [[b] for b in pending]
        try:
            for index, group in enumerate(groups):
                if not self.devices:
                    return
                following = groups[index + 1] if index + 1 < len(groups) else []
                self._play_group(group, [c for c in cells if c.build in {b.name for b in group}], following)
        finally:
            if isinstance(self.engines, Engines):
                self.engines.drop_early()  # started for a block that will not run

    def _play_group(self, group: list[Build], mine: list[Cell], following: list[Build]) -> None:
        """One block: serve its engines, probe first (fidelity: first), play its cells, probe after."""
        phase_one = self.fidelity is not None and self.progress.phase == 1
        first = phase_one and self.spec.fidelity == "first"
        # Probes after the cells (the reference's, or every build's with `fidelity: true`) would share the
        # CPU with an engine started early: that block does not start the next one early.
        probes_after = phase_one and (not first or any(b.name == self.builds.reference for b in group))
        try:
            with self.engines.serving(group) as agents:
                if first and self.fidelity is not None:
                    others = [b for b in group if b.name != self.builds.reference]
                    with self.engines.teacher_forcing(others) as scoring:
                        self.fidelity.warn_early(others, scoring)
                tail = self._start_early(following) if following and not probes_after else None
                summary = self._run_cells(mine, agents, tail)
                if not summary.complete and self.devices and self._revived():
                    summary = self._run_cells(mine, self.engines.agents(), tail)
                if phase_one and self.fidelity is not None:
                    probed = [b for b in group if not first or b.name == self.builds.reference]
                    with self.engines.teacher_forcing(probed) as scoring:
                        self.fidelity.probe(probed, scoring)
                self.result.unfinished(summary)
        except BuildError as e:  # this build's engine would not start: the others still run
            self.result.engine_errors.append(str(e))
            self.result.not_run += [c for c in mine if c.key not in self.store.finished()]
            self.progress.say(f"[red]{escape(str(e))}")

    def _start_early(self, following: list[Build]) -> Callable[[], None] | None:
        """What the tail of a block's cells calls: start the next block's engines (`early_engine_start`)."""
        engines = self.engines
        if not isinstance(engines, Engines) or not engines.early:
            return None

        def start() -> None:
            for build in following:
                engines.start_early(build)

        return start

    def _revived(self) -> bool:
        try:
            return bool(self.engines.revive())
        except BuildError as e:
            self.result.engine_errors.append(str(e))
            self.progress.say(f"[red]{escape(str(e))}")
            return False

    def _finished(self, cell: Cell, record: EpisodeRecord) -> None:
        self.progress.episode(cell, record)
        if record.outcome is not Outcome.INFRA_ERROR and record.episode_dir:
            # Thumbnails now (ms per step, beside seconds of model time) keep writing the report fast.
            episode_thumbnails(self.store.run_dir, self.store.run_dir / record.episode_dir)

    def _run_cells(
        self, cells: Sequence[Cell], agents: Any, on_tail: Callable[[], None] | None = None
    ) -> RunSummary:
        summary = run_cells(
            cells,
            self.devices,
            agents,
            self.store,
            max_attempts=self.spec.max_attempts,
            on_episode=self._finished,
            on_tail=on_tail,
            engine_died=self.engines.died,
            follow_up=self.follow_up,
        )
        self.result.add(summary)
        self.devices = [d for d in self.devices if d.serial not in summary.retired_devices]
        if not self.devices:
            self.progress.say("[bold red]every device was lost; stopping the grid")
        return summary


def run_grid(
    spec: GridSpec,
    *,
    run_dir: Path | None = None,
    console: Console | None = None,
    bars: bool = True,
    devices: Sequence[EpisodeDevice] | None = None,
    score: bool = True,
    html: bool = True,
    builds: BuildSet | None = None,
) -> GridResult:
    """Run (or continue) a grid into `run_dir` and score it; see docs/grid.md.

    `devices` overrides the spec's phones (already connected devices); `bars=False` prints only lines;
    `builds` replaces the spec's builds file (`run --endpoint`'s one build). Raises ConfigError / BuildError
    / RunStoreError for what the user must fix before anything runs.
    """
    console = console or Console(highlight=False, soft_wrap=True)
    tasks = resolve_tasks(spec)
    grid_builds = resolve_builds(spec, builds)
    refuse_unprobeable(grid_builds.builds, spec.navigation_probes)
    for name, reason in grid_builds.skipped.items():
        console.print(f"[yellow]{name}: skipped, cannot run on this host: {reason}")
    if run_dir is None:
        run_dir = (
            resolve_path(spec.run_dir, spec.base)
            if spec.run_dir is not None
            else Path("runs") / f"{datetime.now(UTC):%Y%m%d-%H%M%S}-grid"
        )
    result = GridResult(
        run_dir=run_dir,
        reference=grid_builds.reference,
        skipped_builds=dict(grid_builds.skipped),
        max_attempts=spec.max_attempts,
    )
    # A cluster is joined and checked first: what it lacks is said before weights or the run dir are touched.
    with _joined(spec, grid_builds, console, devices is None) as cluster:
        manifests = _manifests(grid_builds, lambda line: console.print(f"[dim]{line}"))
        _session(spec, tasks, grid_builds, manifests, result, console, bars, devices, cluster)
    for note in result.notes:
        console.print(f"[dim]{note}")
    if result.kept:
        console.print(f"[dim]{result.kept} episode(s) kept from earlier sessions")
    if score:
        result.scorecard = score_and_publish(run_dir, grid_builds.reference, spec.margin, console, html=html)
    return result


def _session(
    spec: GridSpec,
    tasks: list[Task],
    builds: GridBuilds,
    manifests: list[BuildManifest],
    result: GridResult,
    console: Console,
    bars: bool,
    devices: Sequence[EpisodeDevice] | None,
    cluster: Cluster | None,
) -> None:
    """Open the run store, then play the phases on the given, started or cluster phones."""
    run_dir = result.run_dir
    store = RunStore(run_dir)
    _refuse_fewer_seeds(store, spec)
    store.open(new_manifest(run_dir.name, _config(spec, builds.reference), tasks, manifests))
    measure_once(run_dir)  # the streaming-read ceiling the ladder's bandwidth shares are of
    try:
        (run_dir / GRID_COPY).write_text(yaml.safe_dump(spec.model_dump(mode="json"), sort_keys=False))
        console.print(
            f"grid [bold]{run_dir}[/]: {len(tasks)} task(s) × {len(builds.builds)} build(s) "
            f"({', '.join(builds.names)}; reference {builds.reference}) × {spec.seeds} seed(s), "
            f"{spec.serving}, {spec.device_count} device(s)"
        )
        serving = Serving(
            slots=len(devices) if devices is not None else spec.device_count,  # a slot per phone
            # Its probes go to the engines the episodes use, which must score given answers; a kind that
            # does that on another server plays on its own and starts that one for the probes.
            teacher_forcing=spec.fidelity is not False,
        )
        engines = (
            cluster.engines(run_dir, manifests, console.print, serving)
            if cluster
            else Engines(
                run_dir,
                spec.engine_base_port,
                console.print,
                manifests=manifests,
                early=spec.early_engine_start,
                serving=serving,
            )
        )
        with GridProgress(console, builds.names, bars=bars) as progress:
            grid = _Grid(spec, tasks, builds, store, engines, progress, result)
            try:
                if devices is not None:
                    grid.run(list(devices))
                else:
                    with _phones(spec, cluster, progress.say) as started:
                        grid.run(started)
            finally:
                if isinstance(engines, Engines):
                    engines.close()  # the engines kept resident between phases
    finally:
        store.close()


@contextlib.contextmanager
def _joined(spec: GridSpec, builds: GridBuilds, console: Console, wanted: bool) -> Iterator[Cluster | None]:
    """The Ray cluster the spec names (None: this host), checked, and left on the way out (ClusterError)."""
    if spec.cluster is None or not wanted:
        yield None
        return
    from agent_eval.cluster import Cluster

    console.print(f"joining the Ray cluster at {spec.cluster}")
    cluster = Cluster(spec.cluster, builds.builds)
    try:
        yield cluster
    finally:
        cluster.close()


def _phones(spec: GridSpec, cluster: Cluster | None, say: Any) -> contextlib.AbstractContextManager[Any]:
    """The grid's phones: on this host, or actors on the cluster's phone nodes."""
    if cluster is None:
        return phones(spec, say)
    serials = spec.devices if isinstance(spec.devices, list) else None
    return cluster.phones(spec.device_count, serials, spec.phone_base_port, say)


def score_and_publish(
    run_dir: Path, reference: str, margin: float, console: Console, *, html: bool = True
) -> Scorecard | None:
    """Score the run directory, then print and save the scorecard (see report/publish.py)."""
    from agent_eval.report.publish import publish_scorecard
    from agent_eval.scoring.scorecard import score_run

    try:
        card = score_run(run_dir, reference=reference, margin=margin)
    except (RunStoreError, ConfigError) as e:
        console.print(f"[yellow]no scorecard yet: {e}")
        return None
    publish_scorecard(run_dir, card, console, html=html)
    return card


def is_grid_file(path: Path) -> bool:
    """A YAML file whose top level has `tasks` and no task `goal` is a grid file (else a task file)."""
    if not path.is_file() or path.suffix not in (".yaml", ".yml"):
        return False
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and "tasks" in data and "goal" not in data


def spec_from(paths: Sequence[Path], **overrides: Any) -> GridSpec:
    """A grid from a grid file, or from task files/folders (then every default of docs/grid.md applies).

    `overrides` set spec fields, as CLI flags would (adaptive=False turns the top-up off).
    """
    if len(paths) == 1 and is_grid_file(paths[0]):
        spec = load_grid(paths[0])
    else:
        if any(is_grid_file(p) for p in paths):
            raise ConfigError("give one grid file, or task files and folders, not both")
        spec = GridSpec(tasks=[str(Path(p).resolve()) for p in paths])
    given = {k: v for k, v in overrides.items() if v is not None}
    if not given:
        return spec
    # Paths on the command line are the user's, relative to where they are, not to the grid file.
    for key in ("builds_file", "run_dir"):
        if key in given:
            given[key] = str(Path(given[key]).expanduser().resolve())
    if "tasks" in given:
        given["tasks"] = [
            t if is_task_id(t) and not Path(t).exists() else str(Path(t).resolve()) for t in given["tasks"]
        ]
    data = spec.model_dump(mode="json")
    if isinstance(given.get("adaptive"), bool):
        data["adaptive"]["enabled"] = given.pop("adaptive")
    data.update(given)
    return parse_grid(data, "the command line").with_base(spec.base)


def run_from_path(path: Path | Sequence[Path], **overrides: Any) -> GridResult:
    """Run a grid file (or task files with the default grid) with CLI-style overrides; InfraError when
    episodes were left unfinished (after writing the scorecard of what finished)."""
    console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
    paths = [Path(path)] if isinstance(path, str | Path) else [Path(p) for p in path]
    run_dir = overrides.pop("run_dir", None)
    bars = overrides.pop("bars", sys.stdout.isatty())
    spec = spec_from(paths, **overrides)
    result = run_grid(spec, run_dir=Path(run_dir) if run_dir else None, console=console, bars=bars)
    result.raise_for_problems()
    return result
