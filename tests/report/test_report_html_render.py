"""The report as a browser shows it: headless Chromium renders report.html from file://, and the rendered
DOM is checked against scorecard.json, the undone episode's goal timeline, and the screenshots loading."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from _synthetic import SyntheticRun, write_synthetic_run
from PIL import Image
from scripted_endpoint import DONE, ScriptedEndpoint, tap

from agent_eval.records import EpisodeRecord, Outcome, StepRecord
from agent_eval.report.html import write_html_report
from agent_eval.report.markdown import write_scorecard
from agent_eval.scoring.scorecard import Scorecard, score_run
from agent_eval.screen.uitree import parse_ui
from virtual_phone import start_fleet

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (scripts/setup.sh)"
)
# A real small run can be pointed at instead of the synthetic one (its episodes must include an undone one).
REAL_RUN = os.environ.get("AGENT_EVAL_REPORT_TEST_RUN")
REPO = Path(__file__).resolve().parents[2]
AGENT_EVAL = str(Path(sys.executable).parent / "agent-eval")
PHONE_PORT = 5960  # the report's own virtual phone; other parts' tests use 5600..5900


def _chromium(url: str, profile: Path, *extra: str) -> str:
    assert CHROMIUM is not None
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", "--window-size=1400,5000", "--virtual-time-budget=5000",
        "--enable-logging=stderr", "--v=0", *extra, url,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    # The page's script must run clean: a console error is logged as CONSOLE, an exception as "Uncaught".
    assert "Uncaught" not in done.stderr and ":CONSOLE" not in done.stderr, done.stderr[-2000:]
    return done.stdout


_VOID = {"img", "br", "meta", "input", "hr", "link", "source"}


class _Dom(HTMLParser):
    """Every element with its attributes, the text directly inside it, and its parent, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[dict[str, str]] = []
        self.texts: list[list[str]] = []
        self.parents: list[int] = []
        self._open: list[int] = []

    def _add(self, tag: str, attrs: list[tuple[str, str | None]]) -> int:
        self.tags.append(tag)
        self.attrs.append({k: v or "" for k, v in attrs})
        self.texts.append([])
        self.parents.append(self._open[-1] if self._open else -1)
        return len(self.tags) - 1

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        index = self._add(tag, attrs)
        if tag not in _VOID:
            self._open.append(index)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._add(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        while self._open and self.tags[self._open.pop()] != tag:
            pass

    def handle_data(self, data: str) -> None:
        if self._open:
            self.texts[self._open[-1]].append(data)

    def having(self, attribute: str, value: str | None = None, within: int | None = None) -> list[int]:
        return [
            i
            for i, attrs in enumerate(self.attrs)
            if attribute in attrs
            and (value is None or attrs[attribute] == value)
            and (within is None or self._inside(i, within))
        ]

    def _inside(self, index: int, ancestor: int) -> bool:
        while index >= 0:
            index = self.parents[index]
            if index == ancestor:
                return True
        return False

    def text(self, index: int) -> str:
        return "".join(self.texts[index]).strip()


Rendered = tuple[Path, dict[str, Any], EpisodeRecord, _Dom]


def _lookup(document: Any, path: str) -> Any:
    for part in path.split("."):
        document = document[int(part)] if isinstance(document, list) else document[part]
    return document


def _shown_number(text: str) -> float:
    return float(text.strip().replace("−", "-").replace("+", ""))


def _synthetic_run(base: Path) -> Path:
    run_dir = base / "run-1"
    spec = SyntheticRun(builds=("bf16", "w8a8", "w4a16"), tasks=("wifi_on", "bt_off"), seeds=4)
    write_synthetic_run(run_dir, spec)
    return run_dir


def _virtual_phone_run(base: Path) -> Path:
    """A real run, as a user makes one: `agent-eval run` on the virtual phone, a scripted endpoint that turns
    Wi-Fi on and off again, then `agent-eval report`."""
    run_dir = base / "run-phone"
    script = [tap("Settings"), tap("Network & internet"), tap("Internet"), tap("Wi-Fi"), tap("Wi-Fi"), DONE]
    env = {**os.environ, "COLUMNS": "200", "HF_HUB_OFFLINE": "1"}
    with start_fleet(count=1, base_port=PHONE_PORT) as fleet, ScriptedEndpoint(script) as endpoint:
        run = [AGENT_EVAL, "run", str(REPO / "tasks" / "wifi_on.yaml"), "--endpoint", endpoint.url,
               "--model", "scripted", "--seeds", "1", "--device", fleet.serials[0],
               "--run-dir", str(run_dir)]  # fmt: skip
        done = subprocess.run(
            run, capture_output=True, text=True, timeout=300, cwd=REPO, env=env, check=False
        )
        assert done.returncode == 0, done.stderr
    done = subprocess.run([AGENT_EVAL, "report", str(run_dir)], capture_output=True, text=True, timeout=120,
                          env=env, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return run_dir


@pytest.fixture(scope="module", params=["synthetic", pytest.param("virtual-phone", marks=pytest.mark.slow)])
def rendered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    base = tmp_path_factory.mktemp("runs")
    if REAL_RUN:
        run_dir = Path(REAL_RUN)
    elif request.param == "synthetic":
        run_dir = _synthetic_run(base)
        write_scorecard(run_dir, score_run(run_dir))
    else:
        run_dir = _virtual_phone_run(base)
    # The page is made from the scorecard as saved, the way `agent-eval report` and `view` make it.
    card = Scorecard.model_validate_json((run_dir / "scorecard.json").read_text())
    report = write_html_report(run_dir, card, thumbnail_budget_s=None)
    episodes = [
        EpisodeRecord.model_validate_json(line)
        for line in (run_dir / "episodes.jsonl").read_text().splitlines()
    ]
    undone = next(e for e in episodes if e.outcome is Outcome.UNDONE)
    url = f"{report.as_uri()}#task={undone.task_id}&seed={undone.seed}"
    profile = tmp_path_factory.mktemp("chromium")
    dom = _Dom()
    # One page load gives both: the rendered DOM on stdout and the page's picture, kept with the run.
    dom.feed(_chromium(url, profile, "--dump-dom", f"--screenshot={run_dir / 'report-screenshot.png'}"))
    return run_dir, json.loads((run_dir / "scorecard.json").read_text()), undone, dom


def test_every_number_on_the_page_is_the_one_in_scorecard_json(rendered: Rendered) -> None:
    _, scorecard, _, dom = rendered
    cells = dom.having("data-path")
    assert len(cells) >= 30 * len(scorecard["builds"])
    paths = {dom.attrs[i]["data-path"] for i in cells}
    for i, _ in enumerate((scorecard["regression"] or {}).get("builds", [])):
        assert (
            f"regression.builds.{i}.success.verdict" in paths and f"regression.builds.{i}.sentence" in paths
        )
    for i, build in enumerate(scorecard["builds"]):
        for metric in ("navigation", "recognition", "success"):
            assert f"builds.{i}.{metric}.rate" in paths, (build["build"], metric)
        assert f"builds.{i}.outcomes.undone" in paths
    for i in cells:
        path, shown = dom.attrs[i]["data-path"], dom.text(i)
        expected = _lookup(scorecard, path)
        assert json.loads(dom.attrs[i]["data-value"]) == expected, path
        if isinstance(expected, (int, float)) and not isinstance(expected, bool):
            # What is shown is the value rounded to the digits shown.
            if "e" in shown:
                assert _shown_number(shown) == pytest.approx(expected, rel=0.05), path
            else:
                decimals = len(shown.split(".")[1]) if "." in shown else 0
                assert abs(_shown_number(shown) - expected) <= 0.5 * 10**-decimals + 1e-9, (
                    path,
                    shown,
                    expected,
                )
        elif expected is None:
            assert shown == "–", path
        else:
            assert shown == str(expected), path


def test_the_rate_plot_draws_the_scorecard_rates(rendered: Rendered) -> None:
    _, scorecard, _, dom = rendered
    bars = {
        (dom.attrs[i]["data-build"], dom.attrs[i]["data-metric"]): float(dom.attrs[i]["data-value"])
        for i in dom.having("class", "rate")
    }
    drawn = [b for b in scorecard["builds"] if b["success"]["rate"] is not None]
    assert drawn
    for build in drawn:
        assert bars[build["build"], "success"] == build["success"]["rate"]
        assert bars[build["build"], "reached in play"] == build["navigation"]["rate"]


def test_the_outcome_and_latency_plots_draw_the_scorecard_numbers(rendered: Rendered) -> None:
    _, scorecard, _, dom = rendered

    def parts(figure: str) -> dict[tuple[str, str], float]:
        [box] = dom.having("id", figure)
        return {
            (dom.attrs[i]["data-row"], dom.attrs[i]["data-part"]): float(dom.attrs[i]["data-value"])
            for i in dom.having("class", "part", within=box)
        }

    outcomes, latency = parts("plot-outcomes"), parts("plot-latency")
    for build in scorecard["builds"]:
        for outcome, count in build["outcomes"].items():
            assert outcomes.get((build["build"], outcome), 0.0) == count
        for phase in ("observe_s", "model_s", "act_s", "check_s", "harness_s"):
            value = build["latency_per_step"][phase]
            assert latency.get((build["build"], phase[:-2]), 0.0) == value


def test_the_undone_episode_shows_its_goal_going_on_then_off(rendered: Rendered) -> None:
    _, _, undone, dom = rendered
    [section] = [
        i for i in dom.having("data-build", undone.build) if "episode" in dom.attrs[i].get("class", "")
    ]
    assert dom.attrs[section]["data-outcome"] == "undone"
    ticks = [dom.attrs[i] for i in dom.having("data-goal", within=section) if dom.tags[i] == "span"]
    goal = [t["data-goal"] == "on" for t in ticks]
    assert goal == undone.goal_timeline
    first_on = goal.index(True)
    first_off_after = goal.index(False, first_on)
    assert ticks[first_on].get("data-mark") == "reached"
    assert ticks[first_off_after].get("data-mark") == "undone"


def test_the_screenshots_load_and_none_is_broken(rendered: Rendered) -> None:
    run_dir, _, undone, dom = rendered
    images = [dom.attrs[i] for i in dom.having("src") if dom.tags[i] == "img"]
    expected = sum(
        len(list((build_dir / undone.task_id / str(undone.seed)).glob("step-*.png")))
        for build_dir in (run_dir / "episodes").iterdir()
    )
    assert len(images) == expected > 0
    assert all(a.get("data-loaded") == "1" and "data-broken" not in a for a in images)
    assert all(a.get("loading") == "lazy" and a["src"].startswith("thumbs/") for a in images)
    [body] = dom.having("data-viewer-ready")
    assert dom.attrs[body]["data-images-loaded"] == str(expected)
    assert dom.attrs[body]["data-images-broken"] == "0"


def test_the_page_screenshot_is_kept_in_the_run_directory(rendered: Rendered) -> None:
    run_dir = rendered[0]
    with Image.open(run_dir / "report-screenshot.png") as shot:
        assert shot.size == (1400, 5000)
        colours = shot.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 50  # tables, plots and screenshots, not a blank page


def test_each_tap_is_drawn_on_the_centre_of_the_element_it_named(rendered: Rendered) -> None:
    run_dir, _, undone, dom = rendered
    [section] = [
        i for i in dom.having("data-build", undone.build) if "episode" in dom.attrs[i].get("class", "")
    ]
    episode_dir = run_dir / undone.episode_dir
    checked = 0
    for line in (episode_dir / "steps.jsonl").read_text().splitlines():
        step = StepRecord.model_validate_json(line)
        if step.action is None or step.action.type != "tap" or step.action.element is None or not step.ui_xml:
            continue
        elements, _ = parse_ui((episode_dir / step.ui_xml).read_text())
        centre = next(e.bounds.center for e in elements if e.index == step.action.element)
        [card] = [i for i in dom.having("data-step", str(step.step), within=section)]
        [circle] = [i for i in dom.having("class", "tap", within=card)]
        assert (int(dom.attrs[circle]["cx"]), int(dom.attrs[circle]["cy"])) == centre
        checked += 1
    assert checked > 0


def test_a_link_with_an_outcome_opens_the_first_cell_that_has_it_and_dims_the_rest(
    rendered: Rendered, tmp_path: Path
) -> None:
    run_dir = rendered[0]
    dom = _Dom()
    dom.feed(_chromium(f"{(run_dir / 'report.html').as_uri()}#outcome=undone", tmp_path, "--dump-dom"))
    [body] = dom.having("data-viewer-ready")
    assert dom.attrs[body]["data-filter"] == "undone"
    [viewer] = dom.having("id", "viewer")
    shown = [
        dom.attrs[i]["data-outcome"]
        for i in dom.having("data-outcome", within=viewer)
        if dom.tags[i] == "section"
    ]
    assert "undone" in shown
    cells = [dom.attrs[i] for i in dom.having("data-outcomes")]
    assert cells
    for cell in cells:
        assert ("dim" in cell["class"].split()) is ("undone" not in cell["data-outcomes"].split())
