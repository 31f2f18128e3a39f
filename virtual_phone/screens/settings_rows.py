"""One row of a list screen as views: a header, or a clickable row holding its icon, title and summary and,
by kind, a switch or a seek bar. Each part has its own helper; all are clipped to the list's viewport.
"""

from __future__ import annotations

from dataclasses import dataclass

from virtual_phone.schema.app_schema import Row, Screen
from virtual_phone.state.phone_state import PhoneState
from virtual_phone.views.view_tree import Metrics, Rect, Tap, View, clip_rect

TAPS = {"link": "open", "switch": "toggle", "choice": "choice", "text": "edit"}


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
    v = state.shown(row.bind.namespace, row.bind.key)
    # "0" reads as off even where off is another value (ui_night_mode 0 = auto, not dark).
    return v not in (None, row.off_value, "0")


def visible_rows(screen: Screen, state: PhoneState) -> list[tuple[int, Row]]:
    out = []
    for i, row in enumerate(screen.rows):
        cond = row.visible_when
        if cond is None or state.get(cond.namespace, cond.key) in cond.equals:
            out.append((i, row))
    return out


def row_height(m: Metrics, row: Row, summary: str) -> int:
    if row.kind == "header":
        return m.dp(48)
    if row.kind == "slider":
        return m.dp(96)
    return m.dp(76) if summary else m.dp(60)


@dataclass(frozen=True)
class _Row:
    """What every part of one row needs: where it is drawn, where it is clipped, and its data."""

    m: Metrics
    pkg: str
    idx: int
    row: Row
    summary: str
    rect: Rect
    clip: Rect
    st: PhoneState

    def node(self, cls: str, rr: Rect, **kw: object) -> View | None:
        c = clip_rect(rr, self.clip)
        if c is None:
            return None
        return View(cls=cls, bounds=c, draw=rr, package=self.pkg, enabled=self.row.enabled, **kw)  # type: ignore[arg-type]

    @property
    def widget_w(self) -> int:
        return self.m.dp(84) if self.row.kind == "switch" else 0


def _header(r: _Row, vis: Rect) -> View:
    x0, y0, x1, y1 = r.rect
    v = r.node(
        "android.widget.TextView",
        (x0 + r.m.dp(16), y0, x1 - r.m.dp(16), y1),
        paint="header",
        text=r.row.title,
        resource_id="android:id/title",
    )
    return View(
        cls="android.widget.LinearLayout", bounds=vis, draw=r.rect, package=r.pkg, children=[v] if v else []
    )


def _icon(r: _Row) -> list[View]:
    if not r.row.icon:
        return []
    m, (x0, y0, _, y1) = r.m, r.rect
    s = m.dp(24)
    cy = (y0 + y1) // 2 if r.row.kind != "slider" else y0 + m.dp(30)
    icon = r.node(
        "android.widget.ImageView",
        (x0 + m.dp(20), cy - s // 2, x0 + m.dp(20) + s, cy + s // 2),
        paint="icon",
        resource_id="android:id/icon",
        color=r.row.icon,
    )
    return [icon] if icon else []


def _texts(r: _Row) -> list[View]:
    """The title and summary, in a RelativeLayout as a preference lays them out."""
    m, row, summary, (x0, y0, x1, y1) = r.m, r.row, r.summary, r.rect
    text_left = x0 + (m.dp(72) if row.icon else m.dp(16))
    right = x1 - m.dp(16) - r.widget_w
    title_h, sum_h = m.dp(26), m.dp(20)
    if row.kind == "slider":
        tt = y0 + m.dp(16)
    else:
        tt = (y0 + y1) // 2 - (title_h + (sum_h if summary else 0)) // 2
    texts: list[View] = []
    tv = r.node(
        "android.widget.TextView",
        (text_left, tt, right, tt + title_h),
        paint="title",
        text=row.title,
        resource_id="android:id/title",
    )
    if tv:
        texts.append(tv)
    if summary and row.kind != "slider":
        sv = r.node(
            "android.widget.TextView",
            (text_left, tt + title_h, right, tt + title_h + sum_h),
            paint="summary",
            text=summary,
            resource_id="android:id/summary",
        )
        if sv:
            texts.append(sv)
    if not texts:
        return []
    box = (text_left, tt, right, tt + title_h + (sum_h if summary else 0))
    rl = r.node("android.widget.RelativeLayout", box, children=texts)
    return [rl] if rl else []


def _switch(r: _Row) -> list[View]:
    if r.row.kind != "switch":
        return []
    m, (_, y0, x1, y1) = r.m, r.rect
    on = switch_checked(r.row, r.st)
    cy = (y0 + y1) // 2
    sw_rect = (x1 - m.dp(16) - m.dp(52), cy - m.dp(16), x1 - m.dp(16), cy + m.dp(16))
    sw = r.node(
        "android.widget.Switch",
        sw_rect,
        paint="switch",
        resource_id="android:id/switch_widget",
        checkable=True,
        checked=on,
        text="ON" if on else "OFF",
    )
    if not sw:
        return []
    frame = View(
        cls="android.widget.LinearLayout",
        bounds=sw.bounds,
        draw=sw_rect,
        package=r.pkg,
        resource_id="android:id/widget_frame",
        children=[sw],
        enabled=r.row.enabled,
    )
    return [frame]


def _slider(r: _Row) -> list[View]:
    row = r.row
    if row.kind != "slider":
        return []
    assert row.bind is not None
    m, (x0, _, x1, y1) = r.m, r.rect
    raw = r.st.get(row.bind.namespace, row.bind.key)
    try:
        frac = (float(raw or row.min) - row.min) / max(1, row.max - row.min)
    except ValueError:
        frac = 0.0
    sb = r.node(
        "android.widget.SeekBar",
        (x0 + m.dp(16), y1 - m.dp(44), x1 - m.dp(16), y1 - m.dp(12)),
        paint="seekbar",
        resource_id="android:id/seekbar",
        clickable=True,
        focusable=True,
        value=min(1.0, max(0.0, frac)),
        tap=Tap("slider", r.idx),
    )
    return [sb] if sb else []


def row_view(
    m: Metrics, pkg: str, idx: int, row: Row, summary: str, rect: Rect, clip: Rect, st: PhoneState
) -> View:
    """One row and its children, drawn at `rect` and reported clipped to the list's viewport."""
    if row.enabled and row.bind is not None and st.forced(row.bind.namespace, row.bind.key):
        row = row.model_copy(update={"enabled": False})  # a linked setting holds it (Battery Saver → dark)
    vis = clip_rect(rect, clip)
    assert vis is not None
    r = _Row(m, pkg, idx, row, summary, rect, clip, st)
    if row.kind == "header":
        return _header(r, vis)
    tap: Tap | None = None
    if row.enabled and row.kind in TAPS:
        tap = Tap(TAPS[row.kind], (row.opens or "") if row.kind == "link" else idx)
    return View(
        cls="android.widget.LinearLayout",
        bounds=vis,
        draw=rect,
        package=pkg,
        paint="row",
        clickable=tap is not None,
        focusable=tap is not None,
        tap=tap,
        enabled=row.enabled,
        children=[*_icon(r), *_texts(r), *_switch(r), *_slider(r)],
    )
