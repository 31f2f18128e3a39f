"""What the trajectory viewer is fed: overlays in screen pixels, cached thumbnails, episodes that count."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from _synthetic import SyntheticRun, ui_xml, write_synthetic_run
from PIL import Image

from agent_eval.action import Action, ActionType
from agent_eval.records import Outcome, StepRecord
from agent_eval.report.html import write_html_report
from agent_eval.report.thumbnails import THUMB_WIDTH, episode_thumbnails, thumbnail
from agent_eval.report.trajectory import describe, element_centres, element_name, episode_view, overlay
from agent_eval.rundir import read_episodes, read_steps, settle_attempts
from agent_eval.scoring.scorecard import score_run
from agent_eval.screen.uitree import parse_ui

WIDTH, HEIGHT = 1080, 2400


def test_a_tap_on_an_element_lands_on_the_centre_of_that_elements_bounds() -> None:
    xml = ui_xml(WIDTH, HEIGHT, checked=False)
    elements, _ = parse_ui(xml)
    wifi = next(e for e in elements if e.text == "Wi-Fi")
    drawn = overlay(Action(type=ActionType.TAP, element=wifi.index), WIDTH, HEIGHT, xml, element_centres)
    assert (drawn.kind, drawn.x, drawn.y) == ("tap", *wifi.bounds.center)
    assert drawn.label == f"tap [{wifi.index}]"


def test_a_tap_on_an_element_the_screen_did_not_have_is_labelled_but_not_placed() -> None:
    xml = ui_xml(WIDTH, HEIGHT, checked=False)
    drawn = overlay(Action(type=ActionType.TAP, element=99), WIDTH, HEIGHT, xml, element_centres)
    assert drawn.x is None and drawn.label == "tap [99]"
    broken = overlay(Action(type=ActionType.TAP, element=1), WIDTH, HEIGHT, "<not xml", element_centres)
    assert broken.x is None


def test_a_tap_by_coordinates_is_drawn_where_it_was_made() -> None:
    drawn = overlay(Action(type=ActionType.LONG_PRESS, x=100, y=2000), WIDTH, HEIGHT, None, None)
    assert (drawn.kind, drawn.x, drawn.y, drawn.label) == ("long_press", 100, 2000, "long press (100, 2000)")


def test_a_swipe_is_an_arrow_through_the_screen_centre_pointing_its_way() -> None:
    up = overlay(Action(type=ActionType.SWIPE, direction="up"), WIDTH, HEIGHT, None, None)
    assert up.x == up.x2 == WIDTH // 2
    assert up.y is not None and up.y2 is not None and up.y > HEIGHT // 2 > up.y2
    right = overlay(Action(type=ActionType.SWIPE, direction="right"), WIDTH, HEIGHT, None, None)
    assert right.x is not None and right.x2 is not None and right.x < WIDTH // 2 < right.x2
    assert right.y == right.y2 == HEIGHT // 2


def test_a_scroll_on_an_element_starts_from_that_element() -> None:
    xml = ui_xml(WIDTH, HEIGHT, checked=False)
    elements, _ = parse_ui(xml)
    target = elements[2]
    drawn = overlay(
        Action(type=ActionType.SCROLL, element=2, direction="down"), WIDTH, HEIGHT, xml, element_centres
    )
    assert drawn.x == drawn.x2 == target.bounds.center[0]
    assert drawn.y is not None and drawn.y2 is not None
    assert (drawn.y + drawn.y2) // 2 == target.bounds.center[1] and drawn.y2 > drawn.y


def test_terminal_invalid_and_other_actions_are_markers_with_words() -> None:
    assert overlay(Action(type=ActionType.DONE), WIDTH, HEIGHT, None, None).kind == "done"
    assert overlay(Action(type=ActionType.INFEASIBLE), WIDTH, HEIGHT, None, None).kind == "infeasible"
    assert overlay(None, WIDTH, HEIGHT, None, None).kind == "invalid"
    assert describe(Action(type=ActionType.TYPE, text="hello")) == 'type "hello"'
    assert describe(Action(type=ActionType.KEY, key="back")) == "key back"
    assert describe(Action(type=ActionType.OPEN_APP, app="Settings")) == "open Settings"
    assert describe(Action(type=ActionType.WAIT, seconds=2)) == "wait 2 s"


def test_thumbnails_are_small_made_once_and_remade_when_the_screenshot_changes(tmp_path: Path) -> None:
    shot = tmp_path / "episodes" / "b" / "t" / "0" / "step-001.png"
    shot.parent.mkdir(parents=True)
    Image.new("RGB", (WIDTH, HEIGHT), (10, 200, 30)).save(shot)
    first = thumbnail(tmp_path, shot)
    assert first is not None and (first.width, first.height) == (WIDTH, HEIGHT)
    made = tmp_path / first.path
    assert first.path == "thumbs/episodes/b/t/0/step-001.jpg"
    with Image.open(made) as small:
        assert small.width <= THUMB_WIDTH * 2 and small.width * HEIGHT // WIDTH - small.height in (-1, 0, 1)
        assert small.getpixel((5, 5))[1] > 150  # the picture, not a blank
    made_at = made.stat().st_mtime_ns
    assert thumbnail(tmp_path, shot) == first
    assert made.stat().st_mtime_ns == made_at  # reused, not rewritten
    later = made.stat().st_mtime + 5
    Image.new("RGB", (WIDTH, HEIGHT), (200, 10, 30)).save(shot)
    os.utime(shot, (later, later))
    assert thumbnail(tmp_path, shot) == first
    with Image.open(made) as small:
        assert small.getpixel((5, 5))[0] > 150


def test_a_missing_or_damaged_screenshot_has_no_thumbnail(tmp_path: Path) -> None:
    assert thumbnail(tmp_path, tmp_path / "step-001.png") is None
    (tmp_path / "step-002.png").write_bytes(b"\x89PNG not really")
    assert thumbnail(tmp_path, tmp_path / "step-002.png") is None


def test_only_the_last_attempt_counts_and_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    run = tmp_path / "run"
    written = write_synthetic_run(run, SyntheticRun(builds=("bf16", "w4a16"), tasks=("wifi_on",), seeds=2))
    with (run / "episodes.jsonl").open("a") as out:
        out.write('{"schema_version": 1, "run_id": "run", "bui')
    episodes = settle_attempts(read_episodes(run))
    assert len(episodes.final) == len(written) - 1
    assert [e.outcome for e in episodes.retried] == [Outcome.INFRA_ERROR]
    retried = next(e for e in episodes.final if (e.build, e.task_id, e.seed) == ("w4a16", "wifi_on", 0))
    assert retried.attempt == 2 and retried.outcome is Outcome.UNDONE


def test_an_episode_view_has_every_step_with_its_thumbnail_answer_and_goal(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_synthetic_run(run, SyntheticRun(builds=("bf16",), tasks=("wifi_on",), seeds=1))
    [episode] = settle_attempts(read_episodes(run)).final
    steps = read_steps(run, episode)
    view = episode_view(run, episode, steps)
    assert view["timeline"] == episode.goal_timeline
    assert [s["n"] for s in view["steps"]] == list(range(1, episode.steps + 1))
    for step, record in zip(view["steps"], steps, strict=True):
        assert (run / step["thumb"]).is_file() and (run / step["full"]).is_file()
        assert step["raw"] == record.raw_answer and step["elements"] == record.elements
        assert step["goal"] == record.goal_after
        assert step["total_s"] == round(sum(record.latency.model_dump().values()), 3)
    assert view["steps"][-1]["overlay"]["kind"] == "done"


def test_a_step_that_names_an_element_says_which_one_the_agent_saw() -> None:
    lines = ['[0] TextView "Clock"', '[3] Switch "Wi-Fi" checked=false', "[4] View id=toolbar"]
    assert element_name(lines, 3) == '"Wi-Fi"'
    assert element_name(lines, 4) == "View id=toolbar"
    assert element_name(lines, 9) == ""


def test_the_viewer_labels_a_tap_with_the_elements_label(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_synthetic_run(run, SyntheticRun(builds=("bf16",), tasks=("wifi_on",), seeds=3))
    labelled = 0
    for episode in settle_attempts(read_episodes(run)).final:
        steps = read_steps(run, episode)
        view = episode_view(run, episode, steps)
        for shown, record in zip(view["steps"], steps, strict=True):
            if (
                record.action is not None
                and record.action.type == "tap"
                and record.action.element is not None
            ):
                name = element_name(record.elements, record.action.element)
                assert name and shown["overlay"]["label"] == f"tap [{record.action.element}] {name}"
                labelled += 1
    assert labelled > 0


def test_an_answer_that_looks_like_html_stays_text_in_the_page(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_synthetic_run(run, SyntheticRun(builds=("bf16", "w4a16"), tasks=("wifi_on",), seeds=1))
    hostile = '</script><script>document.title="owned"</script><!-- <b>'
    episode_dir = run / "episodes" / "w4a16" / "wifi_on" / "0"
    lines = (episode_dir / "steps.jsonl").read_text().splitlines()
    first = StepRecord.model_validate_json(lines[0]).model_copy(update={"raw_answer": hostile})
    (episode_dir / "steps.jsonl").write_text("\n".join([first.model_dump_json(), *lines[1:]]) + "\n")
    page = write_html_report(run, score_run(run)).read_text()
    assert hostile not in page and "<script>document.title" not in page
    scripts = re.findall(r'<script type="application/json" id="episodes-data">(.*?)</script>', page, re.S)
    [data] = scripts
    shown = [s["raw"] for e in json.loads(data) if e["build"] == "w4a16" for s in e["steps"]]
    assert shown[0] == hostile


def test_thumbnails_made_as_an_episode_finishes_are_the_ones_the_report_uses(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_synthetic_run(run, SyntheticRun(builds=("bf16",), tasks=("wifi_on",), seeds=1))
    [episode] = settle_attempts(read_episodes(run)).final
    assert episode_thumbnails(run, run / episode.episode_dir) == episode.steps
    made = {p: p.stat().st_mtime_ns for p in (run / "thumbs").rglob("*.jpg")}
    assert len(made) == episode.steps
    write_html_report(run, score_run(run), thumbnail_budget_s=0.0)
    assert {p: p.stat().st_mtime_ns for p in (run / "thumbs").rglob("*.jpg")} == made


def test_past_the_time_budget_a_step_shows_its_full_screenshot_instead(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_synthetic_run(run, SyntheticRun(builds=("bf16",), tasks=("wifi_on",), seeds=2))
    page = write_html_report(run, score_run(run), thumbnail_budget_s=0.0).read_text()
    assert not (run / "thumbs").exists()
    sources = re.findall(r'"thumb":"([^"]+)"', page)
    assert sources and all(s.startswith("episodes/") and s.endswith(".png") for s in sources)
    page = write_html_report(run, score_run(run)).read_text()
    assert all(s.startswith("thumbs/") for s in re.findall(r'"thumb":"([^"]+)"', page))


def test_the_builds_table_tells_builds_apart_and_links_each_engine_log(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_synthetic_run(run, SyntheticRun(builds=("bf16", "w4a16"), tasks=("wifi_on",), seeds=1))
    page = write_html_report(run, score_run(run)).read_text()
    table = page[page.index('<table id="builds">') :]
    table = table[: table.index("</table>")]
    rows = re.findall(r"<tr><td class=\"name\">(.*?)</td>(.*?)</tr>", table)
    assert [name for name, _ in rows] == ["bf16", "w4a16"]
    for name, cells in rows:
        assert f"<td>{name}</td>" in cells  # the scheme
        [log] = re.findall(r'<a href="([^"]+)">log</a>', cells)
        assert (run / log).read_text().startswith(f"INFO serving {name}")
        assert f"/models/{name}" in cells
