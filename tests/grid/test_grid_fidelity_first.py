"""`fidelity: first`: each build probed before its episodes on the reference's steps, its early warning said
and recorded, and the block order around the engines started early (fakes: engines, probes, episodes)."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from _cpu import ENV as CPU_ENV
from _cpu import HOSTS
from rich.console import Console

from agent_eval.builds.spec import load_builds
from agent_eval.errors import ConfigError
from agent_eval.fidelity import grid_hook
from agent_eval.fidelity.early_warning import early_warning, read_warnings, record_warning
from agent_eval.fidelity.grid_hook import GridFidelity
from agent_eval.fidelity.probe import StepProbe
from agent_eval.fidelity.run import probes_path
from agent_eval.grid import run as grid_run
from agent_eval.grid.plan import resolve_builds, resolve_tasks
from agent_eval.grid.progress import GridProgress
from agent_eval.grid.run import GridResult, _Grid
from agent_eval.grid.schedule import Engines
from agent_eval.grid.spec import GridSpec, parse_grid
from agent_eval.runner import Cell, RunStore, RunSummary, new_manifest

REPO = Path(__file__).resolve().parents[2]


def _probe(build: str, episode: int, step: int, agrees: bool, logprob: float) -> StepProbe:
    return StepProbe(
        build=build,
        episode=f"episodes/bf16/wifi_on/{episode}",
        task_id="wifi_on",
        seed=episode,
        step=step,
        goal_before=False,
        said_done=False,
        tokens=["x"],
        ranks=[1 if agrees else 2],
        logprobs=[logprob],
        tops=[{"1": logprob}],
        agrees=agrees,
        prefill_s=0.1,
    )


def _probes(build: str, bad: bool) -> list[StepProbe]:
    # 12 episodes × 3 steps; a bad build disagrees on most steps and finds the answer far less likely.
    return [
        _probe(
            build,
            e,
            s,
            agrees=not (bad and (e + s) % 4),
            logprob=(-3.0 - 0.1 * s if bad else -0.1 - 0.01 * e),
        )
        for e in range(12)
        for s in range(3)
    ]


def test_a_build_that_differs_is_flagged_early_and_the_reference_s_twin_is_not() -> None:
    reference = _probes("bf16", bad=False)
    bad = early_warning("w4a16", _probes("w4a16", bad=True), reference, probe_s=7.26)
    assert bad.flagged and set(bad.worse) >= {"agreement", "answer_logprob"}
    assert (bad.steps, bad.episodes, bad.probe_s) == (36, 12, 7.26)
    same = early_warning("w8a8", [p.model_copy(update={"build": "w8a8"}) for p in reference], reference, 5.0)
    assert not same.flagged and same.worse == []


def test_warnings_are_kept_one_line_each_the_latest_per_build(tmp_path: Path) -> None:
    reference = _probes("bf16", bad=False)
    first = early_warning("w4a16", _probes("w4a16", bad=True), reference, 3.0)
    record_warning(tmp_path, first)
    record_warning(tmp_path, early_warning("w8a8", reference, reference, 2.0))
    record_warning(tmp_path, first.model_copy(update={"probe_s": 4.0}))  # a continued grid probed it again
    with (tmp_path / "fidelity" / "early_warnings.jsonl").open("a") as out:
        out.write('{"build": "w2", "flag')  # cut by a kill mid-write
    kept = read_warnings(tmp_path)
    assert [(w.build, w.probe_s) for w in kept] == [("w4a16", 4.0), ("w8a8", 2.0)]


@pytest.fixture
def hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[GridFidelity, list[str]]:
    """A grid's fidelity whose 'engine' answers with canned probes (w4a16 bad, w8a8 as the reference)."""
    said: list[str] = []

    def probe_build(
        run_dir: Path, build: str, endpoint: Any, steps: Any, spans: Any, **kw: Any
    ) -> tuple[list[StepProbe], float, dict[str, object]]:
        probes = _probes(build, bad=build == "w4a16")
        path = probes_path(run_dir, build)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(p.model_dump_json() + "\n" for p in probes))
        return probes, 600.0, {"top_k": 20}

    monkeypatch.setattr(grid_hook, "probe_build", probe_build)
    monkeypatch.setattr(grid_hook, "schema_mask", lambda build, say, tokenizer=None: None)
    monkeypatch.setattr(grid_hook, "load_source_steps", lambda run_dir, source, reference: ([], {}))
    return GridFidelity(tmp_path, load_builds().get("bf16"), said.append), said


