"""`agent-eval fidelity RUN_DIR`: the run's recorded steps replayed to every build (docs/fidelity.md)."""

from __future__ import annotations

from pathlib import Path

import click

from agent_eval.fidelity.select import (
    check_against_run,
    probe_builds,
    say_changed_weights,
    tokenizer_dir,
)
from agent_eval.rundir import FIDELITY_FILE


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
    from agent_eval.rundir import read_run_settings

    builds = load_builds(builds_file)
    ref = reference or read_run_settings(run_dir).reference or builds.reference.name
    wanted = tuple(n.strip() for n in names.split(",") if n.strip())
    played = check_against_run(run_dir, builds, file_given=builds_file is not None)
    chosen = probe_builds(builds, wanted, ref, click.echo)
    say_changed_weights(chosen, played, click.echo)
    result = run_fidelity(
        run_dir,
        chosen,
        ref,
        steps_from=StepsFrom(steps_from),
        top_k=top_k,
        decode=not no_decode,
        max_steps=max_steps,
        tokenizer=tokenizer_dir(builds.get(ref), builds),
        say=click.echo,
    )
    print_summary(result, click.echo)
    click.echo(f"wrote {run_dir / FIDELITY_FILE}")


@click.command("fidelity-power")
@click.argument("run_dir", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option(
    "--orders", type=click.IntRange(1), default=20, show_default=True, help="Random orders of the units."
)
@click.option("--margin", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the random orders.")
def fidelity_power_command(run_dir: Path, orders: int, margin: float | None, seed: int) -> None:
    """How many episodes the episode verdict and the fidelity verdict each needed to flag every build,
    from a finished run with fidelity probes (no engine is started)."""
    from agent_eval.fidelity.power import POWER_FILE, power_markdown, power_study, write_power

    with click.progressbar(length=orders, label="orders") as bar:
        study = power_study(
            run_dir, orders=orders, margin=margin, seed=seed, progress=lambda _: bar.update(1)
        )
    click.echo(power_markdown(study))
    write_power(run_dir, study)
    click.echo(f"wrote {run_dir / POWER_FILE}")
