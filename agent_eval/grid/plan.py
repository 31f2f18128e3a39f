"""Planning a grid: the tasks and builds a spec names, the paired cells of each phase, and their order.

Every build runs the same (task, seed) pairs; a top-up grows the cells of undecided builds.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from agent_eval.builds import Build, BuildSet, load_builds, unavailable_reason
from agent_eval.builds.spec import repo_root
from agent_eval.errors import ConfigError, TaskError
from agent_eval.grid.spec import GridSpec, is_task_id, resolve_path
from agent_eval.records import EpisodeRecord
from agent_eval.runner.loop import Cell
from agent_eval.scoring.regression import compare_builds
from agent_eval.scoring.regression import undecided as undecided_builds
from agent_eval.scoring.stats import DEFAULT_MARGIN
from agent_eval.task import Task, load_tasks

CellKey = tuple[str, str]  # (build, task_id)
Finished = Mapping[tuple[str, str, int], EpisodeRecord]  # (build, task_id, seed) → its scored episode


@dataclass(frozen=True)
class GridBuilds:
    """The builds a grid runs (reference first), and those it skips on this host with the reason."""

    builds: tuple[Build, ...]
    reference: str
    build_set: BuildSet
    skipped: Mapping[str, str] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [b.name for b in self.builds]

    @property
    def baselines(self) -> frozenset[str]:
        """Builds that are no quantization level (role: baseline): played once, never topped up."""
        return frozenset(b.name for b in self.builds if b.role == "baseline")


def resolve_tasks(spec: GridSpec) -> list[Task]:
    """The spec's tasks in its order: files and folders, or bare ids looked up in the repo's tasks/ folder."""
    tasks: list[Task] = []
    known: dict[str, Task] | None = None
    for entry in spec.tasks:
        path = resolve_path(entry, spec.base)
        if path.exists() or not is_task_id(entry):
            tasks += load_tasks(path)
            continue
        if known is None:
            known = {t.id: t for t in load_tasks(repo_root() / "tasks")}
        if entry not in known:
            raise TaskError(
                f"no task file {path} and no task with id {entry!r} in {repo_root() / 'tasks'}; "
                f"known ids: {', '.join(sorted(known))}"
            )
        tasks.append(known[entry])
    unique: dict[str, Task] = {}
    for task in tasks:
        if task.id not in unique:
            unique[task.id] = (
                task if spec.max_steps is None else task.model_copy(update={"max_steps": spec.max_steps})
            )
    return list(unique.values())


def resolve_builds(spec: GridSpec, given: BuildSet | None = None) -> GridBuilds:
    """The spec's builds: the chosen subset of its builds file (or of `given`, a set made by the caller),
    less optional builds this host cannot run."""
    file = resolve_path(spec.builds_file, spec.base) if spec.builds_file is not None else None
    build_set = given or load_builds(file)
    chosen = [build_set.get(name) for name in spec.builds] if spec.builds is not None else build_set.builds
    reference = spec.reference or build_set.reference.name
    if reference not in [b.name for b in chosen]:
        raise ConfigError(
            f"reference build {reference!r} is not among the grid's builds {[b.name for b in chosen]}; "
            "add it to `builds` or pick another `reference`"
        )
    skipped: dict[str, str] = {}
    runnable: list[Build] = []
    for build in chosen:
        reason = unavailable_reason(build)
        if reason is None:
            runnable.append(build)
        elif build.optional and build.name != reference:
            skipped[build.name] = reason
        else:
            raise ConfigError(f"build {build.name!r} cannot run on this host: {reason}")
    runnable.sort(key=lambda b: b.name != reference)  # the reference first, then the file's order
    return GridBuilds(builds=tuple(runnable), reference=reference, build_set=build_set, skipped=skipped)


def seed_range(count: int, first_seed: int = 0) -> range:
    """The seeds a cell of `count` seeds plays: `count` of them from the grid's first seed on."""
    return range(first_seed, first_seed + count)


def initial_targets(tasks: Sequence[Task], builds: Sequence[str], seeds: int) -> dict[CellKey, int]:
    """Phase 1: every (build, task) cell gets `seeds` seeds (from the grid's first_seed on)."""
    return {(b, t.id): seeds for b in builds for t in tasks}


def cells_for(
    targets: Mapping[CellKey, int],
    tasks: Sequence[Task],
    builds: Sequence[str],
    *,
    side_by_side: bool,
    first_seed: int = 0,
) -> list[Cell]:
    """Every cell the targets ask for, in the order they should run (the store skips finished ones).

    Side by side, builds are interleaved within each (task, seed), in an order that rotates with the seed,
    so slow drift (a warming engine, a filling disk) falls on every build alike and no build is always
    first. One build at a time, each build's cells are grouped (one engine start per build and phase) and
    run seed by seed over all tasks, so a grid cut short still has every task at the same seed count.
    """
    task_index = {t.id: i for i, t in enumerate(tasks)}
    by_id = {t.id: t for t in tasks}
    order: list[tuple[tuple[int, ...], Cell]] = []
    for (build, task_id), count in targets.items():
        b = builds.index(build)
        for seed in range(count):
            rotated = (b - seed) % len(builds)
            key = (seed, task_index[task_id], rotated) if side_by_side else (b, seed, task_index[task_id])
            order.append((key, Cell(build, by_id[task_id], first_seed + seed)))
    order.sort(key=lambda item: item[0])
    return [cell for _, cell in order]


