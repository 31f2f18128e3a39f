"""The scorecard of a run (scorecard.json): a score per build and the regression verdicts, from episodes.

`score_run` recomputes it from a run directory; `score_episodes` from records already in memory.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pydantic import Field

from agent_eval.errors import ConfigError, RunStoreError
from agent_eval.records import EngineRecord, EpisodeRecord, StepRecord, StrictModel
from agent_eval.rundir import (
    EPISODES_FILE,
    MANIFEST_FILE,
    SettledEpisodes,
    infra_attempts_by_task,
    read_done_on_recorded_steps,
    read_engines,
    read_episodes,
    read_probes,
    read_run_settings,
    read_steps,
    settle_attempts,
)
from agent_eval.rundir.bandwidth import read_ceiling
from agent_eval.scoring.abilities import ability_ladder
from agent_eval.scoring.build_score import BuildScore, build_score
from agent_eval.scoring.decomposition import Decomposition, StepsOf, decompose
from agent_eval.scoring.engine_busy import EngineBusy, engine_busy, seed_levels
from agent_eval.scoring.families import FamilyScore, TaskFacts, family_scores, read_task_entries
from agent_eval.scoring.fidelity_fields import FidelityRow, read_fidelity_rows
from agent_eval.scoring.ladder import Ladder, build_ladder
from agent_eval.scoring.regression import Regression, bits_order, compare_builds
from agent_eval.scoring.splits import SplitScore, read_task_splits, split_scores
from agent_eval.scoring.stats import ALPHA, DEFAULT_MARGIN
from agent_eval.scoring.typing_accuracy import (
    AnswerScore,
    EpisodeKey,
    TypingScore,
    answer_scores,
    typed_step_accuracies,
    typing_scores,
)

SCORECARD_SCHEMA_VERSION = 1


class Scorecard(StrictModel):
    """scorecard.json: everything the report shows, recomputable from the run directory."""

    schema_version: int = Field(SCORECARD_SCHEMA_VERSION, description="Bumped when a field changes meaning.")
    run_id: str = Field(description="The run this scores.")
    reference: str | None = Field(
        description="The reference build; null when the run has none to compare with."
    )
    margin: float = Field(description="Non-inferiority margin δ used for the verdicts.")
    alpha: float = Field(description="Family-wise error rate of the REGRESSION verdicts.")
    episode_records: int = Field(
        description="Lines read from episodes.jsonl (every attempt, infra errors too)."
    )
    builds: list[BuildScore] = Field(
        description="One score per build: the reference first, then by bits per weight."
    )
    regression: Regression | None = Field(
        description="Each build against the reference; null without a reference."
    )
    notes: list[str] = Field(
        default_factory=list, description="What the reader should know before trusting it."
    )
    splits: list[SplitScore] = Field(
        default_factory=list,
        description="Rates per build on training and held-out tasks apart (empty: no held-out task ran).",
    )
    fidelity: list[FidelityRow] | None = Field(
        None, description="Teacher-forced fidelity per build, from fidelity.json; null when not run."
    )
    ladder: Ladder | None = Field(
        None, description="The quantization ladder and its knee; null without rungs (docs/builds.md)."
    )
    engine_busy: list[EngineBusy] | None = Field(
        None, description="Per build and phase, how busy its engine was and why it idled; null: not read."
    )
    families: list[FamilyScore] = Field(
        default_factory=list,
        description="Rates per build and task family, and per split within it (empty: one family ran).",
    )
    typing: list[TypingScore] = Field(
        default_factory=list,
        description="Typing accuracy per build, over all typed steps and per family (empty: none typed).",
    )
    answers: list[AnswerScore] = Field(
        default_factory=list,
        description="Right final answers per build on answer tasks, all and per family (empty: none ran).",
    )
    decomposition: Decomposition | None = Field(
        None,
        description="Navigation with stopping taken away (the run's navigation probes) and the stop "
        "decision scored on its own, per build and against the reference; null: a run scored before it "
        "existed.",
    )


def resolve_reference(
    requested: str | None, recorded: str | None, episodes: Sequence[EpisodeRecord]
) -> str | None:
    """The reference build: asked for, else recorded in run.json, else the one its manifest marks."""
    builds = sorted({e.build for e in episodes})
    for source, name in (("--reference", requested), (MANIFEST_FILE, recorded)):
        if name is not None:
            if name not in builds:
                raise ConfigError(
                    f"reference build {name!r} (from {source}) has no episodes in this run; "
                    f"builds here: {', '.join(builds)}"
                )
            return name
    flagged = sorted(
        {e.build for e in episodes if e.build_manifest is not None and e.build_manifest.reference}
    )
    if len(flagged) > 1:
        raise ConfigError(
            f"several builds say they are the reference ({', '.join(flagged)}); pick one with --reference"
        )
    return flagged[0] if flagged else None


def _score_notes(
    reference: str | None, builds: int, settled: SettledEpisodes, regression: Regression | None
) -> list[str]:
    """What the reader should know about what the scorecard leaves out."""
    notes = []
    if reference is None and builds > 1:
        notes.append("no reference build (none given, none recorded): pass --reference NAME for verdicts")
    unresolved = sum(settled.unresolved.values())
    if unresolved:
        notes.append(
            f"{unresolved} (build, task, seed) ended in an infra error on every attempt and are not scored"
        )
    for comparison in regression.builds if regression else []:
        if comparison.unpaired:
            notes.append(
                f"{comparison.build}: {comparison.unpaired} episodes have no reference episode on the "
                "same (task, seed) and are left out of its verdict"
            )
    return notes


def _build_scores(
    by_build: Mapping[str, list[EpisodeRecord]],
    settled: SettledEpisodes,
    reference: str | None,
    engines: Mapping[str, EngineRecord],
) -> list[BuildScore]:
    """Each build's score: the reference first, then by bits per weight."""
    scores = [
        build_score(
            build,
            eps,
            reference=build == reference,
            infra_attempts_by_task=infra_attempts_by_task(settled, build),
            unresolved=settled.unresolved[build],
            engine=engines.get(build),
        )
        for build, eps in by_build.items()
    ]
    scores.sort(key=lambda s: (not s.reference, *bits_order(s.build, s.bits_per_weight)))
    return scores


