"""Lays out the foreground screen in pixels from the phone's state and the apps' data: the launcher grid,
list screens with app bar and scrolling rows, dialogs, and the soft keyboard.
"""

from __future__ import annotations

from virtual_phone.records.record_dialogs import RECORD_DIALOGS, record_dialog
from virtual_phone.records.record_screens import record_window
from virtual_phone.records.record_source import DataContext
from virtual_phone.schema.app_schema import App, Catalog, Icon, Screen
from virtual_phone.screens.dialogs import dialog_window, keyboard_keys
from virtual_phone.screens.settings_rows import row_height, row_view, value_summary, visible_rows
from virtual_phone.screens.settings_search import search_rows
from virtual_phone.screens.shade import shade_window
from virtual_phone.state.phone_state import PhoneState
from virtual_phone.views.view_tree import (
    Layout,
    Metrics,
    Tap,
    View,
    clickable,
    clip_rect,
    edit_text,
)


def _launcher(m: Metrics, app: App, screen: Screen, catalog: Catalog) -> View:
    pkg = app.package
    top = m.status_h
    root = View(cls="android.widget.FrameLayout", bounds=(0, 0, m.w, m.h), package=pkg, paint="wallpaper")
    cols = 4
    cell_w = m.w // cols
    cell_h = m.dp(104)

    def icon(i: Icon, y: int, col: int) -> View:
        rect = (col * cell_w, y, (col + 1) * cell_w, y + cell_h)
        return clickable(
            "android.widget.TextView",
            rect,
            pkg,
            Tap("launch", i.package),
            paint="app_icon",
            text=i.label,
            content_desc=i.label,
            color=catalog.apps[i.package].icon_color if i.package in catalog.apps else "#5f6368",
        )

    grid_top = top + m.dp(380)
    ws = [icon(ic, grid_top + (n // cols) * cell_h, n % cols) for n, ic in enumerate(screen.icons)]
    rows_n = max(1, (len(screen.icons) + cols - 1) // cols)
    workspace = View(
        cls="android.view.ViewGroup",
        bounds=(0, grid_top, m.w, grid_top + rows_n * cell_h),
        package=pkg,
        resource_id=f"{pkg}:id/workspace",
        children=ws,
    )
    hs_top = m.h - m.nav_h - m.dp(24) - cell_h
    hs = [icon(ic, hs_top, n % cols) for n, ic in enumerate(screen.hotseat)]
    hotseat = View(
        cls="android.view.ViewGroup",
        bounds=(0, hs_top, m.w, hs_top + cell_h),
        package=pkg,
        resource_id=f"{pkg}:id/hotseat",
        children=hs,
    )
    root.children = [workspace, hotseat]
    return root


def _home_header(m: Metrics, app: App, screen: Screen, y: int) -> list[View]:
    """Settings' home page: a large title and the search bar, instead of an app bar."""
    pkg = app.package
    title = View(
        cls="android.widget.TextView",
        bounds=(m.dp(24), y + m.dp(40), m.w - m.dp(24), y + m.dp(100)),
        package=pkg,
        paint="big_title",
        text=screen.title,
        resource_id=f"{pkg}:id/homepage_title",
    )
    search = (m.dp(16), y + m.dp(116), m.w - m.dp(16), y + m.dp(172))
    label = View(
        cls="android.widget.TextView",
        bounds=(search[0] + m.dp(56), search[1], search[2] - m.dp(16), search[3]),
        package=pkg,
        paint="search_text",
        text="Search settings",
    )
    bar = View(
        cls="android.widget.FrameLayout",
        bounds=search,
        package=pkg,
        paint="search",
        text="",
        content_desc="Search settings",
        resource_id=f"{pkg}:id/search_action_bar",
        clickable=True,
        focusable=True,
        tap=Tap("search") if app.search_screen else Tap("none"),
        children=[label],
    )
    return [title, bar]


def _app_bar(m: Metrics, pkg: str, screen: Screen, st: PhoneState, y: int) -> View:
    """The app bar: Navigate up, then the title (or, on the search screen, the search field)."""
    up = clickable(
        "android.widget.ImageButton",
        (m.dp(4), y + m.dp(8), m.dp(52), y + m.dp(56)),
        pkg,
        Tap("back"),
        paint="up_arrow",
        content_desc="Navigate up",
    )
    title = (m.dp(64), y + m.dp(8), m.w - m.dp(16), y + m.dp(56))
    if screen.style == "search":
        heading = edit_text(
            title, pkg, st.top.query, "android:id/search_src_text", "search_field", st.keyboard_shown
        )
    else:
        heading = View(
            cls="android.widget.TextView", bounds=title, package=pkg, paint="bar_title", text=screen.title
        )
    return View(
        cls="android.view.ViewGroup",
        bounds=(0, y, m.w, y + m.dp(64)),
        package=pkg,
        paint="app_bar",
        resource_id=f"{pkg}:id/action_bar",
        children=[up, heading],
    )


def _row_list(m: Metrics, app: App, screen: Screen, st: PhoneState, y: int) -> tuple[View, int]:
    """The RecyclerView below y with the rows in view, and the full height of its content."""
    pkg, frame = app.package, st.top
    viewport = (0, y, m.w, m.h - m.nav_h)
    rows = search_rows(app, st, frame.query) if screen.style == "search" else visible_rows(screen, st)
    heights = [row_height(m, row, value_summary(row, st)) for _, row in rows]
    content_h = sum(heights)
    view_h = viewport[3] - viewport[1]
    scroll = max(0, min(frame.scroll, content_h - view_h))
    scrollable = content_h > view_h
    lst = View(
        cls="androidx.recyclerview.widget.RecyclerView",
        bounds=viewport,
        package=pkg,
        resource_id=f"{pkg}:id/recycler_view",
        scrollable=scrollable,
        focusable=scrollable,
    )
    cy = y - scroll
    for (idx, row), h in zip(rows, heights, strict=True):
        rect = (0, cy, m.w, cy + h)
        if clip_rect(rect, viewport) is not None:
            lst.children.append(row_view(m, pkg, idx, row, value_summary(row, st), rect, viewport, st))
        cy += h
    return lst, content_h


def _list_window(m: Metrics, app: App, screen: Screen, st: PhoneState) -> tuple[View, View, int]:
    pkg = app.package
    root = View(cls="android.widget.FrameLayout", bounds=(0, 0, m.w, m.h), package=pkg, paint="window")
    content = View(cls="android.widget.LinearLayout", bounds=(0, m.status_h, m.w, m.h - m.nav_h), package=pkg)
    root.children.append(content)
    y = m.status_h
    if screen.style == "home":
        content.children.extend(_home_header(m, app, screen, y))
        y += m.dp(188)
    else:
        content.children.append(_app_bar(m, pkg, screen, st, y))
        y += m.dp(64)
    lst, content_h = _row_list(m, app, screen, st, y)
    content.children.append(lst)
    return root, lst, content_h


def layout(
    state: PhoneState, catalog: Catalog, tick: int | None = None, data: DataContext | None = None
) -> Layout:
    """Lay out the foreground screen. `tick` (restless screens) adds an animation that differs every frame;
    `data` reads the apps' records for the screens bound to them."""
    m = Metrics(state)
    app = catalog.apps[state.foreground]
    screen = app.screens[state.top.screen]
    lst: View | None = None
    content_h = 0
    records = screen.records is not None or screen.record is not None or screen.form is not None
    if screen.style == "launcher":
        window = _launcher(m, app, screen, catalog)
    elif records and data is not None:
        window, lst, content_h = record_window(m, app, screen, state, data)
    else:
        window, lst, content_h = _list_window(m, app, screen, state)
    if state.dialog is not None and state.dialog.kind in RECORD_DIALOGS:
        dialog = record_dialog(m, app, screen, state, data) if data is not None else None
    else:
        dialog = dialog_window(m, app, screen, state)
    if tick is not None:
        # A restless screen: a progress animation whose phase changes on every frame, in whichever window
        # uiautomator dumps.
        target = dialog if dialog is not None else window
        top = target.bounds[1] if dialog is not None else m.status_h
        target.children.append(
            View(
                cls="android.widget.ProgressBar",
                bounds=(target.bounds[0], top, target.bounds[2], top + m.dp(4)),
                package=app.package,
                paint="progress",
                content_desc=f"Loading {tick % 100}%",
                value=(tick % 100) / 100,
            )
        )
    keyboard = keyboard_keys(m) if state.keyboard_shown else []
    return Layout(
        window=window,
        dialog=dialog,
        keyboard=keyboard,
        status_bar=(0, 0, m.w, m.status_h),
        nav_bar=(0, m.h - m.nav_h, m.w, m.h),
        list_view=lst,
        content_height=content_h,
        shade=shade_window(m, state) if state.shade_open else None,
    )
