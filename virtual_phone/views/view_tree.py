"""The view tree of what is on screen (views, taps, keyboard keys, screen metrics) and hit-testing on it.

Rendering, the uiautomator dump and touch input all read this one tree (built by screens/layout.py), so
bounds match.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from virtual_phone.state.phone_state import PhoneState

Rect = tuple[int, int, int, int]

KEYBOARD_ROWS = ("1234567890", "qwertyuiop", "asdfghjkl", "^zxcvbnm<", " .>")
KEY_LABELS = {"^": "shift", "<": "del", " ": "space", ">": "done"}


@dataclass(frozen=True)
class Tap:
    """What touching a view does: `kind` names the effect, `arg` its target (screen, row index, value...)."""

    kind: str
    arg: str | int = ""


@dataclass
class View:
    cls: str
    bounds: Rect  # visible part, as uiautomator reports it
    paint: str = ""  # how the renderer draws it ("" = nothing of its own)
    draw: Rect | None = None  # unclipped rectangle for drawing (rows scrolled partly off screen)
    text: str = ""
    resource_id: str = ""
    content_desc: str = ""
    package: str = ""
    clickable: bool = False
    checkable: bool = False
    checked: bool = False
    scrollable: bool = False
    focusable: bool = False
    focused: bool = False
    enabled: bool = True
    color: str = ""
    value: float = 0.0  # slider position 0..1, progress animation phase
    tap: Tap | None = None
    children: list[View] = field(default_factory=list)
    long_tap: Tap | None = None  # what a long press does (long-clickable), e.g. a row's context menu
    hint: str = ""  # an empty text field's hint: drawn grey, and its text in the dump as Android reports it

    @property
    def rect(self) -> Rect:
        return self.draw if self.draw is not None else self.bounds


@dataclass
class Key:
    char: str
    rect: Rect


@dataclass
class Layout:
    """Everything on screen: the app window, an optional dialog window over it, and the soft keyboard."""

    window: View
    dialog: View | None
    keyboard: list[Key]
    status_bar: Rect
    nav_bar: Rect
    list_view: View | None  # the scrollable list of the app window, if any
    content_height: int  # full height of that list's content, for clamping scrolls
    shade: View | None = None  # the quick-settings shade, over everything, when pulled down


class Metrics:
    """dp → px at the phone's density, and the fixed parts of the screen."""

    def __init__(self, state: PhoneState) -> None:
        self.w, self.h = state.width, state.height
        self.scale = state.density / 160

    def dp(self, v: float) -> int:
        return round(v * self.scale)

    @property
    def status_h(self) -> int:
        return self.dp(40)

    @property
    def nav_h(self) -> int:
        return self.dp(24)

    def keyboard_rect(self) -> Rect:
        kh = self.dp(52) * len(KEYBOARD_ROWS) + self.dp(16)
        return (0, self.h - self.nav_h - kh, self.w, self.h - self.nav_h)


def clickable(cls: str, rect: Rect, package: str, tap: Tap, **fields: Any) -> View:
    """A view that reacts to a tap: clickable and focusable, as uiautomator reports such widgets."""
    return View(cls=cls, bounds=rect, package=package, clickable=True, focusable=True, tap=tap, **fields)


def edit_text(rect: Rect, package: str, text: str, resource_id: str, paint: str, focused: bool) -> View:
    """A text field (EditText); a tap on it brings the keyboard up."""
    return clickable(
        "android.widget.EditText",
        rect,
        package,
        Tap("field"),
        paint=paint,
        text=text,
        resource_id=resource_id,
        focused=focused,
    )


def long_hit(view: View, x: int, y: int) -> View | None:
    """The innermost view under (x, y) that reacts to a long press, or None."""
    if not contains(view.bounds, x, y):
        return None
    for child in reversed(view.children):
        found = long_hit(child, x, y)
        if found is not None:
            return found
    return view if view.long_tap is not None and view.enabled else None


def clip_rect(r: Rect, c: Rect) -> Rect | None:
    x0, y0, x1, y1 = max(r[0], c[0]), max(r[1], c[1]), min(r[2], c[2]), min(r[3], c[3])
    return (x0, y0, x1, y1) if x0 < x1 and y0 < y1 else None


def contains(rect: Rect, x: int, y: int) -> bool:
    return rect[0] <= x < rect[2] and rect[1] <= y < rect[3]


def hit(view: View, x: int, y: int) -> View | None:
    """The innermost view under (x, y) that reacts to a tap, or None."""
    if not contains(view.bounds, x, y):
        return None
    for child in reversed(view.children):
        found = hit(child, x, y)
        if found is not None:
            return found
    return view if view.tap is not None and view.enabled else None
