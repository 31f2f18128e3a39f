"""Lays out the screens of an app's records, read from their source on every layout: a list (search field,
rows with an optional switch, empty state, add button, compose bar); one record and the edit screen are in
record_edit.py.
"""

from __future__ import annotations

from virtual_phone.records.record_edit import detail_window, form_window
from virtual_phone.records.record_source import SOURCES, DataContext, Record, find_record
from virtual_phone.records.record_view import COMPOSE_FOCUS, SEARCH_FOCUS, Ctx, app_bar, field_view, root
from virtual_phone.records.templates import fill
from virtual_phone.schema.app_schema import App, Screen
from virtual_phone.schema.screen_data import RecordList
from virtual_phone.state.phone_state import PhoneState
from virtual_phone.views.view_tree import Metrics, Rect, Tap, View, clickable, clip_rect

__all__ = ["COMPOSE_FOCUS", "SEARCH_FOCUS", "record_window"]


def _parent(c: Ctx, spec: RecordList) -> Record:
    """The record a list was opened for (a conversation, a folder), or {}."""
    return find_record(c.data, c.pkg, spec.source, spec.table, c.st.top.record) or {}


def list_records(c: Ctx, spec: RecordList) -> list[Record]:
    """The list's records, narrowed to those whose title or summary holds the search text."""
    rows = SOURCES[spec.source].rows(c.data, c.pkg, spec, _parent(c, spec))
    q = c.st.top.query.strip().lower()
    if q:
        rows = [r for r in rows if q in f"{fill(spec.title, r)}\n{fill(spec.summary, r)}".lower()]
    return rows


def _part(c: Ctx, cls: str, rect: Rect, clip: Rect, **kw: object) -> list[View]:
    """A view of a row, reported clipped to the list (none when scrolled out of it)."""
    vis = clip_rect(rect, clip)
    return [] if vis is None else [View(cls=cls, bounds=vis, draw=rect, package=c.pkg, **kw)]  # type: ignore[arg-type]


def _record_row(c: Ctx, spec: RecordList, rec: Record, rect: Rect, clip: Rect) -> View:
    """One record as a row: title and summary (TextViews), and a switch when the list has one."""
    m, key = c.m, str(rec["_id"])
    x0, y0, x1, y1 = rect
    right = x1 - m.dp(16) - (m.dp(84) if spec.switch else 0)
    summary = fill(spec.summary, rec) if spec.summary else ""
    title_h, sum_h = m.dp(26), (m.dp(20) if summary else 0)
    tt = (y0 + y1) // 2 - (title_h + sum_h) // 2
    tv = "android.widget.TextView"
    kids = _part(
        c,
        tv,
        (x0 + m.dp(16), tt, right, tt + title_h),
        clip,
        paint="title",
        text=fill(spec.title, rec),
        resource_id="android:id/title",
    )
    if summary:
        kids += _part(
            c,
            tv,
            (x0 + m.dp(16), tt + title_h, right, tt + title_h + sum_h),
            clip,
            paint="summary",
            text=summary,
            resource_id="android:id/summary",
        )
    if spec.switch:
        on = str(rec.get(spec.switch)) not in ("0", "None", "")
        cy = (y0 + y1) // 2
        kids += _part(
            c,
            "android.widget.Switch",
            (x1 - m.dp(68), cy - m.dp(16), x1 - m.dp(16), cy + m.dp(16)),
            clip,
            paint="switch",
            resource_id=f"{c.pkg}:id/onoff",
            checkable=True,
            checked=on,
            text="ON" if on else "OFF",
            clickable=True,
            focusable=True,
            tap=Tap("record_switch", key),
        )
    row = _part(
        c,
        "android.widget.LinearLayout",
        rect,
        clip,
        paint="row",
        clickable=spec.opens is not None,
        focusable=True,
        children=kids,
        tap=Tap("record_open", key) if spec.opens else None,
        long_tap=Tap("record_menu", key) if spec.menu else None,
    )
    return row[0]


