"""The view tree of what is on screen, laid out in pixels from the phone's state and the apps' data.

Rendering, the uiautomator dump and touch hit-testing all read this one tree, so bounds match pixels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_eval.virtual_device.apps import App, Catalog, Icon, Row, Screen
from agent_eval.virtual_device.state import PhoneState

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


def value_summary(row: Row, state: PhoneState) -> str:
    """The summary line a row shows for the phone's current state."""
    if row.summary_bind is not None:
        v = state.get(row.summary_bind.namespace, row.summary_bind.key)
        if v is None:
            return ""
        return row.summary_map.get(v, v) if row.summary_map else v
    if row.kind in ("choice", "text") and row.bind is not None:
        v = state.get(row.bind.namespace, row.bind.key) or ""
        for opt in row.options:
            if opt.value == v:
                return opt.label
        return v
    return row.summary or ""


def switch_checked(row: Row, state: PhoneState) -> bool:
    assert row.bind is not None
    v = state.get(row.bind.namespace, row.bind.key)
    return v is not None and v != row.off_value


def visible_rows(screen: Screen, state: PhoneState) -> list[tuple[int, Row]]:
    out = []
    for i, row in enumerate(screen.rows):
        cond = row.visible_when
        if cond is None or state.get(cond.namespace, cond.key) in cond.equals:
            out.append((i, row))
    return out


def _clip(r: Rect, c: Rect) -> Rect | None:
    l, t, rr, b = max(r[0], c[0]), max(r[1], c[1]), min(r[2], c[2]), min(r[3], c[3])
    return (l, t, rr, b) if l < rr and t < b else None


def _row_height(m: Metrics, row: Row, summary: str) -> int:
    if row.kind == "header":
        return m.dp(48)
    if row.kind == "slider":
        return m.dp(96)
    return m.dp(76) if summary else m.dp(60)


