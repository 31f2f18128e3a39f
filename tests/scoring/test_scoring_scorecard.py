"""The per-build scorecard from episode records: which attempts count, the rates, cost, per-task numbers;
and reading them back from a run directory (torn last line, damage, missing files)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent_eval.errors import ConfigError, RunStoreError
from agent_eval.records import BuildManifest, EngineRecord, EpisodeRecord, Outcome, StepLatency
from agent_eval.rundir import read_episodes, read_run_settings
from agent_eval.scoring.scorecard import score_episodes, score_run

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
REACHED = {Outcome.SUCCESS: True, Outcome.UNDONE: True, Outcome.NO_STOP: True}


def episode(
    build: str,
    task: str,
    seed: int,
    outcome: Outcome,
    *,
    attempt: int = 1,
    steps: int = 4,
    invalid: int = 0,
    bits: float | None = None,
    reference: bool = False,
) -> EpisodeRecord:
    manifest = None
    if bits is not None:
        manifest = BuildManifest(
            name=build, reference=reference, scheme=build, bits_per_weight=bits, engine="scripted"
        )
    return EpisodeRecord(
        run_id="r1",
        build=build,
        task_id=task,
        seed=seed,
        outcome=outcome,
        reached=REACHED.get(outcome, False),
        success=outcome is Outcome.SUCCESS,
        steps=steps,
        invalid_actions=invalid,
        build_manifest=manifest,
        started_at=T0,
        finished_at=T0,
        attempt=attempt,
        latency=StepLatency(
            observe_s=0.4 * steps, model_s=2.0 * steps, act_s=0.2 * steps, check_s=0.1 * steps
        ),
    )


def _bf16_run() -> list[EpisodeRecord]:
    """bf16 on wifi_on: success ×3, no_stop, nav_fail; on bt_off: undone, premature_done, success ×3
    (seed 3 on bt_off needed a retry after an infra error; seed 4 failed on every attempt)."""
    S, N, U, P, F, X = (
        Outcome.SUCCESS,
        Outcome.NO_STOP,
        Outcome.UNDONE,
        Outcome.PREMATURE_DONE,
        Outcome.NAV_FAIL,
        Outcome.INFRA_ERROR,
    )
    wifi = [S, S, S, N, F]
    records = [episode("bf16", "wifi_on", seed, o, bits=16, reference=True) for seed, o in enumerate(wifi)]
    records += [
        episode("bf16", "bt_off", 0, U, bits=16, reference=True),
        episode("bf16", "bt_off", 1, P, bits=16, reference=True, invalid=2),
        episode("bf16", "bt_off", 2, S, bits=16, reference=True),
        episode("bf16", "bt_off", 3, X, steps=0, bits=16, reference=True),
        episode("bf16", "bt_off", 3, S, attempt=2, bits=16, reference=True),
        episode("bf16", "bt_off", 4, X, steps=0, bits=16, reference=True),
        episode("bf16", "bt_off", 4, X, attempt=2, steps=0, bits=16, reference=True),
    ]
    return records


def test_last_attempt_counts_and_infra_errors_stay_out_of_the_rates() -> None:
    card = score_episodes(_bf16_run(), run_id="r1")
    (bf16,) = card.builds
    assert bf16.episodes == 9  # 5 + 4 scored; seed 4 on bt_off never finished
    assert bf16.infra_error_attempts == 3
    assert bf16.unresolved_infra_errors == 1
    assert bf16.outcomes.model_dump() == {
        "success": 5,
        "undone": 1,
        "no_stop": 1,
        "premature_done": 1,
        "nav_fail": 1,
        "wrong_answer": 0,
    }
    # navigation: success, undone, no_stop reached (7 of 9); recognition: 5 of those 7; success 5 of 9.
    assert (bf16.navigation.count, bf16.navigation.of) == (7, 9)
    assert (bf16.recognition.count, bf16.recognition.of) == (5, 7)
    assert (bf16.success.count, bf16.success.of) == (5, 9)
    assert bf16.success.rate == pytest.approx(5 / 9)
    assert bf16.success.low is not None and bf16.success.low < 5 / 9 < bf16.success.high  # type: ignore[operator]
    assert any("infra error on every attempt" in note for note in card.notes)
    assert card.reference == "bf16"  # from the manifest's reference flag
    assert card.regression is None  # nothing to compare with


def test_steps_latency_invalid_and_pass_k() -> None:
    (bf16,) = score_episodes(_bf16_run(), run_id="r1").builds
    assert bf16.mean_steps == pytest.approx(4.0)
    assert bf16.invalid_actions == 2
    assert bf16.invalid_action_rate == pytest.approx(2 / 36)
    lat = bf16.latency_per_step
    assert lat is not None
    assert (lat.observe_s, lat.model_s, lat.act_s, lat.check_s, lat.harness_s) == pytest.approx(
        (0.4, 2, 0.2, 0.1, 0)
    )
    assert lat.total_s == pytest.approx(2.7)
    # pass^1 = mean of the tasks' success rates (3/5 and 2/4); k = min(fewest seeds, 5) = 4.
    assert bf16.pass_hat_1 == pytest.approx((3 / 5 + 2 / 4) / 2)
    assert bf16.pass_k == 4
    assert bf16.pass_hat_k == pytest.approx((0 + 0) / 2)  # C(3,4) = C(2,4) = 0
    assert bf16.pass_at_k == pytest.approx((1.0 + (1 - 0)) / 2)


def test_per_task_breakdown() -> None:
    (bf16,) = score_episodes(_bf16_run(), run_id="r1").builds
    tasks = {t.task_id: t for t in bf16.per_task}
    assert list(tasks) == ["bt_off", "wifi_on"]
    assert tasks["wifi_on"].episodes == 5 and tasks["bt_off"].episodes == 4
    assert (tasks["bt_off"].navigation.count, tasks["bt_off"].success.count) == (3, 2)
    assert tasks["bt_off"].infra_error_attempts == 3
    assert tasks["wifi_on"].outcomes.no_stop == 1


def test_engine_records_fill_speed_and_memory() -> None:
    engine = EngineRecord(
        build="bf16",
        engine="vllm-cpu",
        decode_tok_s=12.5,
        prefill_tok_s=310.0,
        peak_rss_mb=2100.0,
        settled_rss_mb=1800.0,
    )
    (bf16,) = score_episodes(_bf16_run(), {"bf16": engine}, run_id="r1").builds
    assert (bf16.decode_tok_s, bf16.prefill_tok_s, bf16.peak_rss_mb, bf16.settled_rss_mb) == (
        12.5,
        310,
        2100,
        1800,
    )


def test_builds_are_ordered_reference_first_then_by_bits() -> None:
    records = _bf16_run()
    for name, bits in (("w4a16", 4.0), ("w8a8", 8.0), ("mystery", None)):
        records += [episode(name, "wifi_on", s, Outcome.SUCCESS, bits=bits) for s in range(5)]
    card = score_episodes(records, run_id="r1")
    assert [b.build for b in card.builds] == ["bf16", "w8a8", "w4a16", "mystery"]
    assert card.regression is not None
    assert [c.build for c in card.regression.builds] == ["w8a8", "w4a16", "mystery"]


def test_reference_must_exist_and_be_unambiguous() -> None:
    records = _bf16_run()
    with pytest.raises(ConfigError, match="fp32"):
        score_episodes(records, run_id="r1", reference="fp32")
    records += [episode("w8a8", "wifi_on", 0, Outcome.SUCCESS, bits=8, reference=True)]
    with pytest.raises(ConfigError, match="--reference"):
        score_episodes(records, run_id="r1")
    assert score_episodes(records, run_id="r1", reference="w8a8").reference == "w8a8"
    with pytest.raises(ConfigError, match="margin"):
        score_episodes(records, run_id="r1", reference="w8a8", margin=1.5)


def _write_run(run_dir: Path, records: list[EpisodeRecord], tail: str = "") -> None:
    run_dir.mkdir(parents=True)
    text = "".join(r.model_dump_json() + "\n" for r in records)
    (run_dir / "episodes.jsonl").write_text(text + tail)


def test_run_dir_with_a_torn_last_line_scores_the_finished_episodes(tmp_path: Path) -> None:
    records = _bf16_run()
    torn = records[0].model_dump_json()[:57]
    _write_run(tmp_path / "run", records, tail=torn)
    assert len(read_episodes(tmp_path / "run")) == len(records)
    (tmp_path / "run" / "episodes.jsonl").write_text(
        "".join(r.model_dump_json() + "\n" for r in records) + "\0" * 40 + "\n\n"
    )
    card = score_run(tmp_path / "run")
    assert card.episode_records == len(records)
    assert card.builds[0].episodes == 9


def test_damaged_line_in_the_middle_is_an_error_naming_the_line(tmp_path: Path) -> None:
    records = _bf16_run()
    lines = [r.model_dump_json() for r in records]
    lines[2] = lines[2][:30]
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(RunStoreError, match=r"episodes.jsonl, line 3,"):
        score_run(tmp_path / "run")


def test_missing_or_empty_runs_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(RunStoreError, match="does not exist"):
        score_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunStoreError, match="no episode has finished"):
        score_run(tmp_path / "empty")
    (tmp_path / "empty" / "episodes.jsonl").write_text("")
    with pytest.raises(RunStoreError, match="nothing to score"):
        score_run(tmp_path / "empty")


def test_run_json_sets_reference_and_margin_and_options_override(tmp_path: Path) -> None:
    records = _bf16_run() + [episode("w8a8", "wifi_on", s, Outcome.SUCCESS, bits=8) for s in range(5)]
    _write_run(tmp_path / "run", records)
    (tmp_path / "run" / "run.json").write_text(
        '{"run_id": "grid-7", "config": {"reference": "w8a8", "margin": 0.2}, "builds": []}'
    )
    settings = read_run_settings(tmp_path / "run")
    assert (settings.run_id, settings.reference, settings.margin) == ("grid-7", "w8a8", 0.2)
    card = score_run(tmp_path / "run")
    assert (card.run_id, card.reference, card.margin) == ("grid-7", "w8a8", 0.2)
    card = score_run(tmp_path / "run", reference="bf16", margin=0.05)
    assert (card.reference, card.margin) == ("bf16", 0.05)
    # A reference named in run.json that has not run yet: scored without verdicts, and said so.
    (tmp_path / "run" / "run.json").write_text('{"run_id": "grid-7", "config": {"reference": "fp32"}}')
    card = score_run(tmp_path / "run")
    assert card.reference == "bf16"
    assert any("fp32" in n for n in card.notes)


def test_without_any_reference_there_are_scores_but_no_verdicts_and_a_note() -> None:
    records = [episode(b, "wifi_on", s, Outcome.SUCCESS, bits=4.0) for b in ("a", "b") for s in range(3)]
    card = score_episodes(records, run_id="r1")
    assert card.reference is None and card.regression is None
    assert [b.episodes for b in card.builds] == [3, 3]
    assert any("--reference" in n for n in card.notes)
    alone = score_episodes(records[:3], run_id="r1")
    assert alone.notes == []
