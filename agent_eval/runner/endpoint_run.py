"""`agent-eval run TASKS… --endpoint URL --model NAME --seeds N`: each (task, seed) against one chat endpoint.

Picks or starts the device, opens (or continues) the run directory, prints outcomes as episodes finish.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from agent_eval.agent.agents import get_agent
from agent_eval.builds.client import ChatClient, Usage, check_endpoint_url
from agent_eval.builds.endpoint import Endpoint
from agent_eval.device.backend import DeviceRequest, EpisodeDevice, device_backend
from agent_eval.errors import ConfigError, InfraError
from agent_eval.records import BuildManifest, EngineRecord, Outcome
from agent_eval.rundir import RunStore, write_engine_record
from agent_eval.runner.lines import OUTCOME_STYLE, episode_line, unfinished_problems
from agent_eval.runner.loop import BuildAgent, Cell, RunSummary, run_cells
from agent_eval.runner.manifest import new_manifest
from agent_eval.task import Task, load_tasks


def devices_for_run(
    serials: Sequence[str], console: Console, phone_port: int = 5554
) -> AbstractContextManager[list[EpisodeDevice]]:
    """The devices to run on: those asked for, else a connected one, else a virtual phone started here."""
    request = DeviceRequest(serials=tuple(serials), phone_port=phone_port)
    return device_backend().devices(request, lambda text: console.print(f"[dim]{text}"))


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
    devices: Sequence[EpisodeDevice],
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
        policy = get_agent(manifest.agent).policy(client)
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
    write_engine_record(run_dir, engine_record(build, usage))


def _endpoint_build(
    endpoint_url: str,
    model: str,
    api_key: str,
    build_name: str,
    no_structured_output: bool,
    json_object: bool,
    images: bool,
    max_tokens: int,
    timeout_s: float,
) -> tuple[Endpoint, BuildManifest]:
    """The endpoint to ask, and the manifest that stands for it as a build in the run."""
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
    return endpoint, manifest


def _run_config(
    tasks: tuple[Path, ...], endpoint: Endpoint, seeds: int, max_steps: int | None, serials: tuple[str, ...]
) -> dict[str, Any]:
    """The run's options as run.json records them (a continued run must give the same)."""
    return {
        "command": "run",
        "tasks": [str(t) for t in tasks],
        "endpoint": endpoint.base_url,
        "model": endpoint.model,
        "seeds": seeds,
        "max_steps": max_steps,
        "images": endpoint.accepts_images,
        "structured_output": "json_object" if endpoint.json_object_schema else endpoint.structured_output,
        "max_tokens": endpoint.max_tokens,
        "device": list(serials),
    }


def run_endpoint(
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
    endpoint, manifest = _endpoint_build(
        endpoint_url,
        model,
        api_key,
        build_name,
        no_structured_output,
        json_object,
        images,
        max_tokens,
        timeout_s,
    )
    config = _run_config(tasks, endpoint, seeds, max_steps, serials)
    run_dir = run_dir or Path("runs") / f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{build_name}"
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
    _raise_for_problems(summary, max_attempts)


def _raise_for_problems(summary: RunSummary, max_attempts: int) -> None:
    problems = unfinished_problems(
        summary.failed, summary.retired_devices, summary.not_run, summary.gave_up, max_attempts
    )
    if problems:
        raise InfraError("; ".join(problems) + ". Fix the cause and rerun the same command to continue.")
