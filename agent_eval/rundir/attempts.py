"""Settling attempts: the last attempt of each (build, task, seed) counts; infra errors are counted apart.

An infra error is the device's or engine's fault: it never enters a rate, it is retried and tallied apart.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from agent_eval.records import EpisodeRecord, Outcome
from agent_eval.rundir.layout import EpisodeKey


def episode_key(record: EpisodeRecord) -> EpisodeKey:
    return (record.build, record.task_id, record.seed)


@dataclass(frozen=True)
class SettledEpisodes:
    """The episodes a score is computed from, and what was set aside."""

    scored: dict[EpisodeKey, EpisodeRecord]
    """The last attempt of each (build, task, seed), where that attempt was not an infra error."""
    infra_error_attempts: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Per (build, task): attempts that ended in an infra error, whether or not a retry later succeeded."""
    unresolved: Counter[str] = field(default_factory=Counter)
    """Per build: (task, seed) whose last attempt was still an infra error, so it has no score."""
    builds: tuple[str, ...] = ()
    """Every build that has at least one record, in order of first appearance."""
    last: dict[EpisodeKey, EpisodeRecord] = field(default_factory=dict)
    """The last attempt of each (build, task, seed), infra error or not."""
    retried: tuple[EpisodeRecord, ...] = ()
    """Infra-error attempts that a later attempt replaced."""

    @property
    def final(self) -> tuple[EpisodeRecord, ...]:
        """The last attempt of each (build, task, seed), in order of first appearance."""
        return tuple(self.last.values())

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(sorted({key[1] for key in self.last}))


def settle_attempts(records: Iterable[EpisodeRecord]) -> SettledEpisodes:
    """Keep the last attempt of each (build, task, seed): the highest attempt number, then the later line."""
    every = list(records)
    last: dict[EpisodeKey, EpisodeRecord] = {}
    infra: Counter[tuple[str, str]] = Counter()
    builds: dict[str, None] = {}
    for record in every:
        builds.setdefault(record.build, None)
        if record.outcome is Outcome.INFRA_ERROR:
            infra[record.build, record.task_id] += 1
        key = episode_key(record)
        kept = last.get(key)
        if kept is None or record.attempt >= kept.attempt:
            last[key] = record
    scored = {key: r for key, r in last.items() if r.outcome is not Outcome.INFRA_ERROR}
    unresolved = Counter(key[0] for key, r in last.items() if r.outcome is Outcome.INFRA_ERROR)
    kept_ids = {id(r) for r in last.values()}
    retried = tuple(r for r in every if id(r) not in kept_ids and r.outcome is Outcome.INFRA_ERROR)
    return SettledEpisodes(scored, infra, unresolved, tuple(builds), last, retried)


def infra_attempts_by_task(settled: SettledEpisodes, build: str) -> dict[str, int]:
    """One build's infra-error attempts per task."""
    return {task: n for (b, task), n in settled.infra_error_attempts.items() if b == build}
