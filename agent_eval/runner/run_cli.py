"""`agent-eval run TASKS… --endpoint URL --model NAME --seeds N`: each (task, seed) against one chat endpoint.

Picks or starts the device, opens (or continues) the run directory, prints outcomes as episodes finish.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from agent_eval.agent.llm import LLMPolicy
from agent_eval.builds.client import ChatClient, Usage, check_endpoint_url
from agent_eval.builds.endpoint import Endpoint
from agent_eval.device.driver import Device, online_serials
from agent_eval.errors import ConfigError, InfraError
from agent_eval.grid import is_grid_file, run_from_path
from agent_eval.records import BuildManifest, EngineRecord, Outcome
from agent_eval.runner.lines import OUTCOME_STYLE, episode_line
from agent_eval.runner.loop import BuildAgent, Cell, RunSummary, run_cells
from agent_eval.runner.store import RunStore, new_manifest
from agent_eval.task import Task, load_tasks


def free_phone_port(start: int) -> int:
    """The first even port from `start` on where a phone's console (P) and adb port (P+1) are both free."""
    for base in range(start - start % 2, start + 400, 2):
        try:
            for port in (base, base + 1):
                with socket.socket() as s:
                    # Ports a stopped phone left in TIME_WAIT are free to a new one (it reuses addresses too).
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise InfraError(f"no free port pair for a virtual phone in {start}..{start + 400}; pass --device")


@contextlib.contextmanager
def devices_for_run(
    serials: Sequence[str], console: Console, phone_port: int = 5554
) -> Iterator[list[Device]]:
    """The devices to run on: those asked for, else a connected one, else a virtual phone started here."""
    if serials:
        yield [Device(serial) for serial in dict.fromkeys(serials)]
        return
    connected = sorted(online_serials())
    if connected:
        if len(connected) > 1:
            console.print(
                f"[dim]{len(connected)} devices connected; using {connected[0]} (pick with --device)"
            )
        yield [Device(connected[0])]
        return
    from agent_eval.virtual_device import start_fleet

    base = free_phone_port(phone_port)
    console.print(f"[dim]no device connected: starting a virtual phone on adb port {base + 1}")
    with start_fleet(count=1, base_port=base) as fleet:
        console.print(f"[dim]virtual phone {fleet.serials[0]} is up")
        yield [Device(fleet.serials[0])]


def summary_table(summary: RunSummary) -> Table:
    table = Table(title="outcomes this session", show_edge=False)
    table.add_column("outcome")
    table.add_column("episodes", justify="right")
    for outcome in Outcome:
        count = summary.outcomes.get(outcome, 0) if outcome is not Outcome.INFRA_ERROR else None
        if outcome is Outcome.INFRA_ERROR:
            count = summary.infra_attempts
            label = "infra_error (attempts, retried)"
        else:
            label = outcome.value
        if count:
            table.add_row(f"[{OUTCOME_STYLE[outcome]}]{label}", str(count))
    if summary.kept:
        table.add_row("[dim]kept from earlier sessions", str(summary.kept))
    return table


def engine_record(build: str, usage: Usage) -> EngineRecord:
    return EngineRecord(
        build=build,
        engine="endpoint",
        decode_tok_s=usage.decode_tok_s,
        prefill_tok_s=usage.prefill_tok_s,
        requests=usage.requests,
    )


def _with_max_steps(tasks: Sequence[Task], max_steps: int | None) -> list[Task]:
    if max_steps is None:
        return list(tasks)
    out: list[Task] = []
    for task in tasks:
        copy = task.model_copy(update={"max_steps": max_steps})
        out.append(copy)
    return out


def play_build(
    cells: Sequence[Cell],
    devices: Sequence[Device],
    endpoint: Endpoint,
    manifest: BuildManifest,
    store: RunStore,
    console: Console,
    *,
    max_attempts: int = 3,
) -> tuple[RunSummary, Usage]:
    """Run one build's cells against its endpoint with the LLM policy, printing each episode as it ends.

    Returns what happened and the client's usage (for the build's engine record: tok/s).
    """
    with ChatClient(endpoint) as client:
        policy = LLMPolicy(client, accepts_images=endpoint.accepts_images)
        agent = BuildAgent(manifest.name, lambda instance: policy, manifest)
        summary = run_cells(
            cells,
            devices,
            {manifest.name: agent},
            store,
            max_attempts=max_attempts,
            on_episode=lambda cell, record: console.print(episode_line(cell, record)),
        )
        return summary, client.usage()


