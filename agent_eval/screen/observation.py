"""What the agent sees of the phone at one step: a screenshot and the UI tree as numbered elements.

Values only; the driver (device/driver.py) produces them, the agent and the predicates read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Bounds:
    left: int
    top: int
    right: int
    bottom: int

    @property
    def center(self) -> tuple[int, int]:
        return (self.left + self.right) // 2, (self.top + self.bottom) // 2

    @property
    def width(self) -> int:
        return self.right - self.left

    @property
    def height(self) -> int:
        return self.bottom - self.top


@dataclass(frozen=True)
class Element:
    """One node of the UI tree that an agent can act on or read.

    `index` is the number shown to the agent (its position in Observation.elements), not uiautomator's
    sibling index.
    """

    index: int
    cls: str
    text: str
    content_desc: str
    resource_id: str
    package: str
    bounds: Bounds
    checkable: bool = False
    checked: bool = False
    clickable: bool = False
    long_clickable: bool = False
    scrollable: bool = False
    focusable: bool = False
    focused: bool = False
    selected: bool = False
    enabled: bool = True
    password: bool = False
    node: int = -1  # position of this node in Observation.all_nodes (-1: unknown)
    parent: int = -1  # position of the parent node in Observation.all_nodes (-1: the root or unknown)

    def flags(self) -> list[str]:
        """The states set on it, of selected, scrollable, focused and disabled, in that order."""
        states = {
            "selected": self.selected,
            "scrollable": self.scrollable,
            "focused": self.focused,
            "disabled": not self.enabled,
        }
        return [name for name, on in states.items() if on]


@dataclass(frozen=True)
class Observation:
    screenshot_png: bytes
    ui_xml: str
    elements: tuple[Element, ...]
    activity: str  # focused component, e.g. "com.android.settings/.Settings"
    width: int
    height: int
    all_nodes: tuple[Element, ...] = field(default=(), repr=False)  # every dumped node, for predicates

    @property
    def package(self) -> str:
        """The app in front: the focused activity's package, e.g. "com.android.settings"."""
        return self.activity.split("/", 1)[0]

    def texts(self) -> tuple[str, ...]:
        """What the screen says, in list order: each element's text (else its description), once each."""
        return tuple(dict.fromkeys(t for e in self.elements if (t := (e.text or e.content_desc).strip())))
