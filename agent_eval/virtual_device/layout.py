"""Lays out the foreground screen in pixels from the phone's state and the apps' data: the launcher grid,
list screens with app bar and scrolling rows, dialogs, and the soft keyboard.
"""

from __future__ import annotations

from agent_eval.virtual_device.apps import App, Catalog, Icon, Row, Screen
from agent_eval.virtual_device.dialogs import dialog_window, keyboard_keys
from agent_eval.virtual_device.search import search_rows
from agent_eval.virtual_device.shade import shade_window
from agent_eval.virtual_device.state import PhoneState
from agent_eval.virtual_device.views import (
    Layout,
    Metrics,
    Rect,
    Tap,
    View,
    switch_checked,
    value_summary,
    visible_rows,
)


def _clip(r: Rect, c: Rect) -> Rect | None:
    x0, y0, x1, y1 = max(r[0], c[0]), max(r[1], c[1]), min(r[2], c[2]), min(r[3], c[3])
    return (x0, y0, x1, y1) if x0 < x1 and y0 < y1 else None


def _row_height(m: Metrics, row: Row, summary: str) -> int:
    if row.kind == "header":
        return m.dp(48)
    if row.kind == "slider":
        return m.dp(96)
    return m.dp(76) if summary else m.dp(60)


def _row_view(
    m: Metrics, pkg: str, idx: int, row: Row, summary: str, rect: Rect, clip: Rect, st: PhoneState
) -> View:
    """One row and its children, drawn at `rect` and reported clipped to the list's viewport."""
    if row.enabled and row.bind is not None and st.forced(row.bind.namespace, row.bind.key):
        row = row.model_copy(update={"enabled": False})  # a linked setting holds it (Battery Saver → dark)
    vis = _clip(rect, clip)
    assert vis is not None
    x0, y0, x1, y1 = rect

    def node(cls: str, rr: Rect, **kw: object) -> View | None:
        c = _clip(rr, clip)
        if c is None:
            return None
        return View(cls=cls, bounds=c, draw=rr, package=pkg, enabled=row.enabled, **kw)  # type: ignore[arg-type]

    if row.kind == "header":
        v = node(
            "android.widget.TextView",
            (x0 + m.dp(16), y0, x1 - m.dp(16), y1),
            paint="header",
            text=row.title,
            resource_id="android:id/title",
        )
        return View(
            cls="android.widget.LinearLayout", bounds=vis, draw=rect, package=pkg, children=[v] if v else []
        )
    tap: Tap | None = None
    if row.enabled:
        tap = {
            "link": Tap("open", row.opens or ""),
            "switch": Tap("toggle", idx),
            "choice": Tap("choice", idx),
            "text": Tap("edit", idx),
        }.get(row.kind)
    clickable = tap is not None
    text_left = x0 + (m.dp(72) if row.icon else m.dp(16))
    widget_w = m.dp(84) if row.kind == "switch" else 0
    children: list[View] = []
    if row.icon:
        s = m.dp(24)
        cy = (y0 + y1) // 2 if row.kind != "slider" else y0 + m.dp(30)
        icon = node(
            "android.widget.ImageView",
            (x0 + m.dp(20), cy - s // 2, x0 + m.dp(20) + s, cy + s // 2),
            paint="icon",
            resource_id="android:id/icon",
            color=row.icon,
        )
        if icon:
            children.append(icon)
    title_h, sum_h = m.dp(26), m.dp(20)
    if row.kind == "slider":
        tt = y0 + m.dp(16)
    else:
        tt = (y0 + y1) // 2 - (title_h + (sum_h if summary else 0)) // 2
    texts: list[View] = []
    tv = node(
        "android.widget.TextView",
        (text_left, tt, x1 - m.dp(16) - widget_w, tt + title_h),
        paint="title",
        text=row.title,
        resource_id="android:id/title",
    )
    if tv:
        texts.append(tv)
    if summary and row.kind != "slider":
        sv = node(
            "android.widget.TextView",
            (text_left, tt + title_h, x1 - m.dp(16) - widget_w, tt + title_h + sum_h),
            paint="summary",
            text=summary,
            resource_id="android:id/summary",
        )
        if sv:
            texts.append(sv)
    if texts:
        box = (text_left, tt, x1 - m.dp(16) - widget_w, tt + title_h + (sum_h if summary else 0))
        rl = node("android.widget.RelativeLayout", box, children=texts)
        if rl:
            children.append(rl)
    if row.kind == "switch":
        on = switch_checked(row, st)
        sw_rect = (
            x1 - m.dp(16) - m.dp(52),
            (y0 + y1) // 2 - m.dp(16),
            x1 - m.dp(16),
            (y0 + y1) // 2 + m.dp(16),
        )
        sw = node(
            "android.widget.Switch",
            sw_rect,
            paint="switch",
            resource_id="android:id/switch_widget",
            checkable=True,
            checked=on,
            text="ON" if on else "OFF",
        )
        if sw:
            frame = View(
                cls="android.widget.LinearLayout",
                bounds=sw.bounds,
                draw=sw_rect,
                package=pkg,
                resource_id="android:id/widget_frame",
                children=[sw],
                enabled=row.enabled,
            )
            children.append(frame)
    if row.kind == "slider":
        assert row.bind is not None
        raw = st.get(row.bind.namespace, row.bind.key)
        try:
            frac = (float(raw or row.min) - row.min) / max(1, row.max - row.min)
        except ValueError:
            frac = 0.0
        bar = (x0 + m.dp(16), y1 - m.dp(44), x1 - m.dp(16), y1 - m.dp(12))
        sb = node(
            "android.widget.SeekBar",
            bar,
            paint="seekbar",
            resource_id="android:id/seekbar",
            clickable=True,
            focusable=True,
            value=min(1.0, max(0.0, frac)),
            tap=Tap("slider", idx),
        )
        if sb:
            children.append(sb)
    return View(
        cls="android.widget.LinearLayout",
        bounds=vis,
        draw=rect,
        package=pkg,
        paint="row",
        clickable=clickable,
        focusable=clickable,
        tap=tap,
        enabled=row.enabled,
        children=children,
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
        return View(
            cls="android.widget.TextView",
            bounds=rect,
            package=pkg,
            paint="app_icon",
            text=i.label,
            content_desc=i.label,
            clickable=True,
            focusable=True,
            tap=Tap("launch", i.package),
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


def _search_field(rect: Rect, pkg: str, st: PhoneState) -> View:
    return View(
        cls="android.widget.EditText",
        bounds=rect,
        package=pkg,
        paint="search_field",
        text=st.top.query,
        resource_id="android:id/search_src_text",
        clickable=True,
        focusable=True,
        focused=st.keyboard_shown,
        tap=Tap("field"),
    )


def _list_window(m: Metrics, app: App, screen: Screen, st: PhoneState) -> tuple[View, View, int]:
    pkg = app.package
    frame = st.top
    root = View(cls="android.widget.FrameLayout", bounds=(0, 0, m.w, m.h), package=pkg, paint="window")
    content = View(cls="android.widget.LinearLayout", bounds=(0, m.status_h, m.w, m.h - m.nav_h), package=pkg)
    root.children.append(content)
    y = m.status_h
    if screen.style == "home":
        title_rect = (m.dp(24), y + m.dp(40), m.w - m.dp(24), y + m.dp(100))
        content.children.append(
            View(
                cls="android.widget.TextView",
                bounds=title_rect,
                package=pkg,
                paint="big_title",
                text=screen.title,
                resource_id=f"{pkg}:id/homepage_title",
            )
        )
        search = (m.dp(16), y + m.dp(116), m.w - m.dp(16), y + m.dp(172))
        content.children.append(
            View(
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
                children=[
                    View(
                        cls="android.widget.TextView",
                        bounds=(search[0] + m.dp(56), search[1], search[2] - m.dp(16), search[3]),
                        package=pkg,
                        paint="search_text",
                        text="Search settings",
                    )
                ],
            )
        )
        y += m.dp(188)
    else:
        bar = (0, y, m.w, y + m.dp(64))
        up = (m.dp(4), y + m.dp(8), m.dp(52), y + m.dp(56))
        title = (m.dp(64), y + m.dp(8), m.w - m.dp(16), y + m.dp(56))
        content.children.append(
            View(
                cls="android.view.ViewGroup",
                bounds=bar,
                package=pkg,
                paint="app_bar",
                resource_id=f"{pkg}:id/action_bar",
                children=[
                    View(
                        cls="android.widget.ImageButton",
                        bounds=up,
                        package=pkg,
                        paint="up_arrow",
                        content_desc="Navigate up",
                        clickable=True,
                        focusable=True,
                        tap=Tap("back"),
                    ),
                    _search_field(title, pkg, st)
                    if screen.style == "search"
                    else View(
                        cls="android.widget.TextView",
                        bounds=title,
                        package=pkg,
                        paint="bar_title",
                        text=screen.title,
                    ),
                ],
            )
        )
        y += m.dp(64)
    viewport = (0, y, m.w, m.h - m.nav_h)
    rows = search_rows(app, st, frame.query) if screen.style == "search" else visible_rows(screen, st)
    heights = [_row_height(m, row, value_summary(row, st)) for _, row in rows]
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
        if _clip(rect, viewport) is not None:
            lst.children.append(_row_view(m, pkg, idx, row, value_summary(row, st), rect, viewport, st))
        cy += h
    content.children.append(lst)
    return root, lst, content_h


def layout(state: PhoneState, catalog: Catalog, tick: int | None = None) -> Layout:
    """Lay out the foreground screen. `tick` (restless screens) adds an animation that differs every frame."""
    m = Metrics(state)
    app = catalog.apps[state.foreground]
    screen = app.screens[state.top.screen]
    lst: View | None = None
    content_h = 0
    if screen.style == "launcher":
        window = _launcher(m, app, screen, catalog)
    else:
        window, lst, content_h = _list_window(m, app, screen, state)
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
