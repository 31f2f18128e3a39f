"""Planning: paired cells, the order they run in, and the adaptive top-up rule over finished episodes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from agent_eval.grid.plan import CellKey, cells_for, initial_targets, top_up
from agent_eval.records import EpisodeRecord, Outcome
from agent_eval.task import Task, load_tasks

REPO = Path(__file__).resolve().parent.parent
TASKS: list[Task] = load_tasks([REPO / "tasks" / "wifi_on.yaml", REPO / "tasks" / "airplane_mode_on.yaml"])
BUILDS = ["ref", "a", "b"]
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def record(build: str, task: str, seed: int, reached: bool, success: bool) -> EpisodeRecord:
    outcome = Outcome.SUCCESS if success else (Outcome.UNDONE if reached else Outcome.NAV_FAIL)
    return EpisodeRecord(
        run_id="r",
        build=build,
        task_id=task,
        seed=seed,
        outcome=outcome,
        reached=reached,
        success=success,
        started_at=NOW,
        finished_at=NOW,
    )


def finished(
    targets: dict[CellKey, int],
    fails: set[tuple[str, str, int]] = frozenset(),
    undone: set[tuple[str, str, int]] = frozenset(),
    first_seed: int = 0,
) -> dict[tuple[str, str, int], EpisodeRecord]:
    out = {}
    for (build, task), n in targets.items():
        for seed in range(first_seed, first_seed + n):
            key = (build, task, seed)
            out[key] = record(build, task, seed, reached=key not in fails, success=key not in fails | undone)
    return out


def test_every_build_gets_the_same_task_seed_pairs() -> None:
    targets = initial_targets(TASKS, BUILDS, 3)
    cells = cells_for(targets, TASKS, BUILDS, side_by_side=True)
    pairs = {b: sorted((c.task.id, c.seed) for c in cells if c.build == b) for b in BUILDS}
    assert pairs["ref"] == pairs["a"] == pairs["b"] and len(pairs["ref"]) == 6
    assert len({c.key for c in cells}) == len(cells) == 18


def test_side_by_side_interleaves_builds_within_each_task_and_seed_rotating_who_goes_first() -> None:
    cells = cells_for(initial_targets(TASKS, BUILDS, 3), TASKS, BUILDS, side_by_side=True)
    keys = [(c.seed, c.task.id, c.build) for c in cells]
    # Seed by seed, task by task, all builds of one (task, seed) next to each other.
    assert [k[:2] for k in keys[::3]] == [(s, t.id) for s in range(3) for t in TASKS]
    assert keys[:3] == [(0, "wifi_on", "ref"), (0, "wifi_on", "a"), (0, "wifi_on", "b")]
    assert [k[2] for k in keys[6:9]] == ["a", "b", "ref"]  # seed 1: the next build goes first
    assert [k[2] for k in keys[12:15]] == ["b", "ref", "a"]


def test_one_at_a_time_groups_each_build_and_runs_it_seed_by_seed() -> None:
    cells = cells_for(initial_targets(TASKS, BUILDS, 2), TASKS, BUILDS, side_by_side=False)
    assert [c.build for c in cells] == ["ref"] * 4 + ["a"] * 4 + ["b"] * 4
    assert [(c.seed, c.task.id) for c in cells[:4]] == [
        (0, "wifi_on"),
        (0, "airplane_mode_on"),
        (1, "wifi_on"),
        (1, "airplane_mode_on"),
    ]


def test_a_discordant_cell_grows_with_its_reference_and_a_concordant_one_does_not() -> None:
    targets = initial_targets(TASKS, BUILDS, 5)
    # `a` undoes the goal once on wifi_on: discordant on success only (navigation agrees).
    done = finished(targets, undone={("a", "wifi_on", 3)})
    step = top_up(targets, done, "ref", [5, 10, 20, 30])
    assert step.grown == [("a", "wifi_on")]
    assert step.targets[("a", "wifi_on")] == 10 and step.targets[("ref", "wifi_on")] == 10
    assert step.targets[("b", "wifi_on")] == 5 and step.targets[("a", "airplane_mode_on")] == 5
    assert step.targets[("ref", "airplane_mode_on")] == 5

    # Next phase: the grown cell is judged on its own 10 pairs; a win for the build counts as much as a loss.
    done = finished(step.targets, undone={("ref", "wifi_on", 7)})
    again = top_up(step.targets, done, "ref", [5, 10, 20, 30])
    assert again.grown == [("a", "wifi_on")] and again.targets[("a", "wifi_on")] == 20
    # b's pairs on wifi_on are seeds 0..4 only, where it agrees with ref: it stays.
    assert again.targets[("b", "wifi_on")] == 5


def test_a_grid_from_another_first_seed_plays_and_pairs_only_its_own_range() -> None:
    targets = initial_targets(TASKS, BUILDS, 3)
    cells = cells_for(targets, TASKS, BUILDS, side_by_side=False, first_seed=100)
    assert sorted({c.seed for c in cells}) == [100, 101, 102]
    # Seeds 0..4 of an earlier run in the same store are not this run's pairs: a discordance there is ignored.
    done = finished(targets, first_seed=100) | finished(targets, fails={("a", "wifi_on", 1)})
    assert top_up(targets, done, "ref", [3, 6], first_seed=100).grown == []
    done = finished(targets, fails={("a", "wifi_on", 101)}, first_seed=100)
    step = top_up(targets, done, "ref", [3, 6], first_seed=100)
    assert step.grown == [("a", "wifi_on")] and step.targets[("ref", "wifi_on")] == 6
    grown = cells_for(step.targets, TASKS, BUILDS, side_by_side=False, first_seed=100)
    mine = {c.seed for c in grown if c.build == "a" and c.task.id == "wifi_on"}
    assert sorted(mine) == list(range(100, 106))


def test_the_cap_ends_the_top_up_and_no_schedule_means_no_top_up() -> None:
    targets = {("ref", "wifi_on"): 30, ("a", "wifi_on"): 30}
    done = finished(targets, fails={("a", "wifi_on", 0)})
    assert top_up(targets, done, "ref", [5, 10, 20, 30]).grown == []
    small = {("ref", "wifi_on"): 5, ("a", "wifi_on"): 5}
    assert top_up(small, finished(small, fails={("a", "wifi_on", 0)}), "ref", [5]).grown == []


def test_a_cell_with_unfinished_pairs_is_not_topped_up_and_says_why() -> None:
    targets = {("ref", "wifi_on"): 5, ("a", "wifi_on"): 5}
    done = finished(targets, fails={("a", "wifi_on", 1)})
    del done[("ref", "wifi_on", 4)]  # infra errors on every attempt: no scored episode
    step = top_up(targets, done, "ref", [5, 10])
    assert step.grown == [] and step.notes == ["a on wifi_on: 1 of 5 pairs unfinished, not topped up"]


def test_curtailment_stops_topping_up_a_build_whose_regression_is_settled() -> None:
    tasks = [f"t{i}" for i in range(8)]
    schedule = [5, 10, 20, 30]
    targets = {(b, t): 20 for b in ("ref", "a") for t in tasks}
    # `a` fails every seed the reference passes: 160 of 160 pairs go against it. Even if all 80 pairs the
    # cap still allows went its way, the exact test would reject: running them changes nothing.
    done = finished(targets, fails={("a", t, s) for t in tasks for s in range(20)})
    plain = top_up(targets, done, "ref", schedule)
    assert len(plain.grown) == 8 and plain.targets[("a", "t0")] == 30
    curtailed = top_up(targets, done, "ref", schedule, curtail=True)
    assert curtailed.grown == [] and curtailed.targets == targets
    assert all("REGRESSION decision is settled" in n for n in curtailed.notes) and len(curtailed.notes) == 8
    # At 5 seeds the same losses settle nothing yet: 40 against could still be met by 200 in favour.
    early = {key: 5 for key in targets}
    assert (
        len(
            top_up(
                early,
                finished(early, fails={("a", t, s) for t in tasks for s in range(5)}),
                "ref",
                schedule,
                curtail=True,
            ).grown
        )
        == 8
    )
    # One discordant pair settles nothing: the top-up goes ahead.
    few = finished(targets, fails={("a", "t0", 0)})
    assert top_up(targets, few, "ref", schedule, curtail=True).grown == [("a", "t0")]