def _rows(c: Ctx, spec: RecordList, y: int, bottom: int) -> tuple[View, int]:
    """The RecyclerView of the records between y and bottom (or the empty state) and its content height."""
    m, frame = c.m, c.st.top
    viewport = (0, y, m.w, bottom)
    recs = list_records(c, spec)
    row_h = m.dp(76) if spec.summary else m.dp(60)
    content_h = row_h * len(recs)
    view_h = bottom - y
    scroll = max(0, min(frame.scroll, content_h - view_h))
    lst = View(
        cls="androidx.recyclerview.widget.RecyclerView",
        bounds=viewport,
        package=c.pkg,
        resource_id=f"{c.pkg}:id/recycler_view",
        scrollable=content_h > view_h,
        focusable=content_h > view_h,
    )
    first = scroll // row_h
    for i in range(first, min(len(recs), (scroll + view_h) // row_h + 1)):
        rect = (0, y - scroll + i * row_h, m.w, y - scroll + (i + 1) * row_h)
        if clip_rect(rect, viewport) is not None:
            lst.children.append(_record_row(c, spec, recs[i], rect, viewport))
    if not recs:
        empty = spec.empty if not frame.query.strip() else "No results"
        lst.children.append(
            c.text(
                (m.dp(16), y + m.dp(48), m.w - m.dp(16), y + m.dp(96)),
                empty,
                "empty",
                f"{c.pkg}:id/empty_view",
            )
        )
    return lst, content_h


def _compose_bar(c: Ctx, spec: RecordList, bottom: int) -> View:
    m = c.m
    assert spec.compose is not None
    top = bottom - m.dp(72)
    draft = c.st.top.form.get(COMPOSE_FOCUS, "")
    field = field_view(
        c,
        (m.dp(16), top + m.dp(8), m.w - m.dp(88), bottom - m.dp(8)),
        draft,
        spec.compose.hint,
        COMPOSE_FOCUS,
        f"{c.pkg}:id/compose_message_text",
    )
    send = clickable(
        "android.widget.ImageButton",
        (m.w - m.dp(80), top + m.dp(12), m.w - m.dp(24), bottom - m.dp(12)),
        c.pkg,
        Tap("compose_send"),
        paint="fab",
        content_desc=spec.compose.send,
        resource_id=f"{c.pkg}:id/send_message_button",
    )
    return View(
        cls="android.widget.LinearLayout",
        bounds=(0, top, m.w, bottom),
        package=c.pkg,
        paint="app_bar",
        resource_id=f"{c.pkg}:id/compose_bar",
        children=[field, send],
    )


def list_window(c: Ctx) -> tuple[View, View, int]:
    spec = c.screen.records
    assert spec is not None
    m = c.m
    window, content = root(c)
    content.children.append(app_bar(c, fill(c.screen.title, _parent(c, spec))))
    y = m.status_h + m.dp(64)
    if spec.search:
        rect = (m.dp(16), y + m.dp(4), m.w - m.dp(16), y + m.dp(60))
        content.children.append(
            field_view(c, rect, c.st.top.query, spec.search, SEARCH_FOCUS, f"{c.pkg}:id/search_view")
        )
        y += m.dp(68)
    bottom = c.bottom - (m.dp(72) if spec.compose else 0)
    lst, content_h = _rows(c, spec, y, bottom)
    content.children.append(lst)
    if spec.compose is not None:
        content.children.append(_compose_bar(c, spec, c.bottom))
    if spec.add is not None:
        s = m.dp(56)
        rect = (m.w - m.dp(16) - s, bottom - m.dp(16) - s, m.w - m.dp(16), bottom - m.dp(16))
        content.children.append(
            clickable(
                "android.widget.ImageButton",
                rect,
                c.pkg,
                Tap("record_add"),
                paint="fab",
                content_desc=spec.add.label,
                resource_id=f"{c.pkg}:id/fab",
            )
        )
    return window, lst, content_h


def record_window(
    m: Metrics, app: App, screen: Screen, st: PhoneState, data: DataContext
) -> tuple[View, View | None, int]:
    """The window of a record screen and, for a list, its scrollable view and content height."""
    c = Ctx(m, app, screen, st, data)
    if screen.records is not None:
        return list_window(c)
    if screen.record is not None:
        return detail_window(c)
    return form_window(c)
