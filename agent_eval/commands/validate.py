"""`agent-eval validate`: plays every task's oracle on a device and prints a verdict per task instance.

The checking lives in runner/validate.py; this module picks the device and prints.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import click

from agent_eval.device.backend import DeviceRequest, EpisodeDevice, device_backend
from agent_eval.errors import ConfigError
from agent_eval.runner.validate import TaskCheck, validate_tasks
from agent_eval.task import load_tasks


@contextlib.contextmanager
def _devices_for(
    serials: tuple[str, ...], phones: int | None, virtual: bool, phone_port: int
) -> Iterator[list[EpisodeDevice]]:
    """The devices to validate on: the ones named, else `phones` virtual phones started here, else a connected
    one, else a virtual phone started here."""
    if serials and phones is not None:
        raise ConfigError("--phones starts virtual phones; with --device, name every device to use instead")
    count = phones or 0
    request = DeviceRequest(serials=serials, count=count, phone_port=phone_port, started_only=virtual)
    with device_backend().devices(request, lambda text: click.echo(text, err=True)) as devices:
        yield devices


def _row(check: TaskCheck) -> str:
    instance = check.instance
    params = ", ".join(f"{k}={v}" for k, v in instance.params.items())
    kind = "verify" if instance.verify else ""
    mark = "ok" if check.ok else "FAIL"
    return f"{mark:<5}{instance.id:<28}{instance.seed:>4}  {kind:<7}{check.outcome:<15}{check.steps:>5}  " + (
        f"{check.seconds:6.1f}s  {params}"
    )


@click.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--device",
    "serials",
    multiple=True,
    help="adb serial to validate on; repeat to share the tasks among several (default: a connected device, "
    "else a virtual phone).",
)
@click.option(
    "--phones",
    type=click.IntRange(min=1),
    help="Start this many virtual phones and share the tasks among them (instead of --device).",
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
    serials: tuple[str, ...],
    phones: int | None,
    virtual: bool,
    phone_port: int,
    seeds: int | None,
    snapshot: str,
    keep: Path | None,
) -> None:
    """Play every task's oracle on a device; fail if a task starts in its goal or its oracle does not succeed.

    PATHS are task files or folders, read with their subfolders (default: tasks/, the app families too).
    """
    tasks = load_tasks(list(paths) or [Path("tasks")], recursive=True)  # tasks/ and tasks/apps/*/
    snap = None if snapshot.lower() == "none" else snapshot
    failed: list[TaskCheck] = []
    with contextlib.ExitStack() as stack:
        work_dir = keep if keep is not None else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        devices = stack.enter_context(_devices_for(serials, phones, virtual, phone_port))
        click.echo(f"validating {len(tasks)} task(s) on {', '.join(d.serial for d in devices)}")
        click.echo(f"{'':<5}{'task':<28}{'seed':>4}  {'':<7}{'outcome':<15}{'steps':>5}  {'time':>7}  params")
        for check in validate_tasks(tasks, devices, seeds=seeds, snapshot=snap, work_dir=work_dir):
            click.echo(_row(check))
            if not check.ok:
                failed.append(check)
    if failed:
        order = {task.id: index for index, task in enumerate(tasks)}
        failed.sort(key=lambda c: (order.get(c.instance.id, len(order)), c.instance.seed))
        click.echo(f"\n{len(failed)} task instance(s) failed:", err=True)
        for check in failed:
            click.echo(f"  {check.instance.id} (seed {check.instance.seed}): {check.problem}", err=True)
        # click's Exit would be swallowed by the CLI's non-standalone main; the exit code must survive.
        sys.exit(1)
    click.echo("all tasks valid")
