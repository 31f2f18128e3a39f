"""`agent-eval tune [collect | train | ship]`: make the tuned default agent again (each stage resumable).

`agent-eval tune` alone runs all three: demonstrations on virtual phones → LoRA training → the adapter and
its manifest under adapters/. Work files go to --work (default runs/tune/); the stages' code is in tune/. Tune
reads --tasks with its subfolders: the Settings tasks and every app family of tasks/apps/.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import click

from agent_eval.builds.spec import models_dir, repo_root
from agent_eval.commands.tune_goals import generated_for_collect, generated_goals_options, goals_command
from agent_eval.tune.arithmetic import ARITHMETIC_CHOICES, choose_arithmetic
from agent_eval.tune.collect import (
    DONE_CAP_KEEPS,
    PROMPT_FORMATS,
    add_collect_time,
    assemble,
    finished_episodes,
    held_out_goals,
    plan_episodes,
    run_plans,
    training_tasks,
)
from agent_eval.tune.collect_settings import WORDINGS, CollectSettings, read_settings, settle_settings
from agent_eval.tune.collect_settings import read_generated as generated_record
from agent_eval.tune.dataset import DatasetSummary, read_dataset
from agent_eval.tune.families import family, tune_tasks

if TYPE_CHECKING:
    from agent_eval.tune.train import TrainConfig, TrainState

DEFAULT_BASE = "smollm2-135m-instruct/bf16"
DEFAULT_ADAPTER = "adapters/smollm2-135m-agent"
BASE_HELP = f"Base checkpoint (default models/{DEFAULT_BASE})."


def _work(ctx: click.Context) -> Path:
    work: Path = ctx.obj["work"]
    work.mkdir(parents=True, exist_ok=True)
    return work


@click.group("tune", invoke_without_command=True)
@click.option("--work", type=click.Path(path_type=Path), default=Path("runs/tune"), show_default=True)
@click.option(
    "--tasks", "tasks_path", type=click.Path(path_type=Path), default=Path("tasks"), show_default=True
)
@click.pass_context
def tune_group(ctx: click.Context, work: Path, tasks_path: Path) -> None:
    """Tune the default model on the phone's own demonstrations (all three stages when no stage is named)."""
    ctx.obj = {"work": work, "tasks": tasks_path}
    if ctx.invoked_subcommand is None:
        ctx.invoke(collect_command)
        ctx.invoke(train_command)
        ctx.invoke(ship_command)