def _played_reference(
    reference: str | None, episodes: Sequence[EpisodeRecord], by_build: Mapping[str, list[EpisodeRecord]]
) -> str | None:
    reference = resolve_reference(reference, None, episodes) if reference is None else reference
    if reference is not None and reference not in by_build:
        raise ConfigError(
            f"reference build {reference!r} has no episodes in this run; "
            f"builds here: {', '.join(sorted(by_build))}"
        )
    return reference


def score_episodes(
    episodes: Sequence[EpisodeRecord],
    engines: Mapping[str, EngineRecord] | None = None,
    *,
    run_id: str,
    reference: str | None = None,
    margin: float = DEFAULT_MARGIN,
    alpha: float = ALPHA,
    notes: Sequence[str] = (),
    task_splits: Mapping[str, str] | None = None,
    read_ceiling_gbs: float | None = None,
    looks: int = 1,
    facts: TaskFacts | None = None,
    typing: Mapping[EpisodeKey, Sequence[float]] | None = None,
    probes: Sequence[EpisodeRecord] = (),
    steps_of: StepsOf | None = None,
    done_on_recorded_steps: Mapping[str, Sequence[tuple[float, bool]]] | None = None,
) -> Scorecard:
    """The scorecard from every episode record of a run (all attempts; only the last of each seed counts).

    `facts` is what run.json says of the tasks (families, answer tasks); `typing` the typing accuracy of
    each scored episode's typed steps (`typed_accuracies`); `probes` every navigation-probe record (all
    attempts), `steps_of` reads an episode's steps (the probes' replay check), `done_on_recorded_steps` the
    fidelity probes' P(done) per build (the AUROC)."""
    if not 0 < margin < 1:
        raise ConfigError(f"the margin is a drop in rate, between 0 and 1 (got {margin})")
    engines = engines or {}
    settled = settle_attempts(episodes)
    scored = list(settled.scored.values())
    by_build: dict[str, list[EpisodeRecord]] = {build: [] for build in settled.builds}
    for episode in scored:
        by_build[episode.build].append(episode)
    reference = _played_reference(reference, episodes, by_build)
    scores = _build_scores(by_build, settled, reference, engines)

    regression = None
    if reference is not None and len(by_build) > 1:
        regression = compare_builds(scored, reference, margin, alpha, looks=looks)
    card = Scorecard(
        run_id=run_id,
        reference=reference,
        margin=margin,
        alpha=alpha,
        episode_records=len(episodes),
        builds=scores,
        regression=regression,
        notes=[*notes, *_score_notes(reference, len(by_build), settled, regression)],
        splits=split_scores(scored, task_splits or {}) if task_splits else [],
        ladder=build_ladder(scored, scores, regression, read_ceiling_gbs),
    )
    settled_probes = list(settle_attempts(probes).scored.values())
    if scored:
        compared = reference if len(by_build) > 1 else None
        card.decomposition = _decomposition(
            card, scored, settled_probes, compared, looks, steps_of, done_on_recorded_steps
        )
    _add_families(card, scored, facts or TaskFacts(), typing or {}, settled_probes)
    return card


