"""The `virtual-phone` command (also `python -m virtual_phone`): start phones in the foreground, stop a fleet.

`start_fleet` spawns `start` too (with `--watch-stdin --no-pid-file`); errors print as one message, exit 2.
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

from virtual_phone.adb.serve import faults_per_phone, serve, stop_fleets
from virtual_phone.errors import ERROR_PREFIX, VirtualPhoneError
from virtual_phone.faults import load_fault_configs


def _size(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in value.lower().split("x"))
    except ValueError:
        raise click.BadParameter(f"give WIDTHxHEIGHT, e.g. 1080x2400, not {value!r}") from None
    return w, h


@click.group()
def phones() -> None:
    """Virtual Android phones that the real adb server drives like emulators."""


@phones.command()
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
@click.option("--watch-stdin", is_flag=True, hidden=True, help="exit when stdin closes (the parent died)")
@click.option("--no-pid-file", is_flag=True, hidden=True, help="write no pid file (`stop` will not see it)")
def start(
    count: int,
    base_port: int,
    size: tuple[int, int],
    faults_file: Path | None,
    fault_log: Path | None,
    auth: bool,
    watch_stdin: bool,
    no_pid_file: bool,
) -> None:
    """Start phones in the foreground and print their serials, then `ready`; Ctrl-C or `stop` ends them."""
    faults = faults_per_phone(load_fault_configs(faults_file) if faults_file else None, count)
    serve(count, base_port, size, faults, fault_log, auth, watch_stdin, write_pid=not no_pid_file)


@phones.command()
@click.option("--base-port", type=int, default=None, help="only the fleet started with this base port")
def stop(base_port: int | None) -> None:
    """Stop fleets started with `virtual-phone start`."""
    pids = stop_fleets(base_port)
    click.echo(f"stopped {len(pids)} fleet(s)" + (f": pid {', '.join(map(str, pids))}" if pids else ""))


def main(argv: list[str] | None = None) -> int:
    """The `virtual-phone` entry point: click's own usage errors, the phone's errors as one line, exit 2."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        phones.main(argv, prog_name="virtual-phone", standalone_mode=False)
    except click.exceptions.Abort:  # Ctrl-C while click waits: nothing was started
        click.echo("interrupted", err=True)
        return 130
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except VirtualPhoneError as e:
        click.echo(f"{ERROR_PREFIX}{e}", err=True)
        return 2
    return 0