@tune_group.command("collect")
@click.option(
    "--episodes-per-task",
    default=16,
    show_default=True,
    help="Seeds per training task (81 tasks over every family: ~6,400 expert steps, as 52 gave on 35).",
)
@click.option("--phones", default=2, show_default=True, help="Virtual phones played in parallel.")
@click.option("--phone-port", default=5554, show_default=True, help="First console port to try.")
@click.option(
    "--prompt-format",
    default="compact-noted",
    show_default=True,
    type=click.Choice(sorted(PROMPT_FORMATS)),
    help="The agent whose prompts the examples hold (the builds' `agent:` must send them).",
)
@click.option("--seed", default=0, show_default=True)
@click.option(
    "--shade-detours/--no-shade-detours",
    default=True,
    show_default=True,
    help="Detours may also pull the quick-settings shade down (the expert then finds its way out).",
)
@click.option(
    "--copies",
    default=2,
    show_default=True,
    type=click.IntRange(min=1),
    help="Keep identical (prompt, answer) examples up to this many times (1: each once).",
)
@click.option(
    "--shade-contrast/--no-shade-contrast",
    default=True,
    show_default=True,
    help="Contrastive done/tap pairs on the quick-settings shade's tiles too (without them, adapters "
    "tapped a tile that was already on: docs/tuning.md).",
)
@click.option(
    "--done-cap-keeps",
    default="final",
    show_default=True,
    type=click.Choice(DONE_CAP_KEEPS),
    help="`done` targets are capped at 18% of the examples; which the cap keeps first: the contrastive ones "
    "or the episodes' own final ones (re-assembles a finished collection without playing it again).",
)
@generated_goals_options
@click.pass_context
def collect_command(
    ctx: click.Context,
    episodes_per_task: int,
    phones: int,
    phone_port: int,
    prompt_format: str,
    seed: int,
    shade_detours: bool,
    copies: int,
    shade_contrast: bool,
    done_cap_keeps: str,
    generated_goals: int,
    goals: Path,
) -> None:
    """Play demonstrations (oracle, detours with recovery) and write data/dataset.jsonl."""
    from agent_eval.device.backend import DeviceRequest, device_backend

    out = _work(ctx) / "data"
    out.mkdir(parents=True, exist_ok=True)
    everything = tune_tasks(ctx.obj["tasks"])
    tasks = training_tasks(everything)
    held_out = held_out_goals(everything)
    settings = CollectSettings(
        prompt_format=prompt_format,
        seed=seed,
        shade_detours=shade_detours,
        families=sorted({family(t) for t in tasks}),
        wordings=WORDINGS,
        contrast=True,
        shade_contrast=shade_contrast,
    )
    finished = finished_episodes(out)
    settle_settings(out, settings, played_before=bool(finished))
    forbidden = frozenset(w for words in held_out.values() for w in words)
    plans = plan_episodes(tasks, episodes_per_task, seed, forbidden)
    made = generated_for_collect(goals, generated_goals, seed, out, len(plans), played_before=bool(finished))
    tasks, plans = [*tasks, *made[0]], [*plans, *made[2]]
    todo = [p for p in plans if p.index not in finished]
    click.echo(
        f"{len(plans)} episodes planned over {len(tasks)} training tasks "
        f"({', '.join(settings.families)}), {len(todo)} to play"
    )
    started = time.perf_counter()
    if todo:
        request = DeviceRequest(count=phones, phone_port=phone_port)  # the backend skips busy ports
        say = lambda text: click.echo(text, err=True)  # noqa: E731
        with (
            device_backend().devices(request, say) as devices,
            click.progressbar(length=len(todo), label="episodes") as bar,
        ):
            by_id = {t.id: t for t in tasks}
            tick = lambda _: bar.update(1)  # noqa: E731
            played = (todo, by_id, devices, out, prompt_format, tick, settings.detour_kinds, forbidden)
            run_plans(*played, shade_contrast=shade_contrast)
    seconds = add_collect_time(out, time.perf_counter() - started)
    families = {t.id: family(t) for t in tasks} | made[1]
    summary = assemble(out, plans, seconds, phones, copies, held_out, families, done_cap_keeps)
    _say_dataset(summary)


def collect_rate(s: DatasetSummary) -> str:
    """The collect's speed in the unit its target is set in (≤ 10 min per 2,000 expert steps on 2 cores)."""
    if not s.played_steps:
        return "no expert steps played"
    per_2000 = s.collect_seconds / s.played_steps * 2000
    return f"{per_2000:.0f} s per 2,000 expert steps ({s.played_steps} steps in {s.collect_seconds:.0f} s)"


def _say_dataset(s: DatasetSummary) -> None:
    click.echo(
        f"dataset {s.hash[:12]}: {s.examples} examples ({s.played_steps} expert steps played in "
        f"{s.played_episodes} episodes, {s.collect_seconds:.0f} s on {s.phones} phones; duplicates and "
        f"{s.dropped_done} surplus done dropped)"
    )
    click.echo(f"  collect: {collect_rate(s)}")
    click.echo("  per action: " + ", ".join(f"{k} {v}" for k, v in s.per_action.items()))
    click.echo("  per source: " + ", ".join(f"{k} {v}" for k, v in s.per_source.items()))
    click.echo("  per task:   " + ", ".join(f"{k} {v}" for k, v in s.per_task.items()))
    for name, tally in s.played_per_family.items():
        click.echo(
            f"  {name}: {tally.get('succeeded', 0)}/{tally.get('episodes', 0)} episodes succeeded, "
            f"{tally.get('steps', 0)} expert steps, {tally.get('contrast', 0)} contrastive, "
            f"{s.per_family.get(name, 0)} examples kept"
        )