def write_engine_usage(run_dir: Path, build: str, usage: Usage) -> None:
    """engines/<build>.json for a build served elsewhere: only what the client measured."""
    engines = run_dir / "engines"
    engines.mkdir(exist_ok=True)
    (engines / f"{build}.json").write_text(engine_record(build, usage).model_dump_json(indent=2) + "\n")


def summary_problems(summary: RunSummary, max_attempts: int) -> list[str]:
    """What a rerun must still do, in words (empty when the run is complete)."""
    problems = []
    if summary.failed:
        last = summary.failed[-1]
        problems.append(
            f"{len(summary.failed)} episode(s) failed {max_attempts} times "
            f"(last: {last.task_id} seed {last.seed}: {last.error})"
        )
    if summary.retired_devices:
        problems.append(f"device lost: {', '.join(summary.retired_devices)}")
    if summary.gave_up:
        problems.append(summary.gave_up)
    if summary.not_run:
        problems.append(f"{len(summary.not_run)} episode(s) not run")
    return problems


@click.command("run")
@click.argument("tasks", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--endpoint",
    "endpoint_url",
    help="OpenAI-compatible base URL, e.g. http://host:8000/v1. Default: serve the builds file's builds.",
)
@click.option("--model", help="Model name the endpoint serves (with --endpoint).")
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    help="Seeds 0..N-1 per task (phase 1 of a grid). Default: the grid's (5), or 1 with --endpoint.",
)
@click.option(
    "--device",
    "serials",
    multiple=True,
    help="adb serial (repeat for several); default: a connected device, else a virtual phone.",
)
@click.option("--devices", "device_count", type=click.IntRange(min=1), help="Virtual phones to start (grid).")
@click.option("--builds-file", type=click.Path(path_type=Path), help="Default: builds/default.yaml.")
@click.option("--builds", "build_names", help="Comma-separated subset of the builds file.")
@click.option("--reference", help="Reference build (default: the builds file's).")
@click.option("--margin", type=float, help="Non-inferiority margin δ (default 0.10).")
@click.option("--side-by-side", is_flag=True, help="Serve every build at once and interleave them.")
@click.option("--no-adaptive", is_flag=True, help="No top-up of discordant cells after phase 1.")
@click.option("--no-bars", is_flag=True, help="Print lines only, no progress bars.")
@click.option(
    "--run-dir", type=click.Path(path_type=Path), help="Default: runs/<date>-<name>. Reuse to continue."
)
@click.option("--max-steps", type=click.IntRange(min=1), help="Override every task's step budget.")
@click.option("--images/--no-images", default=False, show_default=True, help="Send the screenshot too.")
@click.option("--no-structured-output", is_flag=True, help="Do not send a JSON schema with each request.")
@click.option(
    "--json-object", is_flag=True, help="llama.cpp style: response_format json_object with a schema."
)
@click.option("--build-name", default="endpoint", show_default=True, help="Name of this build in the run.")
@click.option("--api-key", default="EMPTY", show_default=True)
@click.option("--max-tokens", type=click.IntRange(min=1), default=96, show_default=True)
@click.option(
    "--timeout", "timeout_s", type=float, default=120.0, show_default=True, help="Seconds per request."
)
@click.option("--max-attempts", type=click.IntRange(min=1), help="Per episode (default 3).")
@click.option("--cluster", help="Run the grid's phones and engines on this Ray cluster (host:port or auto).")
@click.option(
    "--phone-port",
    type=int,
    default=5554,
    show_default=True,
    help="Console port of a phone started here.",
)
def run_command(
    tasks: tuple[Path, ...],
    endpoint_url: str | None,
    model: str | None,
    seeds: int | None,
    serials: tuple[str, ...],
    device_count: int | None,
    builds_file: Path | None,
    build_names: str | None,
    reference: str | None,
    margin: float | None,
    side_by_side: bool,
    no_adaptive: bool,
    no_bars: bool,
    run_dir: Path | None,
    max_steps: int | None,
    images: bool,
    no_structured_output: bool,
    json_object: bool,
    build_name: str,
    api_key: str,
    max_tokens: int,
    timeout_s: float,
    max_attempts: int | None,
    cluster: str | None,
    phone_port: int,
) -> None:
    """Run TASK files, folders of them, or a grid file.

    Without --endpoint, every build of the builds file (builds/default.yaml) is prepared if needed, served on
    the pinned CPU engine and run on the same (task, seed) pairs; the scorecard and report follow.
    With --endpoint, the tasks run against that one OpenAI-compatible chat endpoint.
    """
    if endpoint_url is None:
        if model is not None:
            raise ConfigError("--model names the model behind --endpoint; give both, or neither")
        overrides: dict[str, Any] = {
            "seeds": seeds,
            "devices": list(serials) if serials else device_count,
            "builds_file": builds_file,
            "builds": build_names.split(",") if build_names else None,
            "reference": reference,
            "margin": margin,
            "serving": "side-by-side" if side_by_side else None,
            "adaptive": False if no_adaptive else None,
            "max_steps": max_steps,
            "max_attempts": max_attempts,
            "run_dir": run_dir,
            "cluster": cluster,
        }
        if no_bars:
            overrides["bars"] = False
        run_from_path(list(tasks), **overrides)
        return
    if model is None:
        raise ConfigError("--endpoint needs --model: the model name that endpoint serves")
    if any(is_grid_file(t) for t in tasks):
        raise ConfigError("a grid file names its own builds: drop --endpoint, or pass task files instead")
    if cluster is not None:
        raise ConfigError("--cluster runs grids: drop --endpoint, or run the tasks without --cluster")
    _run_endpoint(
        tasks,
        endpoint_url,
        model,
        seeds or 1,
        serials,
        run_dir,
        max_steps,
        images,
        no_structured_output,
        json_object,
        build_name,
        api_key,
        max_tokens,
        timeout_s,
        max_attempts or 3,
        phone_port,
    )


