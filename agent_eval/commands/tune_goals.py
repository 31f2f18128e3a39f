"""`agent-eval tune goals`: what the goals files (goals/*.yaml) can say, and a seed's sample of them written
as task files, so that `agent-eval validate DIR` plays each instance's oracle.

The generating is tune/generator.py; this module counts and writes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import click
import yaml

from agent_eval.errors import ConfigError
from agent_eval.task import Task
from agent_eval.tune.collect import EpisodePlan, plan_generated
from agent_eval.tune.collect_settings import settle_generated
from agent_eval.tune.generator import GoalInstance, enumerate_goals, load_families, record, sample

GOALS_HELP = "A goals file, or a folder of them."
GOALS_OPTION = click.option(
    "--goals", type=click.Path(path_type=Path), default=Path("goals"), show_default=True, help=GOALS_HELP
)


def generated_goals_options(command: Callable[..., None]) -> Callable[..., None]:
    """`tune collect`'s --generated-goals and --goals."""
    counted = click.option(
        "--generated-goals",
        default=0,
        show_default=True,
        type=click.IntRange(min=0),
        help="Also play this many training instances drawn from --goals with --seed, one episode each "
        '(docs/tuning.md, "Goals from a generator").',
    )
    return counted(GOALS_OPTION(command))


def generated_for_collect(
    goals_path: Path, count: int, seed: int, out_dir: Path, first_index: int, *, played_before: bool
) -> tuple[list[Task], dict[str, str], list[EpisodePlan]]:
    """`tune collect --generated-goals N`: N training instances drawn with the collection's seed, their
    families and one episode plan each (none, and nothing written, when N is 0)."""
    if not count:
        settle_generated(out_dir, None, played_before=played_before)
        return [], {}, []
    families = load_families(goals_path)
    drawn = sample(families, seed, count, "train")
    settle_generated(out_dir, record(families, seed, drawn), played_before=played_before)
    tasks = [made.task for made in drawn]
    return tasks, {made.task.id: made.family for made in drawn}, plan_generated(tasks, first_index, seed)


def _say_counts(every: list[GoalInstance]) -> None:
    goals = {g.task.goal for g in every}
    click.echo(f"{len(every)} distinct instances, {len(goals)} distinct goal texts")
    by_kind = Counter((g.kind, g.split) for g in every)
    for kind in sorted({k for k, _ in by_kind}):
        click.echo(
            f"  {kind:<16} train {by_kind[(kind, 'train')]:>6}  held out {by_kind[(kind, 'held_out')]:>6}"
        )
    by_template = Counter(g.template for g in every)
    click.echo("  per template: " + ", ".join(f"{t} {n}" for t, n in sorted(by_template.items())))


def _write(drawn: list[GoalInstance], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise ConfigError(f"{out} is not empty: write generated tasks into a new folder")
    for made in drawn:
        text = yaml.safe_dump(made.raw, sort_keys=False, allow_unicode=True, width=120)
        (out / f"{made.task.id}.yaml").write_text(text, encoding="utf-8")


@click.command("goals")
@click.option(
    "--goals",
    "goals_path",
    type=click.Path(path_type=Path),
    default=Path("goals"),
    show_default=True,
    help=GOALS_HELP,
)
@click.option("--seed", default=0, show_default=True, help="Seeds the sample: the same seed, the same tasks.")
@click.option("--count", default=0, show_default=True, type=click.IntRange(min=0), help="Instances to draw.")
@click.option("--split", default="train", show_default=True, type=click.Choice(["train", "held_out"]))
@click.option(
    "--write",
    "write_to",
    type=click.Path(path_type=Path),
    help="Write the drawn instances here as task files (then: agent-eval validate DIR).",
)
def goals_command(goals_path: Path, seed: int, count: int, split: str, write_to: Path | None) -> None:
    """Count what the goals files can say; with --count, draw that many instances of a split."""
    families = load_families(goals_path)
    _say_counts(list(enumerate_goals(families)))
    if not count:
        return
    drawn = sample(families, seed, count, "train" if split == "train" else "held_out")
    click.echo(f"drew {len(drawn)} {split} instances with seed {seed}")
    for made in drawn:
        click.echo(f"  {made.task.id:<34} {made.kind:<12} {made.style:<11} {made.task.goal}")
    if write_to is not None:
        _write(drawn, write_to)
        kept = record(families, seed, drawn)
        (write_to / "generated.json").write_text(kept.model_dump_json(indent=2) + "\n", encoding="utf-8")
        click.echo(f"wrote {len(drawn)} task files and generated.json to {write_to}")
