"""docs/extending.md's "Adding an app and a task family", done as written: its Pantry app and tasks are
written into a temporary copy of the project, and nothing else is edited there. The copy's own tests that
read apps and families from disk pass with the new app in them, its screen previews as the doc shows, and
`agent-eval validate` plays its tasks. Without a launcher icon, or with a screen that does not fit its data,
validate fails and says what to fix, every line of it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _phones import port_free

REPO = Path(__file__).resolve().parent.parent
SECTION = "## Adding an app and a task family"
PORTS = range(6500, 6590, 2)  # this test's phones: a free pair of adb ports from here


def section() -> str:
    text = (REPO / "docs" / "extending.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end >= 0 else len(text)]


def files_of_the_doc() -> dict[str, str]:
    """Each YAML block of the section whose first line names its path (`# tasks/apps/pantry/x.yaml`)."""
    blocks = re.findall(r"```yaml\n(# ([\w./-]+)\n.*?)```", section(), flags=re.S)
    return {path: text for text, path in blocks}


def python_of_the_doc() -> list[str]:
    return re.findall(r"```python\n(.*?)```", section(), flags=re.S)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project with the doc's files added, and nothing else changed."""
    root = tmp_path_factory.mktemp("project")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("agent_eval", "virtual_phone", "tasks", "tests"):
        shutil.copytree(REPO / part, root / part, ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    written = files_of_the_doc()
    assert set(written) == {
        "virtual_phone/apps/pantry.yaml",
        "tasks/apps/pantry/pantry_add.yaml",
        "tasks/apps/pantry/pantry_add_held_out.yaml",
    }
    for path, text in written.items():
        assert not (root / path).exists(), f"the doc's {path} would replace a file of the project"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


def run(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True, timeout=900
    )


def validate(tree: Path) -> subprocess.CompletedProcess[str]:
    port = next(p for p in PORTS if port_free(p) and port_free(p + 1))
    return run(
        tree, "-m", "agent_eval", "validate", "tasks/apps/pantry", "--virtual", "--phone-port", str(port)
    )


def test_the_tests_that_read_apps_from_disk_take_the_new_app_as_it_is(tree: Path) -> None:
    done = run(
        tree, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
        "tests/task/test_task_families.py",
        "tests/scoring/test_scoring_families.py::test_every_task_file_has_an_app_and_a_family",
        "tests/tune/test_tune_families.py::test_tune_reads_every_family_and_grids_still_read_settings_only",
        "tests/tune/test_tune_families.py::test_every_training_template_has_several_wordings_and_held_out_ones",
        "tests/phone/test_phone_appdata.py::test_every_app_with_data_has_its_default_records",
        "tests/phone/test_phone_apps.py",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    seen = run(
        tree, "-c",
        "from pathlib import Path\n"
        "from agent_eval.tune.collect import held_out_goals, training_tasks\n"
        "from agent_eval.tune.families import families, tune_tasks\n"
        "from virtual_phone.schema.app_schema import load_catalog\n"
        "tasks = tune_tasks(Path('tasks'))\n"
        "home = load_catalog().home\n"
        "print(families(training_tasks(tasks))['pantry'], held_out_goals(tasks)['pantry_add_held_out'][0])\n"
        "print([i.label for i in home.screens[home.launch_screen].icons][-1])\n"
        "from agent_eval.tune.expert import other_apps\n"
        "print('Pantry' in other_apps())\n",  # the demonstrator's detours open it too
    )  # fmt: skip
    assert seen.stdout.splitlines() == [
        "1 Write down in Pantry that I have 2 Flour.", "Pantry", "True"
    ], seen.stderr  # fmt: skip


def test_the_screen_previews_as_the_doc_shows(tree: Path) -> None:
    blocks = python_of_the_doc()
    assert len(blocks) == 2  # the app module's format, the preview
    done = run(tree, "-c", "\n".join(blocks) + "\nfrom virtual_phone.records.templates import fill\n"
               "print(fill('{stars(n)}', {'n': 3}))\n")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Olive oil" in done.stdout and 'content-desc="Add item"' in done.stdout
    assert done.stdout.splitlines()[-1] == "★★★"
    assert (tree / "items.png").read_bytes().startswith(b"\x89PNG")


def test_validate_plays_the_new_app_s_tasks(tree: Path) -> None:
    done = validate(tree)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("\nok   pantry_add") == 4 and "all tasks valid" in done.stdout


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        ("launcher_icon: {place: grid}\n", "", [
            "virtual_phone/apps/pantry.yaml: app com.example.pantry has no launcher icon, so an agent cannot "
            "open it by tapping; add `launcher_icon: {place: grid}` to it",
        ]),
        ('summary: "{quantity} left"', 'summary: "{quantty} left"', [
            "app screens do not fit their data; fix them:",
            "virtual_phone/apps/pantry.yaml: screens.items.records.summary: unknown column 'quantty'",
        ]),
    ],
)  # fmt: skip
def test_validate_says_what_to_fix_in_the_app_s_file(tree: Path, old: str, new: str, says: list[str]) -> None:
    app = tree / "virtual_phone" / "apps" / "pantry.yaml"
    good = app.read_text(encoding="utf-8")
    assert old in good
    app.write_text(good.replace(old, new), encoding="utf-8")
    try:
        done = validate(tree)
    finally:
        app.write_text(good, encoding="utf-8")
    out = (done.stdout + done.stderr).replace(str(tree) + "/", "")
    assert done.returncode != 0
    assert all(line in out for line in says), out