def _run_endpoint(
    tasks: tuple[Path, ...],
    endpoint_url: str,
    model: str,
    seeds: int,
    serials: tuple[str, ...],
    run_dir: Path | None,
    max_steps: int | None,
    images: bool,
    no_structured_output: bool,
    json_object: bool,
    build_name: str,
    api_key: str,
    max_tokens: int,
    timeout_s: float,
    max_attempts: int,
    phone_port: int,
) -> None:
    """Run TASK files (or folders of them) against one OpenAI-compatible chat endpoint."""
    console = Console(highlight=False, soft_wrap=True)
    check_endpoint_url(endpoint_url)
    loaded = _with_max_steps(load_tasks(list(tasks)), max_steps)
    if not loaded:
        raise ConfigError(f"no task files found in {', '.join(map(str, tasks))}")
    endpoint = Endpoint(
        base_url=endpoint_url,
        model=model,
        api_key=api_key,
        structured_output=not no_structured_output and not json_object,
        json_object_schema=json_object and not no_structured_output,
        accepts_images=images,
        max_tokens=max_tokens,
        timeout_s=timeout_s,
    )
    manifest = BuildManifest(
        name=build_name,
        scheme="endpoint",
        engine="endpoint",
        model=model,
        sampling={"temperature": endpoint.temperature, "top_p": endpoint.top_p, "max_tokens": max_tokens},
        accepts_images=images,
    )
    config: dict[str, Any] = {
        "command": "run",
        "tasks": [str(t) for t in tasks],
        "endpoint": endpoint_url,
        "model": model,
        "seeds": seeds,
        "max_steps": max_steps,
        "images": images,
        "structured_output": "json_object" if endpoint.json_object_schema else endpoint.structured_output,
        "max_tokens": max_tokens,
        "device": list(serials),
    }
    if run_dir is None:
        run_dir = Path("runs") / f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{build_name}"
    store = RunStore(run_dir)
    store.open(new_manifest(run_dir.name, config, loaded, [manifest]))
    cells = [Cell(build_name, task, seed) for task in loaded for seed in range(seeds)]
    try:
        with devices_for_run(serials, console, phone_port) as devices:
            on = ", ".join(d.serial for d in devices)
            console.print(
                f"run [bold]{run_dir}[/]: {len(loaded)} task(s) × {seeds} seed(s) on {on}, "
                f"model {model} at {endpoint_url}"
            )
            summary, usage = play_build(
                cells, devices, endpoint, manifest, store, console, max_attempts=max_attempts
            )
        write_engine_usage(run_dir, build_name, usage)
    finally:
        store.close()
    console.print(summary_table(summary))
    console.print(f"run directory: {run_dir}")
    problems = summary_problems(summary, max_attempts)
    if problems:
        raise InfraError("; ".join(problems) + ". Fix the cause and rerun the same command to continue.")