@tune_group.command("train")
@click.option(
    "--base", type=click.Path(path_type=Path), help=f"Base checkpoint (default models/{DEFAULT_BASE})."
)
@click.option(
    "--epochs",
    default=3.25,
    show_default=True,
    help="Token budget in passes over the first epoch (fractions allowed); focused epochs are shorter.",
)
@click.option(
    "--max-tokens",
    default=2_300_000,
    show_default=True,
    type=click.IntRange(min=0),
    help="Cap on the training tokens whatever --epochs gives (0: no cap); 2.3 M took 52.6-62.5 min on 2 "
    "cores, and ~75 min at the 440-500 tok/s a long tight-width run fell to (docs/tuning.md).",
)
@click.option(
    "--max-minutes",
    default=57.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="Cap on the training time whatever the tokens (0: no cap): a slower host trains fewer tokens, "
    "and the learning rate still decays to its end. The shipped adapter trained 86% of its budget in 57 "
    "min; cut to ~1 pass over the data, an adapter was far worse (docs/tuning.md).",
)
@click.option("--rank", default=8, show_default=True, help="LoRA rank (8 → ~4.9 MB in bf16).")
@click.option("--lr", "learning_rate", default=1.5e-3, show_default=True)
@click.option(
    "--lora-from-layer",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="LoRA on the decoder layers from this index up (0: all 30); the backward pass stops there, so "
    "training is faster per token (docs/tuning.md).",
)
@click.option(
    "--threads", default=2, show_default=True, help="torch threads (1 is faster on a busy machine)."
)
@click.option(
    "--width-multiple",
    default=64,
    show_default=True,
    type=click.IntRange(min=1),
    help="Pad each batch's width to a multiple of this (64: a handful of shapes; 1: tight). A tight run's "
    "rate fell within its process, a padded one held (docs/tuning.md).",
)
@click.option(
    "--task-floor", default=0, show_default=True, help="Repeat a small task's examples up to ~this many."
)
@click.option(
    "--focus-loss",
    default=0.0,
    show_default=True,
    help="From epoch 2, train on examples whose worst answer-token loss is ≥ this (0: every example).",
)
@click.option("--easy-share", default=0.25, show_default=True, help="... and this share of the others.")
@click.option(
    "--arithmetic",
    type=click.Choice(list(ARITHMETIC_CHOICES)),
    default="auto",
    show_default=True,
    help="bf16: the base in bf16 under bf16 autocast (fast where the CPU has bf16 instructions); "
    "float32: every product in float32 (~30x faster than bf16 on an AVX2-only CPU; docs/tuning.md); "
    "auto: bf16 where the CPU has avx512_bf16 or amx_bf16, else float32.",
)
@click.option("--seed", default=0, show_default=True)
@click.pass_context
def train_command(
    ctx: click.Context,
    base: Path | None,
    epochs: float,
    max_tokens: int,
    max_minutes: float,
    rank: int,
    learning_rate: float,
    lora_from_layer: int,
    threads: int,
    width_multiple: int,
    task_floor: int,
    focus_loss: float,
    easy_share: float,
    arithmetic: str,
    seed: int,
) -> None:
    """LoRA-train on data/dataset.jsonl into train/ (continues from train/checkpoint when there is one)."""
    from agent_eval.tune.train import TrainConfig, settle_dataset, train

    work = _work(ctx)
    examples, summary = read_dataset(work / "data")
    settle_dataset(work / "train", summary.hash)
    chosen = choose_arithmetic(arithmetic)
    click.echo(f"arithmetic: {chosen.arithmetic} ({chosen.why})")
    cfg = TrainConfig(
        rank=rank,
        alpha=2 * rank,
        learning_rate=learning_rate,
        epochs=epochs,
        max_tokens=max_tokens or None,
        max_minutes=max_minutes or None,
        seed=seed,
        threads=threads,
        lora_from_layer=lora_from_layer,
        width_multiple=width_multiple,
        task_floor=task_floor,
        focus_loss=focus_loss or None,
        easy_share=easy_share,
        bf16_autocast=chosen.bf16_autocast,
        base_dtype=chosen.base_dtype,
    )
    out = work / "train"
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(asdict(cfg)) + "\n", encoding="utf-8")
    click.echo(f"training on {len(examples)} examples of dataset {summary.hash[:12]}")
    state = train(examples, base or models_dir() / DEFAULT_BASE, out, cfg)
    rate = state.tokens / state.seconds if state.seconds else 0.0
    click.echo(
        f"trained {state.step} steps, {state.tokens} tokens in {state.seconds:.0f} s ({rate:.0f} tok/s); "
        f"loss {state.losses[0]:.3f} → {state.losses[-1]:.3f}; examples per epoch {state.epoch_sizes}"
    )
    click.echo(f"  ended by {_ended_by(state, cfg)}")
    if warning := short_of_budget(state):
        click.echo(f"  warning: {warning}")