def test_the_early_warning_is_said_and_recorded_before_the_episodes_and_reaches_fidelity_json(
    hook: tuple[GridFidelity, list[str]], tmp_path: Path
) -> None:
    fidelity, said = hook
    builds = load_builds()  # the default file's builds, whichever this CPU runs
    endpoints: Any = {name: object() for name in ("bf16", "w8a8", "w4a16")}
    fidelity.probe([builds.get("bf16")], endpoints, reference_only=True)  # after the reference's episodes
    assert fidelity.warn_early([builds.get("bf16")], endpoints) == []  # the reference gets no warning
    (bad,) = fidelity.warn_early([builds.get("w4a16")], endpoints)
    (fine,) = fidelity.warn_early([builds.get("w8a8")], endpoints)
    assert bad.flagged and not fine.flagged
    assert any(s.startswith("[bold red]early warning: fidelity flags w4a16 (agreement") for s in said)
    assert any(s.startswith("fidelity: w8a8 not flagged after") for s in said)
    assert [w.build for w in read_warnings(tmp_path)] == ["w4a16", "w8a8"]  # on disk before any episode
    fidelity.finish()
    data = json.loads((tmp_path / "fidelity.json").read_text())
    assert [w["build"] for w in data["early_warnings"]] == ["w4a16", "w8a8"]
    from agent_eval.scoring.fidelity_fields import read_fidelity_rows

    rows = {r.build: r for r in read_fidelity_rows(tmp_path) or []}
    assert rows["w4a16"].early_warning is True and rows["w8a8"].early_warning is False
    assert rows["bf16"].early_warning is None and rows["w4a16"].early_warning_s is not None


def test_fidelity_json_without_early_warnings_still_reads(tmp_path: Path) -> None:
    from agent_eval.fidelity.result import FidelityResult

    old = {
        "run_id": "r",
        "reference": "bf16",
        "steps_from": "reference",
        "steps": 0,
        "episodes": 0,
        "builds": [],
    }
    assert FidelityResult.model_validate(old).early_warnings == []


def test_fidelity_first_needs_the_reference_to_play_first() -> None:
    with pytest.raises(ConfigError, match=r"fidelity: first .* serving: one-at-a-time"):
        parse_grid({"tasks": ["wifi_on"], "fidelity": "first", "serving": "side-by-side"}, "g.yaml")
    assert parse_grid({"tasks": ["wifi_on"], "fidelity": "first"}, "g.yaml").fidelity == "first"
    with pytest.raises(ConfigError, match="fidelity"):
        parse_grid({"tasks": ["wifi_on"], "fidelity": "before"}, "g.yaml")


# The block order of a phase, with the engines, the probes and the episodes replaced by a log.


class _Engines(Engines):
    def __init__(self, log: list[str]) -> None:
        super().__init__(Path("."), 8200, log.append, early=True)
        self.log = log

    @contextlib.contextmanager
    def serving(self, builds: Sequence[Any]) -> Iterator[dict[str, Any]]:
        self.log.append("serve " + ",".join(b.name for b in builds))
        yield {b.name: f"agent {b.name}" for b in builds}
        self.log.append("end " + ",".join(b.name for b in builds))

    def start_early(self, build: Any) -> None:
        self.log.append(f"early {build.name}")

    def drop_early(self) -> None:
        self.log.append("drop early")


class _Fidelity:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def warn_early(self, builds: Sequence[Any], endpoints: Any) -> list[Any]:
        self.log += [f"warn {b.name}" for b in builds if b.name != "bf16"]
        return []

    def probe(self, builds: Sequence[Any], endpoints: Any, *, reference_only: bool = False) -> None:
        self.log += [f"probe {b.name}" for b in builds if not reference_only or b.name == "bf16"]


class _Phone:
    serial = "phone-1"


