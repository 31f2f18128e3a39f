"""Baselines (role: baseline, the untuned model) are compared but are no rung: the ladder leaves them out."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from agent_eval.builds import load_builds
from agent_eval.records import BuildManifest, EpisodeRecord, Outcome, RungInfo
from agent_eval.report.ladder_plot import ladder_figures
from agent_eval.scoring.scorecard import score_episodes

T0 = datetime(2026, 12, 1, tzinfo=UTC)
REPO = Path(__file__).resolve().parents[2]


def _episodes(build: str, bits: float, outcome: Outcome, role: str) -> list[EpisodeRecord]:
    rung = RungInfo(method="none" if build == "bf16" else "rtn", bits=int(bits), label=build)
    manifest = BuildManifest(
        name=build,
        reference=build == "bf16",
        scheme="bf16",
        bits_per_weight=bits,
        engine="scripted",
        rung=rung,
        role=role,
    )
    return [
        EpisodeRecord(
            run_id="r",
            build=build,
            task_id=task,
            seed=seed,
            outcome=outcome,
            reached=outcome is not Outcome.NAV_FAIL,
            success=outcome is Outcome.SUCCESS,
            build_manifest=manifest,
            started_at=T0,
            finished_at=T0,
        )
        for task in ("a", "b", "c")
        for seed in range(10)
    ]


def test_a_baseline_is_compared_but_left_out_of_the_ladder_its_plot_and_its_knee() -> None:
    episodes = (
        _episodes("bf16", 16.0, Outcome.SUCCESS, "rung")
        + _episodes("int8", 8.0, Outcome.SUCCESS, "rung")
        + _episodes("untuned", 16.0, Outcome.NAV_FAIL, "baseline")
    )
    card = score_episodes(episodes, run_id="r", reference="bf16")
    assert card.regression is not None
    assert [c.build for c in card.regression.builds] == ["untuned", "int8"]  # still compared, by bits
    assert card.ladder is not None and [r.build for r in card.ladder.rungs] == ["bf16", "int8"]
    assert "untuned" not in card.ladder.sentence and "none of" not in card.ladder.sentence
    assert all('data-build="untuned"' not in svg for _, svg, _ in ladder_figures(card))


def test_the_default_builds_mark_the_untuned_models_as_baselines() -> None:
    builds = load_builds(REPO / "builds" / "default.yaml")
    roles = {b.name: b.role for b in builds.builds}
    assert roles["bf16-base"] == "baseline" and roles["w8a8"] == "rung" and roles["bf16"] == "rung"
    assert builds.get("bf16-base").manifest().role == "baseline"
