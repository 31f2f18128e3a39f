"""Apps as data: the schema of apps/*.yaml (screens, rows, bindings to settings keys) and its loader.

Adding an app or a screen is a change to a YAML file here; nothing in the phone's code names a screen.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from virtual_phone.errors import PhoneConfigError
from virtual_phone.schema.appdata_schema import AppData
from virtual_phone.schema.screen_data import RecordDetail, RecordForm, RecordList

APPS_DIR = Path(__file__).parent.parent / "apps"

Namespace = Literal["global", "secure", "system", "device"]
SETTINGS_NAMESPACES: tuple[str, ...] = ("global", "secure", "system")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Binding(_Strict):
    """A key of the phone's state: a settings key (global/secure/system) or device-only state."""

    namespace: Namespace
    key: str


class Condition(_Strict):
    """Shows a row only while a key holds one of the given values."""

    namespace: Namespace
    key: str
    equals: list[str]


class Option(_Strict):
    """One choice of a choice dialog: the label shown and the value stored."""

    label: str
    value: str


class Row(_Strict):
    """One row of a list screen."""

    title: str
    kind: Literal["link", "switch", "choice", "text", "slider", "info", "header"] = "link"
    summary: str | None = None
    summary_bind: Binding | None = Field(None, description="show this key's value (or its mapped label)")
    summary_map: dict[str, str] | None = None
    opens: str | None = Field(None, description="screen id a tap opens")
    bind: Binding | None = Field(None, description="the key a switch/choice/text/slider edits")
    on_value: str = "1"
    off_value: str = "0"
    options: list[Option] = []
    min: int = 0
    max: int = 255
    icon: str | None = Field(None, description="icon colour, #rrggbb")
    enabled: bool = True
    visible_when: Condition | None = None

    @model_validator(mode="after")
    def _check(self) -> Row:
        if self.kind in ("switch", "choice", "text", "slider") and self.bind is None:
            raise ValueError(f"row {self.title!r}: a {self.kind} row needs `bind`")
        if self.kind == "choice" and not self.options:
            raise ValueError(f"row {self.title!r}: a choice row needs `options`")
        if self.kind == "link" and self.opens is None:
            raise ValueError(f"row {self.title!r}: a link row needs `opens` (or use kind: info)")
        return self


class Icon(_Strict):
    """A launcher icon: the app's label and the package it starts."""

    label: str
    package: str


class LauncherIcon(_Strict):
    """Where an app's own icon sits on the home screen: in the grid of apps or in the hotseat (the bottom row
    of four), ordered by `order` (icons without one come last, by label). The icon shows the app's label."""

    place: Literal["grid", "hotseat"] = "grid"
    order: int | None = Field(None, ge=0)


class Screen(_Strict):
    """One activity: a title, a list of rows (or, for the launcher, icons)."""

    title: str
    activity: str
    style: Literal["list", "home", "launcher", "search"] = "list"
    actions: list[str] = []
    rows: list[Row] = []
    icons: list[Icon] = []
    hotseat: list[Icon] = []
    # A screen of the app's records (screen_data.py): a list, one record, or an edit screen.
    records: RecordList | None = None
    record: RecordDetail | None = None
    form: RecordForm | None = None

    def targets(self) -> list[tuple[str, str]]:
        """(where, screen id) of every screen this one opens, for checking that they exist."""
        out = [(f"row {r.title!r}", r.opens) for r in self.rows if r.opens is not None]
        items = [*(self.records.menu if self.records else []), *(self.record.buttons if self.record else [])]
        out += [(f"menu item {i.label!r}", i.opens) for i in items if i.opens is not None]
        if self.records is not None and self.records.opens is not None:
            out.append(("records.opens", self.records.opens))
        if self.records is not None and self.records.add is not None:
            out.append(("records.add.opens", self.records.add.opens))
        return out


class App(_Strict):
    package: str
    label: str
    icon_color: str = "#5f6368"
    launch_screen: str
    home: bool = False
    screens: dict[str, Screen]
    defaults: dict[Namespace, dict[str, str]] = {}
    # <activity-alias> name → its targetActivity (`.Settings` → `.homepage.SettingsHomepageActivity`).
    aliases: dict[str, str] = {}
    data: AppData = AppData()  # the app's records (state/appdata.py) and its default files on /sdcard
    launcher_icon: LauncherIcon | None = None  # every app but the home app needs one (`home_screen_icons`)

    @model_validator(mode="after")
    def _check_links(self) -> App:
        screen_classes = {s.activity for s in self.screens.values()}
        for alias, target in self.aliases.items():
            if target not in screen_classes:
                raise ValueError(f"alias {alias!r} targets {target!r}, which is no screen's activity")
        if self.launch_screen not in self.screens:
            raise ValueError(f"launch_screen {self.launch_screen!r} is not a screen of {self.package}")
        for sid, screen in self.screens.items():
            for where, target in screen.targets():
                if target not in self.screens:
                    raise ValueError(f"screen {sid!r}, {where} opens unknown screen {target!r}")
        return self

    @property
    def search_screen(self) -> str | None:
        """The app's search screen (style `search`), which its home screen's search bar opens."""
        return next((sid for sid, sc in self.screens.items() if sc.style == "search"), None)

    def activity_class(self, screen_id: str) -> str:
        """The screen's fully qualified activity class, e.g. com.android.settings.Settings."""
        act = self.screens[screen_id].activity
        return self.package + act if act.startswith(".") else act

    def short_component(self, screen_id: str) -> str:
        """The component as Android prints it, e.g. com.android.settings/.homepage.SettingsHomepageActivity"""
        return short_name(self.package, self.activity_class(screen_id))

    def launch_component(self, screen_id: str) -> str:
        """The full component a task started at this screen was launched by: an alias of it, if any."""
        act = self.screens[screen_id].activity
        alias = next((a for a, target in self.aliases.items() if target == act), act)
        return f"{self.package}/{self.package + alias if alias.startswith('.') else alias}"