def _decomposition(
    card: Scorecard,
    scored: Sequence[EpisodeRecord],
    probes: Sequence[EpisodeRecord],
    reference: str | None,
    looks: int,
    steps_of: StepsOf | None,
    done_on_recorded_steps: Mapping[str, Sequence[tuple[float, bool]]] | None,
) -> Decomposition:
    return decompose(
        scored,
        probes,
        [s.build for s in card.builds],
        reference,
        bits={s.build: s.bits_per_weight for s in card.builds},
        settings=(card.margin, card.alpha, looks),
        steps_of=steps_of,
        done_on_recorded_steps=done_on_recorded_steps,
    )


def _add_families(
    card: Scorecard,
    scored: Sequence[EpisodeRecord],
    facts: TaskFacts,
    typing: Mapping[EpisodeKey, Sequence[float]],
    probes: Sequence[EpisodeRecord] = (),
) -> None:
    """The scorecard's family sections and the ladder's abilities (docs/scorecard.md, "Task families")."""
    # A run written before answer tasks were recorded in run.json still shows which tasks judged an answer.
    judged = {e.task_id for e in scored if e.answer_correct is not None}
    facts = dataclasses.replace(facts, answer_tasks=facts.answer_tasks | judged)
    if card.ladder is not None and card.regression is not None:
        rungs = [(r.build, r.bits_per_weight) for r in card.ladder.rungs if r.navigation_delta is not None]
        card.ladder.abilities = ability_ladder(
            scored, rungs, card.regression, facts, typing, card.decomposition, probes
        )
    card.families = family_scores(scored, facts)
    card.typing = typing_scores(typing, facts.families)
    card.answers = answer_scores(scored, set(facts.answer_tasks), facts.families)


def typed_accuracies(
    scored: Sequence[EpisodeRecord], facts: TaskFacts, steps_of: Callable[[EpisodeRecord], list[StepRecord]]
) -> dict[EpisodeKey, list[float]]:
    """Each scored episode's typed-step accuracies, for the tasks whose oracle types (run.json's `typed`)."""
    out: dict[EpisodeKey, list[float]] = {}
    for episode in scored:
        fields = facts.typed.get(episode.task_id)
        if fields:
            out[episode.build, episode.task_id, episode.seed] = typed_step_accuracies(
                steps_of(episode), fields, episode.params
            )
    return out


def score_run(run_dir: Path, reference: str | None = None, margin: float | None = None) -> Scorecard:
    """Recompute the scorecard from a run directory alone; arguments override what run.json records."""
    settings = read_run_settings(run_dir)
    episodes = read_episodes(run_dir)
    if not episodes:
        raise RunStoreError(f"{run_dir / EPISODES_FILE} has no finished episode yet: nothing to score")
    recorded, notes = settings.reference, []
    if reference is None and recorded is not None and recorded not in {e.build for e in episodes}:
        # A run still under way may not have reached its reference build yet: score what is there.
        notes.append(f"run.json names {recorded!r} as the reference, but it has no episodes yet")
        recorded = None
    chosen = resolve_reference(reference, recorded, episodes)
    facts = TaskFacts.of(read_task_entries(run_dir))
    scored = list(settle_attempts(episodes).scored.values())
    probes = read_probes(run_dir)

    def steps_of(episode: EpisodeRecord) -> list[StepRecord]:
        # Read when asked, not kept: a big run's steps (prompts included) would not fit in memory at once.
        return read_steps(run_dir, episode)

    card = score_episodes(
        episodes,
        read_engines(run_dir),
        run_id=settings.run_id,
        reference=chosen,
        margin=next((m for m in (margin, settings.margin) if m is not None), DEFAULT_MARGIN),
        notes=notes,
        task_splits=read_task_splits(run_dir),
        read_ceiling_gbs=read_ceiling(run_dir),
        looks=settings.looks,
        facts=facts,
        typing=typed_accuracies(scored, facts, steps_of),
        probes=probes,
        steps_of=steps_of,
        done_on_recorded_steps=read_done_on_recorded_steps(run_dir),
    )
    card.fidelity = read_fidelity_rows(run_dir)
    first_seed, levels = seed_levels(run_dir)
    card.engine_busy = engine_busy(
        [*scored, *settle_attempts(probes).scored.values()],
        steps_of,
        read_engines(run_dir),
        first_seed,
        levels,
    )
    return card
