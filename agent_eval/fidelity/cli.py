"""`agent-eval fidelity RUN_DIR`: replay the run's recorded steps to every build, step by step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from agent_eval.builds.spec import Build, BuildSet

# prompt_logprobs over token ids is a vLLM API; llama.cpp's server has no equivalent.
PROBE_ENGINES = frozenset({"vllm-cpu"})


def probe_builds(
    builds: BuildSet, names: tuple[str, ...], reference: str, say: Callable[[str], None] = click.echo
) -> list[Build]:
    """The builds to probe: those named (all by default) that can answer prompt_logprobs on this host."""
    from agent_eval.builds.host import unavailable_reason

    chosen = [builds.get(n) for n in names] if names else list(builds.builds)
    if reference not in {b.name for b in chosen}:
        chosen.insert(0, builds.get(reference))
    kept = []
    for build in chosen:
        why = unavailable_reason(build) if build.optional else None
        if build.engine not in PROBE_ENGINES:
            why = f"engine {build.engine} cannot return prompt_logprobs"
        if why is not None and not names:
            say(f"skipping {build.name}: {why}")
            continue
        kept.append(build)
    return kept


@click.command("fidelity")
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--builds", "names", default="", help="Comma-separated builds to probe (default: all that can)."
)
@click.option("--builds-file", type=click.Path(path_type=Path, dir_okay=False), default=None)
@click.option("--reference", default=None, help="Default: as run.json or the builds file says.")
@click.option(
    "--steps-from",
    type=click.Choice(["reference", "oracle", "all"]),
    default="reference",
    show_default=True,
    help="Whose recorded steps to replay.",
)
@click.option("--top-k", type=click.IntRange(1, 20), default=20, show_default=True)
@click.option(
    "--max-steps", type=click.IntRange(1), default=None, help="Probe a fixed random subset of steps."
)
@click.option("--no-decode", is_flag=True, help="Never decode: agreement becomes a lower bound.")
def fidelity_command(
    run_dir: Path,
    names: str,
    builds_file: Path | None,
    reference: str | None,
    steps_from: str,
    top_k: int,
    no_decode: bool,
    max_steps: int | None,
) -> None:
    """Teacher-forced fidelity: every build on the run's recorded prompts, against the reference."""
    from agent_eval.builds.spec import load_builds
    from agent_eval.fidelity.run import run_fidelity
    from agent_eval.fidelity.steps import StepsFrom
    from agent_eval.fidelity.summary import print_summary
    from agent_eval.scoring.run_files import read_run_settings

    builds = load_builds(builds_file)
    ref = reference or read_run_settings(run_dir).reference or builds.reference.name
    wanted = tuple(n.strip() for n in names.split(",") if n.strip())
    chosen = probe_builds(builds, wanted, ref)
    result = run_fidelity(
        run_dir,
        chosen,
        ref,
        steps_from=StepsFrom(steps_from),
        top_k=top_k,
        decode=not no_decode,
        max_steps=max_steps,
        say=click.echo,
    )
    print_summary(result, click.echo)
    click.echo(f"wrote {run_dir / 'fidelity.json'}")