# The shipped adapter trained 86% of its token budget under the 57-minute cap; far less made worse agents.
SHORT_OF_BUDGET = 0.75


def short_of_budget(state: TrainState) -> str | None:
    """A warning when the clock ended the run well short of its token budget (a slow host), else None."""
    if not state.budget_tokens or state.tokens >= SHORT_OF_BUDGET * state.budget_tokens:
        return None
    return (
        f"the time cap ended the run at {state.tokens / state.budget_tokens:.0%} of its token budget, where "
        "the shipped adapter trained 86%; adapters cut to about one pass over the data were far worse "
        "(docs/tuning.md). On this host, train with --max-minutes 0 for the whole budget."
    )


def _ended_by(state: TrainState, cfg: TrainConfig) -> str:
    if state.tokens < state.budget_tokens:  # a finished run short of its tokens was ended by the clock
        return (
            f"the time cap ({cfg.max_minutes:g} min) at {state.tokens} of {state.budget_tokens} budgeted "
            "tokens"
        )
    return f"the token budget ({state.budget_tokens} tokens)"


@tune_group.command("ship")
@click.option(
    "--base", type=click.Path(path_type=Path), help=f"Base checkpoint (default models/{DEFAULT_BASE})."
)
@click.option(
    "--dest", type=click.Path(path_type=Path), help=f"Where the adapter goes (default {DEFAULT_ADAPTER})."
)
@click.pass_context
def ship_command(ctx: click.Context, base: Path | None, dest: Path | None) -> None:
    """Write the trained adapter (bf16 safetensors) and manifest.json for `builds prepare` to merge."""
    from agent_eval.tune.ship import ship
    from agent_eval.tune.train import TrainConfig, TrainState

    work = _work(ctx)
    _, summary = read_dataset(work / "data")
    cfg = TrainConfig(**json.loads((work / "train" / "config.json").read_text(encoding="utf-8")))
    state = TrainState(**json.loads((work / "train" / "train_state.json").read_text(encoding="utf-8")))
    held_out = sorted(t.id for t in tune_tasks(ctx.obj["tasks"]) if t.split == "held_out")
    manifest = ship(
        train_dir=work / "train",
        dataset=summary,
        held_out=held_out,
        base_dir=base or models_dir() / DEFAULT_BASE,
        cfg=cfg,
        state=state,
        dest=dest or repo_root() / DEFAULT_ADAPTER,
        prompt_format=summary.prompt_format,
        collect=read_settings(work / "data").model_dump(mode="json"),
        generated=generated_record(work / "data"),
    )
    click.echo(f"shipped adapter {manifest.adapter_sha256[:12]} ({manifest.adapter_bytes / 2**20:.1f} MiB)")
    rate = state.tokens / state.seconds if state.seconds else 0.0
    click.echo(
        f"  collect: {collect_rate(summary)}; train: {state.seconds / 60:.1f} min "
        f"({state.tokens} tokens at {rate:.0f} tok/s, {state.step} steps; ended by {_ended_by(state, cfg)})"
    )


tune_group.add_command(goals_command)
