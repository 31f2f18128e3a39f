"""Generated goals are ordinary tasks: a seed's sample, written by `agent-eval tune goals --write`, passes
`agent-eval validate` on a virtual phone (each oracle reaches its goal; goals that already hold start held),
and the same seed writes the same files."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from _phones import start_phone

from agent_eval.tune.generator import load_families, split_of, wordings

ROOT = Path(__file__).resolve().parents[2]
AGENT_EVAL = [str(Path(sys.executable).parent / "agent-eval")]


def templates_of(split: str) -> int:
    """goals/*.yaml: the templates with instances of `split` (a sample of that many takes each once)."""
    return sum(
        any(split_of(f.goals.held_out, t, w) == split for w in wordings(t))
        for f in load_families(ROOT / "goals")
        for t in f.goals.templates
    )


TRAIN_TEMPLATES = templates_of("train")
HELD_OUT_TEMPLATES = templates_of("held_out")


@pytest.fixture(scope="module")
def serial() -> Iterator[str]:
    with start_phone(range(6700, 6720)) as fleet:
        yield fleet.serials[0]


def agent_eval(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*AGENT_EVAL, *args], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def write(folder: Path, seed: int, count: int, split: str) -> dict[str, str]:
    agent_eval(
        "tune", "goals", "--seed", str(seed), "--count", str(count), "--split", split, "--write", str(folder)
    )
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir())}


def test_a_seed_s_generated_goals_pass_validate_and_are_the_same_again(serial: str, tmp_path: Path) -> None:
    train = write(tmp_path / "train", 7, TRAIN_TEMPLATES, "train")
    held = write(tmp_path / "held", 7, HELD_OUT_TEMPLATES, "held_out")
    assert write(tmp_path / "again", 7, TRAIN_TEMPLATES, "train") == train
    tasks = [name for name in [*train, *held] if name.endswith(".yaml")]
    templates = {name.split(".")[0] for name in tasks}
    every = sum(len(f.goals.templates) for f in load_families(ROOT / "goals"))
    assert len(tasks) == TRAIN_TEMPLATES + HELD_OUT_TEMPLATES and len(templates) == every
    assert all("split: held_out" in text for name, text in held.items() if name.endswith(".yaml"))
    done = agent_eval("validate", str(tmp_path / "train"), str(tmp_path / "held"), "--device", serial)
    assert "all tasks valid" in done.stdout
    assert sum(line.startswith("ok ") for line in done.stdout.splitlines()) == len(tasks)
    assert done.stdout.count(" verify ") >= 3  # goals that already hold: started held, answered `done`


def test_tune_collect_plays_generated_goals_beside_the_task_files(tmp_path: Path) -> None:
    """`--generated-goals 5`: one episode each after the task files' episodes, their examples in the dataset
    under their families, and the record of what was drawn beside the demonstrations."""
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "wifi_on.yaml").write_text((ROOT / "tasks" / "wifi_on.yaml").read_text(encoding="utf-8"))
    work = tmp_path / "work"
    agent_eval(
        "tune", "--work", str(work), "--tasks", str(tasks), "collect", "--episodes-per-task", "1",
        "--phones", "1", "--phone-port", "6730", "--generated-goals", "5", "--seed", "3",
    )  # fmt: skip
    data = work / "data"
    drawn = json.loads((data / "generated.json").read_text(encoding="utf-8"))
    summary = json.loads((data / "dataset.json").read_text(encoding="utf-8"))
    assert drawn["count"] == 5 and summary["played_episodes"] == 6
    rows = [
        json.loads(line) for line in (data / "demonstrations.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert sorted(r["episode"] for r in rows) == [0, 1, 2, 3, 4, 5]  # wifi_on's, then the five drawn
    assert all(r["outcome"] == "success" for r in rows)
    generated = {ex["task_id"] for r in rows if r["episode"] > 0 for ex in r["examples"]}
    assert len(generated) == 5 and all(t.startswith("gen_") for t in generated)
    family = {t.id: f.goals.family for f in load_families(ROOT / "goals") for t in f.goals.templates}
    per_family = Counter(family[t] for t, n in drawn["per_template"].items() for _ in range(n))
    assert {
        f: n["episodes"] for f, n in summary["played_per_family"].items() if f != "settings"
    } == per_family
