"""`agent-eval report runs/ID`, as a user runs it: the printed verdicts and tables, scorecard.json and
scorecard.md written beside the episodes, and plain errors for a missing or empty run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from agent_eval.cli import cli, main
from agent_eval.records import BuildManifest, EngineRecord, EpisodeRecord, Outcome, StepLatency
from agent_eval.scoring.scorecard import Scorecard, score_run

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
BITS = {"bf16": 16.0, "w8a8": 8.0, "w4a16": 4.0}


def episode(build: str, task: str, seed: int, success: bool, attempt: int = 1) -> EpisodeRecord:
    outcome = Outcome.SUCCESS if success else Outcome.NO_STOP
    manifest = BuildManifest(
        name=build, reference=build == "bf16", scheme=build, bits_per_weight=BITS[build], engine="scripted"
    )
    return EpisodeRecord(
        run_id="grid-1",
        build=build,
        task_id=task,
        seed=seed,
        outcome=outcome,
        reached=True,
        success=success,
        build_manifest=manifest,
        started_at=T0,
        finished_at=T0,
        steps=5,
        attempt=attempt,
        latency=StepLatency(model_s=10.0, observe_s=2.5),
    )


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A finished grid: bf16 (reference) succeeds on seeds 0-8 of 3 tasks; w4a16 loses 12 of those; w8a8
    matches bf16; one w8a8 episode needed a retry after an infra error."""
    run = tmp_path / "runs" / "grid-1"
    (run / "engines").mkdir(parents=True)
    records = []
    for t, task in enumerate(("t0", "t1", "t2")):
        for seed in range(10):
            ref = seed < 9
            records += [episode("bf16", task, seed, ref), episode("w4a16", task, seed, ref and seed < 4 + t)]
            if task == "t1" and seed == 3:
                infra = EpisodeRecord(
                    run_id="grid-1",
                    build="w8a8",
                    task_id=task,
                    seed=seed,
                    outcome=Outcome.INFRA_ERROR,
                    reached=False,
                    success=False,
                    started_at=T0,
                    finished_at=T0,
                    error="device offline",
                )
                records += [infra, episode("w8a8", task, seed, ref, attempt=2)]
            else:
                records.append(episode("w8a8", task, seed, ref))
    (run / "episodes.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
    engine = EngineRecord(
        build="bf16",
        engine="vllm-cpu",
        decode_tok_s=14.25,
        prefill_tok_s=512.0,
        peak_rss_mb=2048.0,
        settled_rss_mb=1900.0,
    )
    (run / "engines" / "bf16.json").write_text(engine.model_dump_json())
    (run / "run.json").write_text(json.dumps({"run_id": "grid-1", "config": {"margin": 0.1}}))
    return run


def test_report_prints_verdicts_and_tables_and_writes_the_scorecard(run_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Run grid-1: reference bf16, margin δ = 0.10" in out
    assert "w4a16: reaching the goal in play non-inferior; completion recognition REGRESSION, −0.40 [" in out
    assert "w8a8: reaching the goal in play non-inferior; completion recognition non-inferior" in out
    assert "bf16 (reference)" in out
    assert "0.90 [0.74, 0.97] 27/30" in out  # bf16 success, Wilson
    assert "0.50 [0.33, 0.67] 15/30" in out  # w4a16 success
    assert "14.2" in out and "2048" in out  # engine speed and memory
    # Seconds per step: each episode spent 2.5 s observing and 10 s in the model over its 5 steps.
    cost_row = next(line for line in out.splitlines() if "bf16 (reference)" in line and "14.2" in line)
    assert re.search(r"0\.50 .* 2\.00 .* 2\.50 .* 14\.2", cost_row), cost_row

    saved = Scorecard.model_validate_json((run_dir / "scorecard.json").read_text())
    assert saved == score_run(run_dir)
    md = (run_dir / "scorecard.md").read_text()
    assert "# Scorecard: run grid-1" in md
    assert "- w4a16: reaching the goal in play non-inferior; completion recognition REGRESSION, −0.40 [" in md
    assert "| w4a16 | 4.0 | completion recognition | 30 | 12 | 0 |" in md
    # The HTML page is rewritten from the same scorecard.
    assert (
        "w4a16: reaching the goal in play non-inferior; completion recognition REGRESSION"
        in (run_dir / "report.html").read_text()
    )


def test_scorecard_numbers_match_the_episodes_file(run_dir: Path) -> None:
    CliRunner().invoke(cli, ["report", str(run_dir)], catch_exceptions=False)
    saved = json.loads((run_dir / "scorecard.json").read_text())
    # Recount from the raw lines: last attempt per (build, task, seed), infra errors apart.
    last: dict[tuple[str, str, int], dict[str, object]] = {}
    infra: Counter[str] = Counter()
    for line in (run_dir / "episodes.jsonl").read_text().splitlines():
        raw = json.loads(line)
        infra[raw["build"]] += raw["outcome"] == "infra_error"
        last[raw["build"], raw["task_id"], raw["seed"]] = raw
    for build in saved["builds"]:
        mine = [r for (b, _, _), r in last.items() if b == build["build"]]
        assert build["episodes"] == len(mine)
        assert build["success"]["count"] == sum(bool(r["success"]) for r in mine)
        assert build["navigation"]["count"] == sum(bool(r["reached"]) for r in mine)
        assert build["infra_error_attempts"] == infra[build["build"]]
    assert [b["build"] for b in saved["builds"]] == ["bf16", "w8a8", "w4a16"]


def test_options_override_and_no_write(run_dir: Path) -> None:
    result = CliRunner().invoke(
        cli, ["report", str(run_dir), "--reference", "w8a8", "--margin", "0.2", "--no-write", "--drill-down"]
    )
    assert result.exit_code == 0, result.output
    assert "Run grid-1: reference w8a8, margin δ = 0.20" in result.output
    assert "bf16: reaching the goal in play" in result.output
    assert "Drill-down by task" in result.output
    assert not (run_dir / "scorecard.json").exists()
    assert not (run_dir / "report.html").exists()
    bad = CliRunner().invoke(cli, ["report", str(run_dir), "--margin", "1.5"])
    assert bad.exit_code == 2 and "--margin" in bad.output


def _main(args: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(sys, "argv", ["agent-eval", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    return int(exit_info.value.code or 0)


def test_missing_empty_and_unknown_reference_are_plain_errors(
    tmp_path: Path, run_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _main(["report", str(tmp_path / "runs" / "nope")], monkeypatch) == 2
    assert "agent-eval: error:" in capsys.readouterr().err
    (tmp_path / "runs" / "empty").mkdir()
    assert _main(["report", str(tmp_path / "runs" / "empty")], monkeypatch) == 2
    assert "no episode has finished" in capsys.readouterr().err
    assert _main(["report", str(run_dir), "--reference", "fp32"], monkeypatch) == 2
    err = capsys.readouterr().err
    assert "'fp32'" in err and "bf16" in err and "Traceback" not in err


@pytest.mark.slow
def test_the_installed_command_reports_a_missing_run_without_a_traceback(tmp_path: Path) -> None:
    command = Path(sys.executable).parent / "agent-eval"
    done = subprocess.run(
        [str(command), "report", str(tmp_path / "runs" / "nope")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert "does not exist" in done.stderr and "runs/<run-id>" in done.stderr
    assert "Traceback" not in done.stderr
