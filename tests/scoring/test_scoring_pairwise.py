"""`agent-eval compare RUN A B`: two builds of one run on their common pairs (scoring/pairwise.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from agent_eval.cli import cli
from agent_eval.errors import ConfigError
from agent_eval.records import BuildManifest, EpisodeRecord, Outcome
from agent_eval.scoring.pairwise import compare_pair

T0 = datetime(2026, 12, 2, 6, 0, tzinfo=UTC)


def _episode(build: str, task: str, seed: int, reached: bool, success: bool) -> EpisodeRecord:
    outcome = Outcome.SUCCESS if success else (Outcome.NO_STOP if reached else Outcome.NAV_FAIL)
    manifest = BuildManifest(name=build, reference=False, scheme=build, bits_per_weight=4.5, engine="x")
    return EpisodeRecord(
        run_id="r",
        build=build,
        task_id=task,
        seed=seed,
        outcome=outcome,
        reached=reached,
        success=success,
        build_manifest=manifest,
        started_at=T0,
        finished_at=T0,
        steps=3,
    )


def _episodes() -> list[EpisodeRecord]:
    """On 2 tasks × 10 seeds: `gptq` succeeds on seeds 0-7, `imat` on 0-4 and on 9 (it wins seed 9, loses
    5-7), both reach every goal; `imat` also played seed 10, which `gptq` did not (unpaired, left out)."""
    out = []
    for task in ("t0", "t1"):
        for seed in range(10):
            out.append(_episode("gptq", task, seed, True, seed < 8))
            out.append(_episode("imat", task, seed, True, seed < 5 or seed == 9))
        out.append(_episode("imat", task, 10, True, False))
    return out


def test_the_second_build_against_the_first_counts_wins_losses_and_the_paired_difference() -> None:
    navigation, success = compare_pair(_episodes(), "gptq", "imat")
    assert (navigation.pairs, navigation.wins, navigation.losses, navigation.delta) == (20, 0, 0, 0.0)
    assert navigation.p_two_sided == 1.0
    assert (success.pairs, success.wins, success.losses) == (20, 2, 6)
    assert success.first_rate == pytest.approx(0.8) and success.second_rate == pytest.approx(0.6)
    assert success.delta == pytest.approx(-0.2)
    assert success.p_two_sided == pytest.approx(0.2890625)  # 2 of 8 discordant pairs, exact binomial
    # Swapped, the same pairs the other way round.
    swapped = compare_pair(_episodes(), "imat", "gptq")[1]
    assert (swapped.wins, swapped.losses, swapped.delta) == (6, 2, pytest.approx(0.2))


def test_a_build_the_run_did_not_play_is_named_with_the_builds_it_did(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'q4' has no scored episode.*builds: gptq, imat"):
        compare_pair(_episodes(), "gptq", "q4")
    with pytest.raises(ConfigError, match="two different builds"):
        compare_pair(_episodes(), "gptq", "gptq")


def test_the_command_prints_both_metrics(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "episodes.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in _episodes()))
    result = CliRunner().invoke(cli, ["compare", str(run), "gptq", "imat"])
    assert result.exit_code == 0, result.output
    assert "imat against gptq" in result.output
    assert "success    20 pairs  0.80 → 0.60  Δ -0.20" in result.output
    assert "2 wins / 6 losses  McNemar p 0.29 (two-sided)" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "episodes.jsonl").write_text("")
    failed = CliRunner().invoke(cli, ["compare", str(empty), "gptq", "imat"])
    assert failed.exit_code != 0 and "nothing to compare" in str(failed.exception)