@dataclass(frozen=True)
class TopUp:
    """The next phase's targets, and why cells that could have grown did not."""

    targets: dict[CellKey, int]
    grown: list[CellKey]
    notes: list[str]
    undecided: list[str] = field(default_factory=list)  # builds with a verdict still INCONCLUSIVE


def _scored(targets: Mapping[CellKey, int], finished: Finished, first_seed: int) -> list[EpisodeRecord]:
    return [
        finished[key]
        for (build, task_id), count in targets.items()
        for seed in seed_range(count, first_seed)
        if (key := (build, task_id, seed)) in finished
    ]


def _unfinished(
    targets: Mapping[CellKey, int], finished: Finished, build: str, reference: str, first_seed: int
) -> list[str]:
    """Notes on the build's cells whose pairs are not all finished (infra errors on every attempt)."""
    notes = []
    for (b, task_id), count in sorted(targets.items()):
        if b != build:
            continue
        paired = sum(
            1
            for seed in seed_range(count, first_seed)
            if (reference, task_id, seed) in finished and (build, task_id, seed) in finished
        )
        if paired < count:
            notes.append(f"{build} on {task_id}: {count - paired} of {count} pairs unfinished, not topped up")
    return notes


def _growth(targets: Mapping[CellKey, int], build: str, reference: str, level: int) -> dict[CellKey, int]:
    """The cells that change when every cell of `build` (and its reference cell) grows to `level`."""
    out: dict[CellKey, int] = {}
    for (b, task_id), count in targets.items():
        if b == build and count < level:
            out[(build, task_id)] = level
            if targets[(reference, task_id)] < level:
                out[(reference, task_id)] = level
    return out


@dataclass(frozen=True)
class Budget:
    """What the top-up may still spend: episodes, and wall seconds at each build's pace (None: no limit)."""

    episodes: int | None = None
    seconds: float | None = None
    per_episode_s: Mapping[str, float] = field(default_factory=dict)  # a build's grid seconds per episode

    def cost_s(self, change: Mapping[CellKey, int], before: Mapping[CellKey, int]) -> float:
        known = list(self.per_episode_s.values())
        fallback = max(known) if known else 0.0  # a build with no episodes yet: the slowest pace seen
        return sum((n - before[key]) * self.per_episode_s.get(key[0], fallback) for key, n in change.items())

    def refuses(self, episodes: int, seconds: float) -> str | None:
        """Why spending this would pass the budget, or None."""
        if self.episodes is not None and episodes > self.episodes:
            return f"it needs {episodes} episodes and the budget allows {self.episodes} more"
        if self.seconds is not None and seconds > self.seconds:
            left = max(self.seconds, 0) / 60
            return f"it needs ~{seconds / 60:.1f} min and the budget has {left:.1f} min left"
        return None

    def spent(self, episodes: int, seconds: float) -> Budget:
        return Budget(
            None if self.episodes is None else self.episodes - episodes,
            None if self.seconds is None else self.seconds - seconds,
            self.per_episode_s,
        )


def top_up(
    targets: Mapping[CellKey, int],
    finished: Finished,
    reference: str,
    schedule: Sequence[int],
    *,
    margin: float = DEFAULT_MARGIN,
    baselines: Collection[str] = (),
    budget: Budget | None = None,
    first_seed: int = 0,
) -> TopUp:
    """Grow every cell of each build whose verdict is still INCONCLUSIVE to the schedule's next level.

    The verdicts are the scorecard's, judged at alpha / len(schedule) (sequential.look_alpha): growing a
    build because it is undecided, in either direction, is a sequential design, and spending alpha over
    the planned looks keeps REGRESSION and NON-INFERIOR at their error rates. The reference's cell on each
    task grows with the build so the new seeds are paired. Baselines (builds that are not quantization
    levels) never grow; neither does a build with unfinished pairs, nor one past the cap or the `budget`
    (episodes and seconds the top-up may still spend), each said in the notes.
    """
    new = dict(targets)
    grown: list[CellKey] = []
    notes: list[str] = []
    regression = compare_builds(
        _scored(targets, finished, first_seed), reference, margin, looks=max(len(schedule), 1)
    )
    undecided = [
        build for build in undecided_builds(regression, baselines) if any(b == build for b, _ in targets)
    ]
    left = budget or Budget()
    for build in undecided:
        blocked = _unfinished(targets, finished, build, reference, first_seed)
        if blocked:
            notes += blocked
            continue
        count = max(n for (b, _), n in targets.items() if b == build)
        level = next((step for step in sorted(schedule) if step > count), None)
        if level is None:
            notes.append(f"{build}: still undecided at the cap of {count} seeds per task")
            continue
        change = _growth(new, build, reference, level)
        cost = sum(n - new[key] for key, n in change.items())
        seconds = left.cost_s(change, new)
        why = left.refuses(cost, seconds)
        if why is not None:
            notes.append(f"{build}: not topped up to {level} seeds, {why}")
            continue
        left = left.spent(cost, seconds)
        new.update(change)
        grown += sorted(key for key in change if key[0] == build)
    return TopUp(targets=new, grown=grown, notes=notes, undecided=undecided)
