"""Apps as data: the shipped YAML is consistent (links, bindings, defaults, intents), a new app is only data,
and a broken app file is reported with what to fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from virtual_phone.errors import PhoneConfigError
from virtual_phone.phone import Phone
from virtual_phone.schema.app_schema import APPS_DIR, load_catalog
from virtual_phone.screens.layout import layout
from virtual_phone.state.phone_state import Frame, PhoneState
from virtual_phone.views.uiautomator_xml import dump_xml


def test_every_bound_key_has_a_default_and_every_screen_is_reachable() -> None:
    catalog = load_catalog()
    defaults = catalog.defaults()
    settings = catalog.apps["com.android.settings"]
    reachable = {settings.launch_screen, settings.search_screen}  # search opens from the search bar
    for screen in settings.screens.values():
        for row in screen.rows:
            for binding in (row.bind, row.summary_bind, row.visible_when):
                if binding is not None:
                    assert binding.key in defaults[binding.namespace], (screen.title, row.title)
            if row.opens:
                reachable.add(row.opens)
    assert reachable == set(settings.screens)
    for action in (
        "android.settings.WIFI_SETTINGS",
        "android.settings.BLUETOOTH_SETTINGS",
        "android.settings.DISPLAY_SETTINGS",
        "android.settings.LOCATION_SOURCE_SETTINGS",
    ):
        assert catalog.find_action(action) is not None, action
    # Every icon on the home screen starts an installed app.
    home = catalog.home.screens[catalog.home.launch_screen]
    assert all(icon.package in catalog.apps for icon in [*home.icons, *home.hotseat])


def test_every_screen_lays_out_and_dumps() -> None:
    catalog = load_catalog()
    reads = Phone("emulator-5554", catalog=catalog).reads  # the apps' records, for the screens bound to them
    for app in catalog.apps.values():
        for sid in app.screens:
            state = PhoneState.fresh(catalog)
            state.tasks[app.package] = [Frame(sid)]
            xml = dump_xml(layout(state, catalog, data=reads))
            assert f'package="{app.package}"' in xml
            assert xml.endswith("</hierarchy>")


def test_a_new_app_is_a_data_change(tmp_path: Path) -> None:
    for name in ("launcher.yaml", "settings.yaml"):
        shutil.copy(APPS_DIR / name, tmp_path / name)
    (tmp_path / "notes.yaml").write_text(
        "package: com.example.notes\nlabel: Notes\nlaunch_screen: main\nlauncher_icon: {place: grid}\n"
        "screens:\n  main:\n    title: Notes\n    activity: .NotesActivity\n"
        "    actions: [com.example.NOTES]\n"
        "    rows:\n      - {title: Shopping list, opens: list}\n"
        "  list:\n    title: Shopping list\n    activity: .ListActivity\n"
        "    rows:\n      - {title: Sync, kind: switch, bind: {namespace: secure, key: notes_sync}}\n"
        "defaults:\n  secure: {notes_sync: '0'}\n"
    )
    catalog = load_catalog(tmp_path)
    assert catalog.find_action("com.example.NOTES") == ("com.example.notes", "main")
    assert catalog.find_component("com.example.notes", ".ListActivity") == "list"
    assert catalog.defaults()["secure"]["notes_sync"] == "0"
    assert catalog.apps["com.example.notes"].short_component("list") == "com.example.notes/.ListActivity"
    home = catalog.home.screens[catalog.home.launch_screen]  # its icon after Settings' (which has an order)
    assert [(i.label, i.package) for i in home.icons] == [
        ("Settings", "com.android.settings"),
        ("Notes", "com.example.notes"),
    ]


def test_the_home_screen_is_each_app_s_own_icon_in_order() -> None:
    home = load_catalog().home
    screen = home.screens[home.launch_screen]
    # Today's apps keep their places (an app added without an `order` comes after them).
    today = ["Clock", "Files", "Calendar", "Settings", "Contacts", "Markor"]
    assert [i.label for i in screen.icons][: len(today)] == today
    assert [i.label for i in screen.hotseat] == ["Phone", "Messages", "Chrome", "Camera"]


NOTES = (
    "package: com.example.notes\nlabel: Notes\nlaunch_screen: main\n{icon}"
    "screens:\n  main:\n    title: Notes\n    activity: .Notes\n"
)


@pytest.mark.parametrize(
    ("icon", "launcher", "message"),
    [
        (
            "",
            "",
            "notes.yaml: app com.example.notes has no launcher icon, so an agent cannot open it by tapping; "
            "add `launcher_icon: {place: grid}` to it",
        ),
        (
            "launcher_icon: {place: grid}\n",
            "    icons: [{label: Notes, package: com.example.note}]\n",
            "the home screen's icon 'Notes' starts com.example.note, which no app file declares",
        ),
        ("launcher_icon: {place: hotseat}\n", "", "the hotseat holds 4 icons, and more ask for it"),
    ],
)
def test_an_app_that_cannot_be_tapped_open_is_refused_naming_the_file(
    tmp_path: Path, icon: str, launcher: str, message: str
) -> None:
    for path in APPS_DIR.glob("*.yaml"):
        shutil.copy(path, tmp_path / path.name)
    launcher_file = tmp_path / "launcher.yaml"
    launcher_file.write_text(launcher_file.read_text() + launcher)
    (tmp_path / "notes.yaml").write_text(NOTES.format(icon=icon))
    with pytest.raises(PhoneConfigError) as err:
        load_catalog(tmp_path)
    assert message in str(err.value)
    assert str(tmp_path / ("launcher.yaml" if launcher else "notes.yaml")) in str(err.value)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("{title: Broken, opens: nowhere}", "opens unknown screen 'nowhere'"),
        ("{title: Broken, kind: switch}", "a switch row needs `bind`"),
        ("{title: Broken, kind: sparkle}", "kind"),
    ],
)
def test_a_broken_app_file_says_what_to_fix(tmp_path: Path, row: str, message: str) -> None:
    shutil.copy(APPS_DIR / "launcher.yaml", tmp_path / "launcher.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        f"package: com.example.bad\nlabel: Bad\nlaunch_screen: main\n"
        f"screens:\n  main:\n    title: Bad\n    activity: .Bad\n    rows:\n      - {row}\n"
    )
    with pytest.raises(PhoneConfigError, match=r"bad\.yaml is invalid") as err:
        load_catalog(tmp_path)
    assert message in str(err.value)