def _row_view(m: Metrics, pkg: str, idx: int, row: Row, summary: str, rect: Rect, clip: Rect, st: PhoneState) -> View:
    """One row and its children, drawn at `rect` and reported clipped to the list's viewport."""
    vis = _clip(rect, clip)
    assert vis is not None
    l, t, r, b = rect

    def node(cls: str, rr: Rect, **kw: object) -> View | None:
        c = _clip(rr, clip)
        if c is None:
            return None
        return View(cls=cls, bounds=c, draw=rr, package=pkg, enabled=row.enabled, **kw)  # type: ignore[arg-type]

    if row.kind == "header":
        v = node("android.widget.TextView", (l + m.dp(16), t, r - m.dp(16), b), paint="header",
                 text=row.title, resource_id="android:id/title")
        return View(cls="android.widget.LinearLayout", bounds=vis, draw=rect, package=pkg,
                    children=[v] if v else [])
    tap: Tap | None = None
    if row.enabled:
        tap = {
            "link": Tap("open", row.opens or ""),
            "switch": Tap("toggle", idx),
            "choice": Tap("choice", idx),
            "text": Tap("edit", idx),
        }.get(row.kind)
    clickable = tap is not None
    text_left = l + (m.dp(72) if row.icon else m.dp(16))
    widget_w = m.dp(84) if row.kind == "switch" else 0
    children: list[View] = []
    if row.icon:
        s = m.dp(24)
        cy = (t + b) // 2 if row.kind != "slider" else t + m.dp(30)
        icon = node("android.widget.ImageView", (l + m.dp(20), cy - s // 2, l + m.dp(20) + s, cy + s // 2),
                    paint="icon", resource_id="android:id/icon", color=row.icon)
        if icon:
            children.append(icon)
    title_h, sum_h = m.dp(26), m.dp(20)
    if row.kind == "slider":
        tt = t + m.dp(16)
    else:
        tt = (t + b) // 2 - (title_h + (sum_h if summary else 0)) // 2
    texts: list[View] = []
    tv = node("android.widget.TextView", (text_left, tt, r - m.dp(16) - widget_w, tt + title_h), paint="title",
              text=row.title, resource_id="android:id/title")
    if tv:
        texts.append(tv)
    if summary and row.kind != "slider":
        sv = node("android.widget.TextView", (text_left, tt + title_h, r - m.dp(16) - widget_w, tt + title_h + sum_h),
                  paint="summary", text=summary, resource_id="android:id/summary")
        if sv:
            texts.append(sv)
    if texts:
        box = (text_left, tt, r - m.dp(16) - widget_w, tt + title_h + (sum_h if summary else 0))
        rl = node("android.widget.RelativeLayout", box, children=texts)
        if rl:
            children.append(rl)
    if row.kind == "switch":
        on = switch_checked(row, st)
        sw_rect = (r - m.dp(16) - m.dp(52), (t + b) // 2 - m.dp(16), r - m.dp(16), (t + b) // 2 + m.dp(16))
        sw = node("android.widget.Switch", sw_rect, paint="switch", resource_id="android:id/switch_widget",
                  checkable=True, checked=on, text="ON" if on else "OFF")
        if sw:
            frame = View(cls="android.widget.LinearLayout", bounds=sw.bounds, draw=sw_rect, package=pkg,
                         resource_id="android:id/widget_frame", children=[sw], enabled=row.enabled)
            children.append(frame)
    if row.kind == "slider":
        assert row.bind is not None
        raw = st.get(row.bind.namespace, row.bind.key)
        try:
            frac = (float(raw or row.min) - row.min) / max(1, row.max - row.min)
        except ValueError:
            frac = 0.0
        bar = (l + m.dp(16), b - m.dp(44), r - m.dp(16), b - m.dp(12))
        sb = node("android.widget.SeekBar", bar, paint="seekbar", resource_id="android:id/seekbar",
                  clickable=True, focusable=True, value=min(1.0, max(0.0, frac)), tap=Tap("slider", idx))
        if sb:
            children.append(sb)
    return View(cls="android.widget.LinearLayout", bounds=vis, draw=rect, package=pkg, paint="row",
                clickable=clickable, focusable=clickable, tap=tap, enabled=row.enabled, children=children)


def _launcher(m: Metrics, app: App, screen: Screen, catalog: Catalog) -> View:
    pkg = app.package
    top = m.status_h
    root = View(cls="android.widget.FrameLayout", bounds=(0, 0, m.w, m.h), package=pkg, paint="wallpaper")
    cols = 4
    cell_w = m.w // cols
    cell_h = m.dp(104)

    def icon(i: Icon, y: int, col: int) -> View:
        rect = (col * cell_w, y, (col + 1) * cell_w, y + cell_h)
        return View(cls="android.widget.TextView", bounds=rect, package=pkg, paint="app_icon", text=i.label,
                    content_desc=i.label, clickable=True, focusable=True, tap=Tap("launch", i.package),
                    color=catalog.apps[i.package].icon_color if i.package in catalog.apps else "#5f6368")

    grid_top = top + m.dp(380)
    ws = [icon(ic, grid_top + (n // cols) * cell_h, n % cols) for n, ic in enumerate(screen.icons)]
    rows_n = max(1, (len(screen.icons) + cols - 1) // cols)
    workspace = View(cls="android.view.ViewGroup", bounds=(0, grid_top, m.w, grid_top + rows_n * cell_h),
                     package=pkg, resource_id=f"{pkg}:id/workspace", children=ws)
    hs_top = m.h - m.nav_h - m.dp(24) - cell_h
    hs = [icon(ic, hs_top, n % cols) for n, ic in enumerate(screen.hotseat)]
    hotseat = View(cls="android.view.ViewGroup", bounds=(0, hs_top, m.w, hs_top + cell_h), package=pkg,
                   resource_id=f"{pkg}:id/hotseat", children=hs)
    root.children = [workspace, hotseat]
    return root


def _list_window(m: Metrics, app: App, screen: Screen, st: PhoneState, tick: int | None) -> tuple[View, View, int]:
    pkg = app.package
    frame = st.top
    root = View(cls="android.widget.FrameLayout", bounds=(0, 0, m.w, m.h), package=pkg, paint="window")
    content = View(cls="android.widget.LinearLayout", bounds=(0, m.status_h, m.w, m.h - m.nav_h), package=pkg)
    root.children.append(content)
    y = m.status_h
    if screen.style == "home":
        title_rect = (m.dp(24), y + m.dp(40), m.w - m.dp(24), y + m.dp(100))
        content.children.append(View(cls="android.widget.TextView", bounds=title_rect, package=pkg, paint="big_title",
                                     text=screen.title, resource_id=f"{pkg}:id/homepage_title"))
        search = (m.dp(16), y + m.dp(116), m.w - m.dp(16), y + m.dp(172))
        content.children.append(View(cls="android.widget.FrameLayout", bounds=search, package=pkg, paint="search",
                                     text="", content_desc="Search settings", resource_id=f"{pkg}:id/search_action_bar",
                                     clickable=True, focusable=True, tap=Tap("none"),
                                     children=[View(cls="android.widget.TextView", bounds=(search[0] + m.dp(56), search[1],
                                                    search[2] - m.dp(16), search[3]), package=pkg, paint="search_text",
                                                    text="Search settings")]))
        y += m.dp(188)
    else:
        bar = (0, y, m.w, y + m.dp(64))
        up = (m.dp(4), y + m.dp(8), m.dp(52), y + m.dp(56))
        title = (m.dp(64), y + m.dp(8), m.w - m.dp(16), y + m.dp(56))
        content.children.append(View(cls="android.view.ViewGroup", bounds=bar, package=pkg, paint="app_bar",
                                     resource_id=f"{pkg}:id/action_bar", children=[
                                         View(cls="android.widget.ImageButton", bounds=up, package=pkg, paint="up_arrow",
                                              content_desc="Navigate up", clickable=True, focusable=True, tap=Tap("back")),
                                         View(cls="android.widget.TextView", bounds=title, package=pkg, paint="bar_title",
                                              text=screen.title)]))
        y += m.dp(64)
    viewport = (0, y, m.w, m.h - m.nav_h)
    rows = visible_rows(screen, st)
    heights = [_row_height(m, row, value_summary(row, st)) for _, row in rows]
    content_h = sum(heights)
    view_h = viewport[3] - viewport[1]
    scroll = max(0, min(frame.scroll, content_h - view_h))
    scrollable = content_h > view_h
    lst = View(cls="androidx.recyclerview.widget.RecyclerView", bounds=viewport, package=pkg,
               resource_id=f"{pkg}:id/recycler_view", scrollable=scrollable, focusable=scrollable)
    cy = y - scroll
    for (idx, row), h in zip(rows, heights, strict=True):
        rect = (0, cy, m.w, cy + h)
        if _clip(rect, viewport) is not None:
            lst.children.append(_row_view(m, pkg, idx, row, value_summary(row, st), rect, viewport, st))
        cy += h
    if tick is not None:
        # A restless screen: a progress animation whose phase changes on every frame.
        bar = (0, y, m.w, y + m.dp(4))
        lst.children.insert(0, View(cls="android.widget.ProgressBar", bounds=bar, package=pkg, paint="progress",
                                    content_desc=f"Loading {tick % 100}%", value=(tick % 100) / 100))
    content.children.append(lst)
    return root, lst, content_h


def _dialog(m: Metrics, app: App, screen: Screen, st: PhoneState) -> View | None:
    d = st.dialog
    if d is None or d.row >= len(screen.rows):
        return None
    row = screen.rows[d.row]
    pkg = app.package
    w = m.w - m.dp(48)
    left = m.dp(24)
    children: list[View] = []
    pad = m.dp(24)
    if d.kind == "choice":
        opt_h = m.dp(56)
        height = m.dp(72) + opt_h * len(row.options) + m.dp(72)
        top = max(m.status_h, (m.h - height) // 2)
    else:
        height = m.dp(72) + m.dp(64) + m.dp(72)
        top = m.status_h + m.dp(160)
    rect = (left, top, left + w, top + height)
    title = (left + pad, top + pad, left + w - pad, top + m.dp(60))
    children.append(View(cls="android.widget.TextView", bounds=title, package=pkg, paint="dialog_title",
                         text=row.title, resource_id="android:id/alertTitle"))
    y = top + m.dp(72)
    buttons: list[View] = []
    bw = m.dp(96)
    by = top + height - m.dp(64)
    if d.kind == "choice":
        assert row.bind is not None
        cur = st.get(row.bind.namespace, row.bind.key)
        opts = []
        for opt in row.options:
            r = (left, y, left + w, y + opt_h)
            opts.append(View(cls="android.widget.CheckedTextView", bounds=r, package=pkg, paint="radio",
                             text=opt.label, resource_id="android:id/text1", checkable=True,
                             checked=opt.value == cur, clickable=True, focusable=True, tap=Tap("choose", opt.value)))
            y += opt_h
        children.append(View(cls="android.widget.ListView", bounds=(left, top + m.dp(72), left + w, y), package=pkg,
                             resource_id="android:id/select_dialog_listview", children=opts))
    else:
        r = (left + pad, y, left + w - pad, y + m.dp(56))
        children.append(View(cls="android.widget.EditText", bounds=r, package=pkg, paint="edit", text=d.draft,
                             resource_id="android:id/edit", clickable=True, focusable=True, focused=True,
                             tap=Tap("field")))
        ok = (left + w - pad - bw, by, left + w - pad, by + m.dp(48))
        buttons.append(View(cls="android.widget.Button", bounds=ok, package=pkg, paint="button", text="OK",
                            resource_id="android:id/button1", clickable=True, focusable=True, tap=Tap("dialog_ok")))
    cancel_right = left + w - pad - (bw + m.dp(8) if buttons else 0)
    cancel = (cancel_right - bw - m.dp(24), by, cancel_right, by + m.dp(48))
    buttons.insert(0, View(cls="android.widget.Button", bounds=cancel, package=pkg, paint="button", text="Cancel",
                           resource_id="android:id/button2", clickable=True, focusable=True, tap=Tap("dialog_cancel")))
    children.extend(buttons)
    return View(cls="android.widget.FrameLayout", bounds=rect, package=pkg, paint="dialog", children=children)


def keyboard_keys(m: Metrics) -> list[Key]:
    kb = m.keyboard_rect()
    keys = []
    y = kb[1] + m.dp(8)
    kh = m.dp(52)
    for line in KEYBOARD_ROWS:
        if line == " .>":
            widths = [0.6, 0.15, 0.25]
        else:
            widths = [1 / 10] * len(line)
        pad_l = (1 - sum(widths)) / 2 * m.w
        x = pad_l
        for ch, wf in zip(line, widths, strict=True):
            kw = wf * m.w
            keys.append(Key(ch, (round(x), y, round(x + kw), y + kh)))
            x += kw
        y += kh
    return keys


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
        window, lst, content_h = _list_window(m, app, screen, state, tick)
    dialog = _dialog(m, app, screen, state)
    keyboard = keyboard_keys(m) if state.keyboard_shown else []
    return Layout(window=window, dialog=dialog, keyboard=keyboard, status_bar=(0, 0, m.w, m.status_h),
                  nav_bar=(0, m.h - m.nav_h, m.w, m.h), list_view=lst, content_height=content_h)


def hit(view: View, x: int, y: int) -> View | None:
    """The innermost view under (x, y) that reacts to a tap, or None."""
    l, t, r, b = view.bounds
    if not (l <= x < r and t <= y < b):
        return None
    for child in reversed(view.children):
        found = hit(child, x, y)
        if found is not None:
            return found
    return view if view.tap is not None and view.enabled else None
