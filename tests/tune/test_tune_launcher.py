"""The apps the demonstrator's detours open are the phone's home screen, as the phone itself lays it out:
read from its app files without importing it, every app but Settings, an app added there included."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_eval.errors import ConfigError
from agent_eval.tune.expert import other_apps
from agent_eval.tune.launcher import launcher_labels, phone_apps_dir
from virtual_phone.schema.app_schema import load_catalog


def test_the_labels_are_the_home_screen_s_icons_in_its_order() -> None:
    home = load_catalog().home
    screen = home.screens[home.launch_screen]
    assert launcher_labels() == tuple(i.label for i in [*screen.icons, *screen.hotseat])
    assert "Settings" in launcher_labels() and "Settings" not in other_apps()
    assert set(other_apps()) == set(launcher_labels()) - {"Settings"}


def test_an_app_file_with_an_icon_is_an_app_a_detour_can_open(tmp_path: Path) -> None:
    for path in phone_apps_dir().glob("*.yaml"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "pantry.yaml").write_text(
        "package: com.example.pantry\nlabel: Pantry\nlauncher_icon: {place: grid}\n"
    )
    assert "Pantry" in launcher_labels(tmp_path)
    empty = tmp_path / "none"
    empty.mkdir()
    with pytest.raises(ConfigError, match="no app file with a launcher icon"):
        launcher_labels(empty)
