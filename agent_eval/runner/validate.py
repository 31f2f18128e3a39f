"""`agent-eval validate`: plays every task's oracle through the real episode loop to check each task is sound.

A task passes when it starts right (goal false; true for verify tasks) and its oracle ends in success.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from agent_eval.agent.oracle import OraclePolicy
from agent_eval.device.backend import DeviceRequest, EpisodeDevice, device_backend
from agent_eval.errors import AgentEvalError, TaskError
from agent_eval.records import Outcome, StepRecord
from agent_eval.runner.episode import run_episode
from agent_eval.task import Task, TaskInstance, goal_holds, load_tasks, start_episode
from agent_eval.task.params import combinations

INFRA_ATTEMPTS = 2


@dataclass(frozen=True)
class TaskCheck:
    """The verdict on one task instance (one seed)."""

    task_id: str
    seed: int
    params: dict[str, str]
    verify: bool
    ok: bool
    outcome: str  # an Outcome value, or "broken start" / "start checked" / "error"
    steps: int
    seconds: float
    problem: str = ""


def seeds_for(task: Task, limit: int | None) -> range:
    """Every parameter combination, or the first `limit` seeds."""
    return range(limit if limit is not None else combinations(task.params))


def _check_start_only(device: EpisodeDevice, instance: TaskInstance, snapshot: str | None) -> str:
    """For a task without an oracle: only that its start state is what it claims. Returns a problem or ""."""
    start_episode(device, instance, snapshot=snapshot)
    held = goal_holds(instance.goal_state, device)
    if held != instance.verify:
        return "goal already holds at the start" if held else "verify task does not start in its goal state"
    return ""


def _invalid_reasons(steps_file: Path) -> list[str]:
    reasons = []
    with contextlib.suppress(OSError):
        for line in steps_file.read_text(encoding="utf-8").splitlines():
            step = StepRecord.model_validate_json(line)
            if step.invalid_reason:
                reasons.append(f"step {step.step}: {step.invalid_reason}")
    return reasons or [f"see {steps_file}"]


def _verdict(
    instance: TaskInstance, started: float, outcome: str, steps: int = 0, problem: str = ""
) -> TaskCheck:
    return TaskCheck(
        task_id=instance.id,
        seed=instance.seed,
        params=dict(instance.params),
        verify=instance.verify,
        ok=not problem,
        outcome=outcome,
        steps=steps,
        seconds=time.perf_counter() - started,
        problem=problem,
    )


def check_instance(
    device: EpisodeDevice, instance: TaskInstance, *, snapshot: str | None, work_dir: Path
) -> TaskCheck:
    """Play `instance`'s oracle with the episode loop (or only check its start when it has no oracle)."""
    started = time.perf_counter()
    if instance.oracle is None:
        try:
            problem = _check_start_only(device, instance, snapshot)
        except AgentEvalError as e:
            problem = str(e)
        return _verdict(instance, started, "broken start" if problem else "start checked", problem=problem)
    for attempt in range(1, INFRA_ATTEMPTS + 1):
        # A device hiccup says nothing about the task: try again before blaming it.
        episode_dir = work_dir / instance.id / str(instance.seed) / f"attempt-{attempt}"
        episode_dir.mkdir(parents=True, exist_ok=True)
        try:
            record = run_episode(
                device,
                instance,
                OraclePolicy(instance),
                build="oracle",
                run_id="validate",
                episode_dir=episode_dir,
                snapshot=snapshot,
                attempt=attempt,
            )
        except TaskError as e:
            return _verdict(instance, started, "broken start", problem=str(e))
        if record.outcome is not Outcome.INFRA_ERROR:
            break
    problems = []
    if record.outcome is not Outcome.SUCCESS:
        problems.append(record.error or f"the oracle ended in {record.outcome.value}, not success")
    if record.invalid_actions:
        reasons = _invalid_reasons(episode_dir / "steps.jsonl")
        problems.append(f"{record.invalid_actions} oracle step(s) were invalid: " + "; ".join(reasons))
    return _verdict(instance, started, record.outcome.value, record.steps, "; ".join(problems))


def validate_tasks(
    tasks: Sequence[Task],
    device: EpisodeDevice,
    *,
    seeds: int | None = None,
    snapshot: str | None = "default_boot",
    work_dir: Path,
) -> Iterator[TaskCheck]:
    """Check every task on `device`, yielding each verdict as soon as it is known."""
    for task in tasks:
        for seed in seeds_for(task, seeds):
            yield check_instance(device, task.instantiate(seed), snapshot=snapshot, work_dir=work_dir)


@contextlib.contextmanager
def _device_for(serial: str | None, virtual: bool, phone_port: int) -> Iterator[EpisodeDevice]:
    """The device to validate on: the one named, else a connected one, else a virtual phone started here."""
    request = DeviceRequest(serials=(serial,) if serial else (), phone_port=phone_port, started_only=virtual)
    with device_backend().devices(request, lambda text: click.echo(text, err=True)) as devices:
        yield devices[0]


def _row(check: TaskCheck) -> str:
    params = ", ".join(f"{k}={v}" for k, v in check.params.items())
    kind = "verify" if check.verify else ""
    mark = "ok" if check.ok else "FAIL"
    return f"{mark:<5}{check.task_id:<28}{check.seed:>4}  {kind:<7}{check.outcome:<15}{check.steps:>5}  " + (
        f"{check.seconds:6.1f}s  {params}"
    )


@click.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--device",
    "serial",
    help="adb serial to validate on (default: a connected device, else a virtual phone).",
)
@click.option(
    "--virtual", is_flag=True, help="Always start a virtual phone, even when a device is connected."
)
@click.option(
    "--phone-port",
    default=5554,
    show_default=True,
    help="A virtual phone started here takes the first free console port from this one on.",
)
@click.option(
    "--seeds", type=click.IntRange(min=1), help="Check seeds 0..N-1 (default: every parameter combination)."
)
@click.option(
    "--snapshot", default="default_boot", show_default=True, help="Snapshot to reset to; 'none' to skip."
)
@click.option(
    "--keep", type=click.Path(path_type=Path), help="Keep each oracle episode's steps and screenshots here."
)
def validate_command(
    paths: tuple[Path, ...],
    serial: str | None,
    virtual: bool,
    phone_port: int,
    seeds: int | None,
    snapshot: str,
    keep: Path | None,
) -> None:
    """Play every task's oracle on a device; fail if a task starts in its goal or its oracle does not succeed.

    PATHS are task files or folders (default: tasks/).
    """
    tasks = load_tasks(list(paths) or [Path("tasks")])
    snap = None if snapshot.lower() == "none" else snapshot
    failed: list[TaskCheck] = []
    with contextlib.ExitStack() as stack:
        work_dir = keep if keep is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        device = stack.enter_context(_device_for(serial, virtual, phone_port))
        click.echo(f"validating {len(tasks)} task(s) on {device.serial}")
        click.echo(f"{'':<5}{'task':<28}{'seed':>4}  {'':<7}{'outcome':<15}{'steps':>5}  {'time':>7}  params")
        for check in validate_tasks(tasks, device, seeds=seeds, snapshot=snap, work_dir=work_dir):
            click.echo(_row(check))
            if not check.ok:
                failed.append(check)
    if failed:
        click.echo(f"\n{len(failed)} task instance(s) failed:", err=True)
        for check in failed:
            click.echo(f"  {check.task_id} (seed {check.seed}): {check.problem}", err=True)
        # click's Exit would be swallowed by the CLI's non-standalone main; the exit code must survive.
        sys.exit(1)
    click.echo("all tasks valid")
