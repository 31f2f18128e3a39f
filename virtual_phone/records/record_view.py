"""What every screen of app records is built from: the layout context (metrics, app, screen, state, data),
the window's root, the app bar and the text field (EditText).

When the keyboard is up the window ends above it (adjustResize, as these apps declare), so views it would
cover are not in the dump.
"""

from __future__ import annotations

from dataclasses import dataclass

from virtual_phone.records.record_source import DataContext
from virtual_phone.schema.app_schema import App, Screen
from virtual_phone.state.phone_state import PhoneState
from virtual_phone.views.view_tree import Metrics, Rect, Tap, View, clickable

SEARCH_FOCUS = "_search"
COMPOSE_FOCUS = "_compose"


@dataclass(frozen=True)
class Ctx:
    """What every part of a record screen needs."""

    m: Metrics
    app: App
    screen: Screen
    st: PhoneState
    data: DataContext

    @property
    def pkg(self) -> str:
        return self.app.package

    @property
    def bottom(self) -> int:
        """The window's bottom: above the keyboard when it is up, else above the navigation bar."""
        m = self.m
        return m.keyboard_rect()[1] if self.st.keyboard_shown else m.h - m.nav_h

    def text(self, rect: Rect, text: str, paint: str, rid: str = "", **kw: object) -> View:
        return View(
            cls="android.widget.TextView",
            bounds=rect,
            package=self.pkg,
            paint=paint,
            text=text,
            resource_id=rid,
            **kw,  # type: ignore[arg-type]
        )


def field_view(c: Ctx, rect: Rect, text: str, hint: str, focus: str, rid: str) -> View:
    """An EditText: a tap gives it focus and brings the keyboard up; it shows its hint while empty. It is
    long-clickable, as Android's are (a long press selects text; here it focuses the field too)."""
    focused = c.st.top.focus == focus and c.st.dialog is None
    return clickable(
        "android.widget.EditText",
        rect,
        c.pkg,
        Tap("focus", focus),
        paint="field",
        text=text,
        hint=hint,
        resource_id=rid,
        focused=focused,
        long_tap=Tap("focus", focus),
    )


def app_bar(c: Ctx, title: str, up_desc: str = "Navigate up", action: View | None = None) -> View:
    m, y = c.m, c.m.status_h
    up = clickable(
        "android.widget.ImageButton",
        (m.dp(4), y + m.dp(8), m.dp(52), y + m.dp(56)),
        c.pkg,
        Tap("back"),
        paint="up_arrow",
        content_desc=up_desc,
    )
    right = action.bounds[0] if action is not None else m.w - m.dp(16)
    heading = c.text((m.dp(64), y + m.dp(8), right - m.dp(8), y + m.dp(56)), title, "bar_title")
    return View(
        cls="android.view.ViewGroup",
        bounds=(0, y, m.w, y + m.dp(64)),
        package=c.pkg,
        paint="app_bar",
        resource_id=f"{c.pkg}:id/toolbar",
        children=[up, heading, *([action] if action else [])],
    )


def root(c: Ctx) -> tuple[View, View]:
    m = c.m
    root = View(cls="android.widget.FrameLayout", bounds=(0, 0, m.w, m.h), package=c.pkg, paint="window")
    content = View(cls="android.widget.LinearLayout", bounds=(0, m.status_h, m.w, c.bottom), package=c.pkg)
    root.children.append(content)
    return root, content
