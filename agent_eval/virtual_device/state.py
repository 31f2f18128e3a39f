"""The phone's whole state: settings, the app tasks and their back stacks, dialog, keyboard, files, display.

A snapshot is this state as JSON-able data; loading one replaces the state wholesale.
"""

from __future__ import annotations

import base64
import copy
from dataclasses import dataclass, field
from typing import Any

from agent_eval.virtual_device.apps import Catalog

SDCARD = "/sdcard"
# Directories that exist on a fresh emulator and that files may be pushed into.
DEFAULT_DIRS = (
    "/",
    "/data",
    "/data/local",
    "/data/local/tmp",
    "/sdcard",
    "/sdcard/Alarms",
    "/sdcard/DCIM",
    "/sdcard/Download",
    "/sdcard/Documents",
    "/sdcard/Movies",
    "/sdcard/Music",
    "/sdcard/Pictures",
    "/storage",
    "/storage/emulated",
    "/system",
    "/system/bin",
)


@dataclass
class Frame:
    """One activity on a back stack: which screen, how far its list is scrolled (px), what was searched."""

    screen: str
    scroll: int = 0
    query: str = ""


@dataclass
class Dialog:
    """An open dialog over the top frame: a choice list or a text field bound to a row."""

    kind: str  # "choice" | "text"
    row: int  # index of the row (of the top frame's screen) that opened it
    draft: str = ""  # text typed so far (text dialogs)


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
    files: dict[str, bytes] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=lambda: set(DEFAULT_DIRS))

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

    def put(self, namespace: str, key: str, value: str) -> None:
        self.settings.setdefault(namespace, {})[key] = value

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": copy.deepcopy(self.settings),
            "tasks": {
                pkg: [[f.screen, f.scroll, f.query] for f in stack] for pkg, stack in self.tasks.items()
            },
            "width": self.width,
            "height": self.height,
            "density": self.density,
            "dialog": None
            if self.dialog is None
            else {"kind": self.dialog.kind, "row": self.dialog.row, "draft": self.dialog.draft},
            "keyboard_shown": self.keyboard_shown,
            "shift": self.shift,
            "files": {p: base64.b64encode(b).decode("ascii") for p, b in self.files.items()},
            "dirs": sorted(self.dirs),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PhoneState:
        dialog = data["dialog"]
        return cls(
            settings=copy.deepcopy(data["settings"]),
            tasks={pkg: [Frame(*frame) for frame in stack] for pkg, stack in data["tasks"].items()},
            width=data["width"],
            height=data["height"],
            density=data["density"],
            dialog=None if dialog is None else Dialog(dialog["kind"], dialog["row"], dialog["draft"]),
            keyboard_shown=data["keyboard_shown"],
            shift=data["shift"],
            files={p: base64.b64decode(b) for p, b in data["files"].items()},
            dirs=set(data["dirs"]),
        )
