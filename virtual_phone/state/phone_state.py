"""The phone's state outside its file tree: settings, the app tasks and their back stacks, dialog, keyboard,
display.

A snapshot is this state as JSON-able data; loading one replaces the state wholesale.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from virtual_phone.schema.app_schema import Catalog
from virtual_phone.state.linked_settings import cascade, override


@dataclass
class Frame:
    """One activity on a back stack: which screen, how far its list is scrolled (px), what was searched."""

    screen: str
    scroll: int = 0
    query: str = ""
    record: str | None = None  # the record a detail or edit screen shows (None: a new one)
    form: dict[str, str] = field(default_factory=dict)  # an edit screen's field values as typed
    focus: str = ""  # the text field that has focus ("" = none)

    def to_json(self) -> list[object]:
        return [self.screen, self.scroll, self.query, self.record, dict(self.form), self.focus]


@dataclass
class Dialog:
    """An open dialog over the top frame: a choice list or a text field bound to a row."""

    kind: str  # "choice" | "text" | "menu" | "confirm" | "time" | "date"
    row: int  # index of the row (of the top frame's screen) that opened it
    draft: str = ""  # text typed so far (text dialogs)
    record: str | None = None  # the record a menu or confirm dialog acts on
    target: str = ""  # the form field a picker edits, or the menu item a confirm dialog carries out
    values: dict[str, str] = field(default_factory=dict)  # a picker's spinners, and which one has focus

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "row": self.row,
            "draft": self.draft,
            "record": self.record,
            "target": self.target,
            "values": dict(self.values),
        }


@dataclass
class PhoneState:
    settings: dict[str, dict[str, str]]
    # Tasks by package, most recently used last; the foreground task is the last one.
    tasks: dict[str, list[Frame]]
    width: int = 1080
    height: int = 2400
    density: int = 420
    dialog: Dialog | None = None
    keyboard_shown: bool = False
    shift: bool = False
    shade_open: bool = False  # the quick-settings shade is pulled down
    saved: dict[str, str] = field(default_factory=dict)  # values a linked setting will restore
    untrusted: set[str] = field(default_factory=set)  # "ns/key" last written from the shell
    task_ids: dict[str, int] = field(default_factory=dict)  # stable task id per package
    locked_task: int | None = None  # `am task lock N`
    grants: set[str] = field(default_factory=set)  # "PACKAGE PERMISSION" granted with `pm grant`
    installed: dict[str, str] = field(default_factory=dict)  # package → its APK's path, by `pm install`

    @classmethod
    def fresh(cls, catalog: Catalog, size: tuple[int, int] = (1080, 2400)) -> PhoneState:
        home = catalog.home
        return cls(
            settings=copy.deepcopy(catalog.defaults()),
            tasks={home.package: [Frame(home.launch_screen)]},
            width=size[0],
            height=size[1],
        )

    @property
    def foreground(self) -> str:
        return next(reversed(self.tasks))

    @property
    def top(self) -> Frame:
        return self.tasks[self.foreground][-1]

    def get(self, namespace: str, key: str) -> str | None:
        return self.settings.get(namespace, {}).get(key)

    def put(self, namespace: str, key: str, value: str, untrusted: bool = False) -> None:
        """Writes a key and the keys linked to it; `untrusted`: written from the shell, not by the system."""
        table = self.settings.setdefault(namespace, {})
        old = table.get(key)
        table[key] = value
        if untrusted:
            self.untrusted.add(f"{namespace}/{key}")
        else:
            self.untrusted.discard(f"{namespace}/{key}")
        cascade(self.settings, self.saved, (namespace, key), old, value)

    def shown(self, namespace: str, key: str) -> str | None:
        """What the screen shows for a key: its value, or what a linked setting forces it to look like."""
        forced = override(self.settings, (namespace, key))
        return forced if forced is not None else self.get(namespace, key)

    def forced(self, namespace: str, key: str) -> bool:
        return override(self.settings, (namespace, key)) is not None

    def task_id(self, package: str) -> int:
        """The task id of a package's task: new ids count up from 10 and stay while the task lives."""
        if package not in self.task_ids:
            self.task_ids[package] = max([9, *self.task_ids.values()]) + 1
        return self.task_ids[package]

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": copy.deepcopy(self.settings),
            "tasks": {pkg: [f.to_json() for f in stack] for pkg, stack in self.tasks.items()},
            "width": self.width,
            "height": self.height,
            "density": self.density,
            "dialog": None if self.dialog is None else self.dialog.to_json(),
            "keyboard_shown": self.keyboard_shown,
            "shift": self.shift,
            "shade_open": self.shade_open,
            "saved": dict(self.saved),
            "untrusted": sorted(self.untrusted),
            "task_ids": dict(self.task_ids),
            "locked_task": self.locked_task,
            "grants": sorted(self.grants),
            "installed": dict(self.installed),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PhoneState:
        dialog = data["dialog"]
        return cls(
            settings=copy.deepcopy(data["settings"]),
            tasks={pkg: [_frame(frame) for frame in stack] for pkg, stack in data["tasks"].items()},
            width=data["width"],
            height=data["height"],
            density=data["density"],
            dialog=None if dialog is None else Dialog(**{**dialog, "values": dict(dialog.get("values", {}))}),
            keyboard_shown=data["keyboard_shown"],
            shift=data["shift"],
            shade_open=data.get("shade_open", False),
            saved=dict(data.get("saved", {})),
            untrusted=set(data.get("untrusted", [])),
            task_ids=dict(data.get("task_ids", {})),
            locked_task=data.get("locked_task"),
            grants=set(data.get("grants", [])),
            installed=dict(data.get("installed", {})),
        )


def _frame(data: list[Any]) -> Frame:
    """A frame from its snapshot list (older snapshots hold only screen, scroll and query)."""
    frame = Frame(*data[:3])
    if len(data) > 3:
        frame.record, frame.form, frame.focus = data[3], dict(data[4]), data[5]
    return frame
