"""Planning a grid: the tasks and builds a spec names, the paired cells of each phase, and their order.

Every build runs the same (task, seed) pairs; the adaptive top-up grows a discordant cell and its reference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agent_eval.builds import Build, BuildSet, load_builds, unavailable_reason
from agent_eval.builds.spec import repo_root
from agent_eval.errors import ConfigError, TaskError
from agent_eval.grid.spec import GridSpec, is_task_id, resolve_path
from agent_eval.records import EpisodeRecord
from agent_eval.runner.loop import Cell
from agent_eval.scoring.adaptive import CellState, curtailment, next_seed_count, pairs_on_either_metric
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


def resolve_builds(spec: GridSpec) -> GridBuilds:
    """The spec's builds: the chosen subset of its builds file, less optional builds this host cannot run."""
    file = resolve_path(spec.builds_file, spec.base) if spec.builds_file is not None else None
    build_set = load_builds(file)
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


def _pairs(
    finished: Finished, build: str, reference: str, task_id: str, seeds: int, first_seed: int = 0
) -> list[tuple[bool, bool]]:
    """(reference, build) pairs on "navigation or success differ", for the seeds both have finished."""
    ref, mine = [], []
    for seed in seed_range(seeds, first_seed):
        r, m = finished.get((reference, task_id, seed)), finished.get((build, task_id, seed))
        if r is not None and m is not None:
            ref.append((r.reached, r.success))
            mine.append((m.reached, m.success))
    return pairs_on_either_metric(ref, mine)


def _decided(
    finished: Finished,
    build: str,
    reference: str,
    targets: Mapping[CellKey, int],
    schedule: Sequence[int],
    hypotheses: int,
    first_seed: int = 0,
) -> bool:
    """Whether no pair the top-up could still add changes the build's pooled REGRESSION decision.

    Only cells that would grow can add pairs (a concordant cell is finished), each up to the cap.
    """
    remaining = 0
    counts = {"navigation": [0, 0], "success": [0, 0]}
    for (b, task_id), n in targets.items():
        if b != build:
            continue
        if next_seed_count(_pairs(finished, build, reference, task_id, n, first_seed), schedule) > n:
            remaining += max(schedule) - n
        for seed in seed_range(n, first_seed):
            r, m = finished.get((reference, task_id, seed)), finished.get((build, task_id, seed))
            if r is None or m is None:
                continue
            for metric, (rv, mv) in (
                ("navigation", (r.reached, m.reached)),
                ("success", (r.success, m.success)),
            ):
                if rv and not mv:
                    counts[metric][0] += 1
                elif mv and not rv:
                    counts[metric][1] += 1
    states = [curtailment(b, c, remaining, hypotheses=hypotheses) for b, c in counts.values()]
    return all(state is not CellState.OPEN for state in states)


def top_up(
    targets: Mapping[CellKey, int],
    finished: Finished,
    reference: str,
    schedule: Sequence[int],
    *,
    curtail: bool = False,
    first_seed: int = 0,
) -> TopUp:
    """Grow each (build ≠ reference, task) cell with a discordant pair to the schedule's next level.

    The reference's cell on that task grows with it, so the new seeds are paired too. A cell with
    unfinished seeds (infra errors on every attempt) does not grow: its discordance is not known yet.
    The rule reads only whether pairs disagree, never which build won, so the exact test keeps its size.
    """
    new = dict(targets)
    grown: list[CellKey] = []
    notes: list[str] = []
    builds = sorted({b for b, _ in targets if b != reference})
    curtailed = (
        {
            b
            for b in builds
            if _decided(finished, b, reference, targets, schedule, 2 * len(builds), first_seed)
        }
        if curtail
        else set()
    )
    for (build, task_id), count in sorted(targets.items()):
        if build == reference:
            continue
        pairs = _pairs(finished, build, reference, task_id, count, first_seed)
        if len(pairs) < count:
            notes.append(
                f"{build} on {task_id}: {count - len(pairs)} of {count} pairs unfinished, not topped up"
            )
            continue
        wanted = next_seed_count(pairs, schedule)
        if wanted <= count:
            continue
        if build in curtailed:
            notes.append(f"{build} on {task_id}: not topped up, its REGRESSION decision is settled")
            continue
        new[(build, task_id)] = wanted
        new[(reference, task_id)] = max(new[(reference, task_id)], wanted)
        grown.append((build, task_id))
    return TopUp(targets=new, grown=grown, notes=notes)
