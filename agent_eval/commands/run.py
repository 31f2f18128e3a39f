"""`agent-eval run TASKS…|GRID`: a grid (every build served here) or, with --endpoint, one chat endpoint.

The command only reads flags and hands over to the grid; --endpoint makes a builds set of that one build.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from agent_eval.builds.spec import BuildSet, parse_builds
from agent_eval.chat.client import check_endpoint_url
from agent_eval.device.backend import DeviceRequest, device_backend
from agent_eval.errors import ConfigError
from agent_eval.grid import is_grid_file, run_from_path, run_grid, spec_from


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
    "--first-seed",
    type=click.IntRange(min=0),
    help="First seed of a grid (default 0): another range replicates a run on new episodes.",
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
    "--navigation-probes",
    type=click.Choice(["off", "stopped", "all"]),
    help="Navigation probes (stopping taken away): for episodes that stopped early, all, or none. "
    "Default: the grid's (off).",
)
@click.option(
    "--run-dir", type=click.Path(path_type=Path), help="Default: runs/<date>-<name>. Reuse to continue."
)
@click.option("--max-steps", type=click.IntRange(min=1), help="Override every task's step budget.")
@click.option("--images/--no-images", default=False, show_default=True, help="Send the screenshot too.")
@click.option(
    "--no-structured-output", is_flag=True, help="Do not send a JSON schema (structured_output: off)."
)
@click.option(
    "--json-object",
    is_flag=True,
    help="llama.cpp style: response_format json_object with a schema (structured_output: json_object).",
)
@click.option("--build-name", default="endpoint", show_default=True, help="Name of this build in the run.")
@click.option(
    "--api-key-env",
    default="AGENT_EVAL_API_KEY",
    show_default=True,
    help="Environment variable holding the endpoint's API key (the build's api_key_env).",
)
@click.option("--api-key", help="The API key itself (kept in this process only; prefer --api-key-env).")
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
def run_command(tasks: tuple[Path, ...], **flags: Any) -> None:
    """Run TASK files, folders of them, or a grid file.

    Without --endpoint, every build of the builds file (builds/default.yaml) is prepared if needed, served on
    the pinned CPU engine and run on the same (task, seed) pairs; the scorecard and report follow.
    With --endpoint, the tasks run the same way against a builds set of one build: that chat endpoint.
    """
    if flags["endpoint_url"] is None:
        if flags["model"] is not None:
            raise ConfigError("--model names the model behind --endpoint; give both, or neither")
        run_from_path(list(tasks), **_grid_overrides(flags))
        return
    if flags["model"] is None:
        raise ConfigError("--endpoint needs --model: the model name that endpoint serves")
    if any(is_grid_file(t) for t in tasks):
        raise ConfigError("a grid file names its own builds: drop --endpoint, or pass task files instead")
    if flags["cluster"] is not None:
        raise ConfigError("--cluster runs served builds: drop --endpoint, or run the tasks without --cluster")
    for flag in ("builds_file", "build_names", "reference"):
        if flags[flag] is not None:
            raise ConfigError(f"--{flag.replace('_', '-')} picks served builds: drop it, or drop --endpoint")
    _grid_of_one_build(list(tasks), _endpoint_build(flags), flags)


def _endpoint_build(flags: dict[str, Any]) -> BuildSet:
    """The one-build builds set `--endpoint URL --model M` stands for (docs/builds.md, endpoint builds)."""
    check_endpoint_url(flags["endpoint_url"])
    if flags["api_key"] is not None:  # kept in this process's environment only, never in a run file
        os.environ[flags["api_key_env"]] = flags["api_key"]
    structured = "off" if flags["no_structured_output"] else "json_object" if flags["json_object"] else None
    build = {
        "name": flags["build_name"],
        "reference": True,
        "scheme": "endpoint",
        "engine": "endpoint",
        "base_url": flags["endpoint_url"],
        "model": flags["model"],
        "accepts_images": flags["images"],
        "sampling": {"max_tokens": flags["max_tokens"]},
        "request_timeout_s": flags["timeout_s"],
        "structured_output": structured or "json_schema",
        "api_key_env": flags["api_key_env"],
    }
    return parse_builds([build], "the command line (--endpoint)")


def _grid_of_one_build(tasks: list[Path], builds: BuildSet, flags: dict[str, Any]) -> None:
    """The grid on the given (or a connected, else a started) phone, with the endpoint as its only build."""
    name = builds.reference.name
    overrides = {**_grid_overrides(flags), "seeds": flags["seeds"] or 1, "adaptive": False}
    for key in ("builds_file", "builds", "reference", "cluster", "run_dir", "bars"):
        overrides.pop(key, None)
    spec = spec_from(tasks, **overrides)
    run_dir = flags["run_dir"] or Path("runs") / f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{name}"
    console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
    # As before the grid ran it: the named phones, else a connected one, else phones started here.
    serials, count = tuple(flags["serials"]), flags["device_count"] or 0
    request = DeviceRequest(serials=serials, count=count, phone_port=flags["phone_port"])

    def say(text: str) -> None:
        console.print(f"[dim]{text}")

    with device_backend(spec.device_backend).devices(request, say) as on:
        bars = sys.stdout.isatty() and not flags["no_bars"]
        result = run_grid(spec, run_dir=run_dir, console=console, bars=bars, devices=on, builds=builds)
    result.raise_for_problems()


def _grid_overrides(flags: dict[str, Any]) -> dict[str, Any]:
    """The flags as grid fields (None: keep the grid file's), see docs/grid.md."""
    names = flags["build_names"]
    overrides: dict[str, Any] = {
        "seeds": flags["seeds"],
        "first_seed": flags["first_seed"],
        "devices": list(flags["serials"]) if flags["serials"] else flags["device_count"],
        "builds_file": flags["builds_file"],
        "builds": names.split(",") if names else None,
        "reference": flags["reference"],
        "margin": flags["margin"],
        "serving": "side-by-side" if flags["side_by_side"] else None,
        "adaptive": False if flags["no_adaptive"] else None,
        "max_steps": flags["max_steps"],
        "max_attempts": flags["max_attempts"],
        "run_dir": flags["run_dir"],
        "cluster": flags["cluster"],
        "navigation_probes": flags["navigation_probes"],
    }
    if flags["no_bars"]:
        overrides["bars"] = False
    return overrides