def _phase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fidelity: bool | str, phase: int = 1
) -> list[str]:
    log: list[str] = []
    # The block order is the same on every CPU; the build set is not (w4a16 needs AVX-512), so the decisions
    # are made on a simulated AVX-512 flag set. No engine starts here.
    monkeypatch.setenv(CPU_ENV, HOSTS["avx512"])

    def run_cells(cells: Sequence[Cell], devices: Any, agents: Any, store: Any, **kw: Any) -> RunSummary:
        log.append("cells " + ",".join(sorted({c.build for c in cells})))
        if kw.get("on_tail") is not None:
            kw["on_tail"]()  # the last cells: fewer left than phones
        return RunSummary()

    monkeypatch.setattr(grid_run, "run_cells", run_cells)
    monkeypatch.setattr(grid_run, "grid_fidelity", lambda *a: _Fidelity(log) if fidelity else None)
    spec = GridSpec(tasks=["wifi_on"], builds=["bf16", "w8a8", "w4a16"], reference="bf16", fidelity=fidelity)
    tasks, builds = resolve_tasks(spec), resolve_builds(spec)
    store = RunStore(tmp_path / "run")
    store.open(new_manifest("run", {"seeds": 1}, tasks, []))
    progress = GridProgress(Console(file=io.StringIO()), builds.names, bars=False)
    progress.phase = phase
    grid = _Grid(spec, tasks, builds, store, _Engines(log), progress, GridResult(tmp_path, "bf16"))
    grid.devices = [_Phone()]  # type: ignore[list-item]
    grid.play([Cell(b, tasks[0], 0) for b in builds.names])
    store.close()
    return log


def test_fidelity_first_warns_before_each_build_s_episodes_and_starts_the_next_engine_at_the_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _phase(tmp_path, monkeypatch, "first") == [
        # The reference plays, then is probed (its steps exist now): no early start under those probes.
        *("serve bf16", "cells bf16", "probe bf16", "end bf16"),
        *("serve w8a8", "warn w8a8", "cells w8a8", "early w4a16", "end w8a8"),
        *("serve w4a16", "warn w4a16", "cells w4a16", "end w4a16"),
        "drop early",
    ]


def test_without_fidelity_every_block_s_tail_starts_the_next_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _phase(tmp_path, monkeypatch, False) == [
        *("serve bf16", "cells bf16", "early w8a8", "end bf16"),
        *("serve w8a8", "cells w8a8", "early w4a16", "end w8a8"),
        *("serve w4a16", "cells w4a16", "end w4a16"),
        "drop early",
    ]


def test_probes_after_the_episodes_are_not_shared_with_an_engine_starting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    after = _phase(tmp_path / "1", monkeypatch, True)
    assert [e for e in after if e.startswith(("early", "probe", "warn"))] == [
        "probe bf16",
        "probe w8a8",
        "probe w4a16",
    ]
    top_up = _phase(tmp_path / "2", monkeypatch, True, phase=2)  # no probes in a top-up: early starts again
    assert [e for e in top_up if e.startswith(("early", "probe"))] == ["early w8a8", "early w4a16"]


def test_the_scorecard_and_report_put_the_early_warning_beside_the_episode_verdict(
    hook: tuple[GridFidelity, list[str]], tmp_path: Path
) -> None:
    from _synthetic import SyntheticRun, write_synthetic_run

    from agent_eval.report.early_warning_section import early_warning_html
    from agent_eval.report.markdown import render_markdown
    from agent_eval.scoring.scorecard import score_run

    fidelity, _ = hook
    builds = load_builds()  # the default file's builds, whichever this CPU runs
    endpoints: Any = {name: object() for name in ("bf16", "w8a8", "w4a16")}
    fidelity.probe([builds.get("bf16")], endpoints)
    fidelity.warn_early([builds.get("w4a16"), builds.get("w8a8")], endpoints)
    fidelity.finish()
    write_synthetic_run(tmp_path, SyntheticRun(builds=("bf16", "w8a8", "w4a16"), tasks=("wifi_on",), seeds=6))
    card = score_run(tmp_path, reference="bf16", margin=0.1)
    verdicts = {c.build: c for c in card.regression.builds} if card.regression else {}
    w4a16 = verdicts["w4a16"]
    said = (
        f"w4a16: fidelity flagged it before its episodes after 0 s of probes; its episodes: navigation "
        f"{w4a16.navigation.verdict}, success {w4a16.success.verdict}."
    )
    markdown = render_markdown(card)
    assert "## Early warning (fidelity first)" in markdown and f"- {said}" in markdown
    assert "- w8a8: fidelity did not flag it before its episodes" in markdown
    assert said in early_warning_html(card)
