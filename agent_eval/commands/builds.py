"""`agent-eval builds …`: list the builds of a file, prepare their weights, serve one by hand.

Thin: parsing options and printing; the work lives in spec, prepare and serve.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from agent_eval.builds.ladder_rungs import GROUPS, list_group, rounded_in_bf16
from agent_eval.builds.preparing.prepare_builds import prepare
from agent_eval.builds.serving import host
from agent_eval.builds.serving.weights import read_prepared
from agent_eval.builds.spec import Build, load_builds
from agent_eval.rundir import engine_record_path


@click.group("builds")
def builds_group() -> None:
    """Quantized builds of the model: list, prepare, serve."""


_FILE = click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))


@builds_group.command("list")
@_FILE
def list_builds(file: Path | None) -> None:
    """Show each build, whether it is prepared, and whether it can run on this host."""
    builds = load_builds(file)
    several = len({list_group(b.reference, b.prepare, b.scheme) for b in builds.builds}) > 1
    # Columns as wide as their longest entry in this file (gguf-q4_k_m-noimat, gguf-q5_k_m).
    widths = (
        max(len(b.name) for b in builds.builds),
        max(len(b.scheme) for b in builds.builds),
        max(len(_bits(b)) for b in builds.builds),
        max(len(b.engine) for b in builds.builds),
    )
    for group, heading in GROUPS:
        members = [b for b in builds.builds if list_group(b.reference, b.prepare, b.scheme) == group]
        if several and members:
            click.echo(f"-- {heading}")
        for build in members:
            click.echo(_build_line(build, widths))


def _bits(build: Build) -> str:
    return f"{build.bits:g} bpw" if build.bits else "? bpw"


def _build_line(build: Build, widths: tuple[int, int, int, int]) -> str:
    ref = " (reference)" if build.reference else ""
    bits_read = ""
    if not build.kind.starts_server:
        state = f"{build.engine} {build.base_url}"
    else:
        prepared = read_prepared(build)
        state = f"prepared {prepared.weights_hash[:19]}" if prepared else "not prepared"
        measured = (prepared.gguf or {}).get("bits_per_weight") if prepared else None
        bits_read = f"{measured:g} bpw read from the file" if isinstance(measured, float) else ""
    reason = host.unavailable_reason(build)
    runs = f"cannot run here: {reason}" if reason else "runs here"
    if not reason and rounded_in_bf16(build.prepare, build.scheme):
        runs = "runs here as rounded bf16"
    if bits_read:
        state += f" ({bits_read})"  # a GGUF rung's own: fallback types make it differ from its type's name
    columns = (build.name, build.scheme, _bits(build), build.engine)
    name, scheme, bits, engine = (text.ljust(width) for text, width in zip(columns, widths, strict=True))
    return f"{name} {scheme} {bits} {engine} {state}; {runs}{ref}"


@builds_group.command("prepare")
@_FILE
@click.option("--build", "only", multiple=True, help="Prepare only this build (repeatable).")
@click.option("--force", is_flag=True, help="Remake the weights even when they are up to date.")
def prepare_builds(file: Path | None, only: tuple[str, ...], force: bool) -> None:
    """Make the builds' weights from the shipped model (idempotent; skips what is up to date)."""
    builds = load_builds(file)
    started = time.monotonic()
    ready = prepare(builds, only=list(only) or None, force=force, say=click.echo)
    click.echo(f"{len(ready)} build(s) ready in {time.monotonic() - started:.0f} s")


@builds_group.command("serve")
@click.argument("name")
@_FILE
@click.option("--port", type=int, default=None, help="Listen here (default: a free port in 8100..8199).")
@click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs/serve"))
def serve_build(name: str, file: Path | None, port: int | None, run_dir: Path) -> None:
    """Serve one build until Ctrl-C, printing its endpoint (for trying a build by hand)."""
    from agent_eval.builds.serving.launcher import serve

    build = load_builds(file).get(name)
    with serve(build, run_dir, port=port) as served:
        click.echo(f"{build.name}: serving at {served.endpoint.base_url} as model {served.endpoint.model!r}")
        click.echo(f"log: {served.log_path}; Ctrl-C stops it")
        try:
            while served.alive():
                time.sleep(1.0)
        except KeyboardInterrupt:
            pass
        record = served.record()
    click.echo(f"stopped; engine record: {engine_record_path(run_dir, build.name)}")
    click.echo(
        f"startup {record.startup_s} s, peak {record.peak_rss_mb} MB, settled {record.settled_rss_mb} MB"
    )