def short_name(package: str, cls: str) -> str:
    """ComponentName.flattenToShortString: `pkg/.Cls` when the class is inside the package."""
    full = package + cls if cls.startswith(".") else cls
    if full.startswith(package + "."):
        return f"{package}/{full[len(package) :]}"
    return f"{package}/{full}"


class Catalog:
    """Every installed app, with the lookups the phone needs (by package, component, intent action)."""

    def __init__(self, apps: list[App], files: dict[str, Path] | None = None) -> None:
        self.apps: dict[str, App] = {a.package: a for a in apps}
        self.files: dict[str, Path] = files or {}  # package → the YAML file it came from, for error messages
        homes = [a for a in apps if a.home]
        if len(homes) != 1:
            raise PhoneConfigError(f"exactly one app must have `home: true`, found {len(homes)}")
        self.home: App = with_app_icons(homes[0], apps, self.files)
        self.apps[self.home.package] = self.home
        self._by_class: dict[tuple[str, str], str] = {}
        self._by_action: dict[str, tuple[str, str]] = {}
        for app in apps:
            for sid, screen in app.screens.items():
                self._by_class[(app.package, app.activity_class(sid))] = sid
                for action in screen.actions:
                    self._by_action.setdefault(action, (app.package, sid))
            for alias, target in app.aliases.items():
                sid = self._by_class[
                    (app.package, app.package + target if target.startswith(".") else target)
                ]
                self._by_class[(app.package, app.package + alias if alias.startswith(".") else alias)] = sid

    def find_component(self, package: str, cls: str) -> str | None:
        """Screen id for `package/cls` (cls may be short, `.Settings`; an alias finds its target), or None."""
        full = package + cls if cls.startswith(".") else cls
        return self._by_class.get((package, full))

    def find_action(self, action: str) -> tuple[str, str] | None:
        return self._by_action.get(action)

    def data_specs(self) -> dict[str, AppData]:
        """Package → `data:` section, for the apps that have records or files."""
        return {p: a.data for p, a in self.apps.items() if a.data.database or a.data.files}

    def default_files(self) -> dict[str, bytes]:
        """The files on /sdcard of a fresh phone, from every app's `data.files`."""
        return {path: text.encode() for a in self.apps.values() for path, text in a.data.files.items()}

    def defaults(self) -> dict[str, dict[str, str]]:
        merged: dict[str, dict[str, str]] = {ns: {} for ns in (*SETTINGS_NAMESPACES, "device")}
        for app in self.apps.values():
            for ns, values in app.defaults.items():
                merged[ns].update(values)
        return merged


HOTSEAT_SLOTS = 4


def with_app_icons(home: App, apps: list[App], files: dict[str, Path]) -> App:
    """The home app with every app's `launcher_icon` on its launch screen, after the icons it lists itself.

    An agent opens an app by tapping its icon (an oracle may use `monkey`, which needs none): an app without
    an icon, an icon that names no installed app, or a full hotseat is refused here, naming the file to fix.
    """
    where = files.get(home.package, home.package)
    screen = home.screens[home.launch_screen]
    packages = {a.package for a in apps}
    for icon in [*screen.icons, *screen.hotseat]:
        if icon.package not in packages:
            raise PhoneConfigError(
                f"{where}: the home screen's icon {icon.label!r} starts {icon.package}, which no app file "
                f"declares; fix the package or add the app's YAML file beside {where}"
            )
    missing = [a for a in apps if a is not home and a.launcher_icon is None]
    if missing:
        app = missing[0]
        raise PhoneConfigError(
            f"{files.get(app.package, app.package)}: app {app.package} has no launcher icon, so an agent "
            f"cannot open it by tapping; add `launcher_icon: {{place: grid}}` to it"
        )
    placed = [(a, a.launcher_icon) for a in apps if a is not home and a.launcher_icon is not None]
    placed.sort(key=lambda pair: (pair[1].order is None, pair[1].order or 0, pair[0].label))
    grid = [Icon(label=a.label, package=a.package) for a, icon in placed if icon.place == "grid"]
    in_hotseat = [a for a, icon in placed if icon.place == "hotseat"]
    hotseat = [Icon(label=a.label, package=a.package) for a in in_hotseat]
    if len(screen.hotseat) + len(hotseat) > HOTSEAT_SLOTS:
        names = ", ".join(str(files.get(a.package, a.package)) for a in in_hotseat)
        raise PhoneConfigError(
            f"the hotseat holds {HOTSEAT_SLOTS} icons, and more ask for it ({names}): give one of them "
            f"`launcher_icon: {{place: grid}}`"
        )
    icons = {"icons": [*screen.icons, *grid], "hotseat": [*screen.hotseat, *hotseat]}
    screens = {**home.screens, home.launch_screen: screen.model_copy(update=icons)}
    return home.model_copy(update={"screens": screens})


def load_app(path: Path) -> App:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        return App.model_validate(data)
    except (OSError, yaml.YAMLError, ValidationError) as e:
        raise PhoneConfigError(f"app file {path} is invalid; fix it: {e}") from e


@cache
def load_catalog(apps_dir: Path = APPS_DIR) -> Catalog:
    paths = sorted(apps_dir.glob("*.yaml"))
    apps = [load_app(p) for p in paths]
    return Catalog(apps, {a.package: p for a, p in zip(apps, paths, strict=True)})
