"""Planning: paired cells, the order they run in, and the adaptive top-up rule over finished episodes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from agent_eval.grid.plan import Budget, CellKey, cells_for, initial_targets, top_up
from agent_eval.records import EpisodeRecord, Outcome
from agent_eval.task import Task, load_tasks

REPO = Path(__file__).resolve().parents[2]
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


def test_an_undecided_build_grows_every_cell_both_ways_with_its_reference() -> None:
    targets = initial_targets(TASKS, BUILDS, 5)
    # `a` agrees with ref on all 10 pairs: no discordance, yet a drop up to ~0.4 is not ruled out, so it
    # grows (toward NON-INFERIOR); `b` undoes the goal once: it grows too, on both tasks.
    done = finished(targets, undone={("b", "wifi_on", 3)})
    step = top_up(targets, done, "ref", [5, 10, 20, 30])
    assert step.undecided == ["a", "b"]
    assert sorted(step.grown) == [(b, t.id) for b in ("a", "b") for t in sorted(TASKS, key=lambda t: t.id)]
    assert all(n == 10 for n in step.targets.values())


def test_a_decided_build_stops_and_a_baseline_never_grows() -> None:
    tasks = ["t0", "t1"]
    targets = {(b, t): 20 for b in ("ref", "same", "worse", "base") for t in tasks}
    # 40 agreeing pairs: the exact bound at alpha/2 (two looks) is 0.088 < 0.10, NON-INFERIOR on both;
    # `worse` fails every seed: REGRESSION on both. `base` is undecided but a baseline.
    losses = {("worse", t, s) for t in tasks for s in range(20)} | {("base", "t0", 0)}
    done = finished(targets, fails=losses)
    step = top_up(targets, done, "ref", [20, 40], baselines={"base"})
    assert step.grown == [] and step.undecided == [] and step.targets == targets
    # Four looks spend less per look: the same 40 pairs no longer decide `same` (its bound is 0.104).
    step = top_up(targets, done, "ref", [20, 25, 30, 40], baselines={"base"})
    assert step.undecided == ["same"] and sorted(step.grown) == [("same", "t0"), ("same", "t1")]
    assert step.targets[("ref", "t0")] == 25 and step.targets[("base", "t0")] == 20


def test_the_budget_grows_what_it_can_pay_for_and_says_what_it_cannot() -> None:
    targets = initial_targets(TASKS, BUILDS, 5)
    done = finished(targets)
    # Growing `a` to 10 costs 10 of its episodes and 10 of the reference's; `b` then costs only its own 10.
    step = top_up(targets, done, "ref", [5, 10], budget=Budget(episodes=25))
    assert {b for b, _ in step.grown} == {"a"}
    assert step.notes == ["b: not topped up to 10 seeds, it needs 10 episodes and the budget allows 5 more"]
    assert top_up(targets, done, "ref", [5, 10], budget=Budget(episodes=30)).targets == {
        k: 10 for k in targets
    }
    # In time, each build at its own pace: ref 1 s and a 2 s an episode (30 s for a's growth), b unknown
    # (priced at the slowest pace seen, 2 s: 20 s more). 45 s pay for a, not for b.
    pace = {"ref": 1.0, "a": 2.0}
    step = top_up(targets, done, "ref", [5, 10], budget=Budget(seconds=45.0, per_episode_s=pace))
    assert {b for b, _ in step.grown} == {"a"}
    assert step.notes == ["b: not topped up to 10 seeds, it needs ~0.3 min and the budget has 0.2 min left"]


def test_a_grid_from_another_first_seed_plays_and_pairs_only_its_own_range() -> None:
    targets = initial_targets(TASKS, BUILDS, 3)
    cells = cells_for(targets, TASKS, BUILDS, side_by_side=False, first_seed=100)
    assert sorted({c.seed for c in cells}) == [100, 101, 102]
    # Seeds 0..2 of an earlier run in the same store are not this run's pairs: a regression there is ignored.
    worse = {("a", t.id, s) for t in TASKS for s in range(3)}
    done = finished(targets, first_seed=100) | finished(targets, fails=worse)
    step = top_up(targets, done, "ref", [3, 6], first_seed=100)
    assert ("a", "wifi_on") in step.grown and step.targets[("ref", "wifi_on")] == 6
    grown = cells_for(step.targets, TASKS, BUILDS, side_by_side=False, first_seed=100)
    mine = {c.seed for c in grown if c.build == "a" and c.task.id == "wifi_on"}
    assert sorted(mine) == list(range(100, 106))


def test_the_cap_ends_the_top_up_and_no_schedule_means_no_top_up() -> None:
    targets = {("ref", "wifi_on"): 30, ("a", "wifi_on"): 30}
    done = finished(targets, fails={("a", "wifi_on", 0)})
    step = top_up(targets, done, "ref", [5, 10, 20, 30])
    assert step.grown == [] and step.notes == ["a: still undecided at the cap of 30 seeds per task"]
    small = {("ref", "wifi_on"): 5, ("a", "wifi_on"): 5}
    assert top_up(small, finished(small, fails={("a", "wifi_on", 0)}), "ref", [5]).grown == []


def test_a_cell_with_unfinished_pairs_is_not_topped_up_and_says_why() -> None:
    targets = {("ref", "wifi_on"): 5, ("a", "wifi_on"): 5}
    done = finished(targets, fails={("a", "wifi_on", 1)})
    del done[("ref", "wifi_on", 4)]  # infra errors on every attempt: no scored episode
    step = top_up(targets, done, "ref", [5, 10])
    assert step.grown == [] and step.notes == ["a on wifi_on: 1 of 5 pairs unfinished, not topped up"]
