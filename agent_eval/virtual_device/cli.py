"""`agent-eval device start|stop`: run virtual phones in the foreground, or stop a running fleet.

Thin wrapper over serve.py; errors are the project's own and the main CLI prints them.
"""

from __future__ import annotations

from pathlib import Path

import click

from agent_eval.virtual_device.faults import load_fault_configs
from agent_eval.virtual_device.serve import faults_per_phone, serve, stop_fleets


def _size(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in value.lower().split("x"))
    except ValueError:
        raise click.BadParameter(f"give WIDTHxHEIGHT, e.g. 1080x2400, not {value!r}") from None
    return w, h


@click.group()
def device() -> None:
    """Virtual Android phones that the real adb server drives like emulators."""


@device.command()
@click.option("--count", default=1, show_default=True, help="how many phones")
@click.option("--base-port", default=5554, show_default=True, help="console port of the first phone (even)")
@click.option("--size", default="1080x2400", show_default=True, callback=_size, help="screen size WxH")
@click.option(
    "--faults",
    "faults_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML fault config (one for all phones, or a list with one per phone)",
)
@click.option(
    "--fault-log", type=click.Path(dir_okay=False, path_type=Path), help="append injected faults here"
)
@click.option("--auth", is_flag=True, help="require adb key authentication (like a phone with USB debugging)")
def start(
    count: int,
    base_port: int,
    size: tuple[int, int],
    faults_file: Path | None,
    fault_log: Path | None,
    auth: bool,
) -> None:
    """Start phones in the foreground and print their serials; Ctrl-C or `agent-eval device stop` ends."""
    faults = faults_per_phone(load_fault_configs(faults_file) if faults_file else None, count)
    serve(count, base_port, size, faults, fault_log, auth)


@device.command()
@click.option("--base-port", type=int, default=None, help="only the fleet started with this base port")
def stop(base_port: int | None) -> None:
    """Stop fleets started with `agent-eval device start`."""
    pids = stop_fleets(base_port)
    click.echo(f"stopped {len(pids)} fleet(s)" + (f": pid {', '.join(map(str, pids))}" if pids else ""))
