"""Typing accuracy from a real run: scripted endpoints type a contact on a virtual phone through the real
adb server, the runner records which field each text went to, and the scorecard compares it with the seed's
intended text."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
import yaml
from rich.console import Console
from scripted_endpoint import DONE, Move, ScriptedEndpoint, answer, element_number, tap

from agent_eval.grid import GridSpec, run_grid
from agent_eval.scoring.scorecard import score_run
from virtual_phone import start_fleet

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
TASK = REPO / "tasks" / "apps" / "contacts" / "contacts_add.yaml"
_GOAL = re.compile(r"Add a contact named (.+?) with the phone number (.+?)\.")


def _type_into(label: str, which: int, slip: bool = False) -> Move:
    """Type the goal's name (which=1) or number (2) into the field labelled `label`; `slip` swaps 'a'
    for 'o' once, a one-character typo."""

    def move(prompt: str) -> str:
        goal = _GOAL.search(prompt)
        number = element_number(prompt, label)
        if goal is None or number is None:
            return f"no goal or no field {label!r}"
        text = goal.group(which)
        return json.dumps(
            {"type": "type", "element": number, "text": text.replace("a", "o", 1) if slip else text}
        )

    return move


def _builds_file(path: Path, agents: dict[str, ScriptedEndpoint]) -> Path:
    builds = [
        {"name": name, "reference": name == "steady", "scheme": "endpoint", "engine": "endpoint"}
        | {"base_url": agent.url, "model": agent.model}
        for name, agent in agents.items()
    ]
    path.write_text(yaml.safe_dump({"builds": builds}))
    return path


def _script(slip: bool) -> list[Move]:
    return [
        answer({"type": "open_app", "app": "Contacts"}),
        tap("Create contact"),
        _type_into("Name", 1, slip),
        _type_into("Phone", 2),
        tap("Save"),
        DONE,
    ]


def test_typed_text_is_scored_against_the_seed_s_intended_text(tmp_path: Path) -> None:
    steady = ScriptedEndpoint(_script(slip=False), model="steady")
    sloppy = ScriptedEndpoint(_script(slip=True), model="sloppy")
    run_dir = tmp_path / "run"
    with steady, sloppy, start_fleet(count=1, base_port=6170) as fleet:
        spec = GridSpec(
            tasks=[str(TASK)],
            builds_file=str(_builds_file(tmp_path / "b.yaml", {"steady": steady, "sloppy": sloppy})),
            seeds=2,
            adaptive={"enabled": False},
            devices=fleet.serials,
            run_dir=str(run_dir),
        )
        out = io.StringIO()
        result = run_grid(spec, console=Console(file=out, width=200), bars=False, html=False)
    assert result.problems == [], out.getvalue()[-3000:]
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["tasks"][0]["family"] == "contacts/add"
    steps = [
        json.loads(line)
        for line in (run_dir / "episodes" / "steady" / "contacts_add" / "0" / "steps.jsonl")
        .read_text()
        .splitlines()
    ]
    typed = [
        (s["action"]["text"], s["target_id"]) for s in steps if s["action"] and s["action"]["type"] == "type"
    ]
    assert typed == [("Chris Park", "display_name"), ("+1 555-0131", "number")]  # seed 0's parameters
    card = score_run(run_dir)
    by_build = {t.build: t for t in card.typing}
    assert by_build["steady"].accuracy == 1.0 and by_build["steady"].steps == 4
    # Seed 0 types "Chris Pork" (1 of 10 characters wrong), seed 1 "Moya Singh" (1 of 10); numbers right.
    assert by_build["sloppy"].accuracy == pytest.approx((0.9 + 1.0 + 0.9 + 1.0) / 4)
    assert {b.build: b.success.count for b in card.builds} == {"steady": 2, "sloppy": 0}
