"""Lays out the screens of an app's records, read from its database on every layout: a list (search field,
rows with an optional switch, empty state, add button, compose bar), one record, and an edit screen.

When the keyboard is up the window ends above it (adjustResize, as these apps declare), so rows it would
cover are not in the dump.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_eval.virtual_device.apps import App, Screen
from agent_eval.virtual_device.form_values import shown_value
from agent_eval.virtual_device.record_source import SOURCES, DataContext, Record, find_record
from agent_eval.virtual_device.rows import clip_rect
from agent_eval.virtual_device.screen_data import FormField, MenuItem, RecordList
from agent_eval.virtual_device.state import PhoneState
from agent_eval.virtual_device.templates import fill
from agent_eval.virtual_device.views import Metrics, Rect, Tap, View, clickable

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
    """An EditText: a tap gives it focus and brings the keyboard up; it shows its hint while empty."""
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
    )


def _app_bar(c: Ctx, title: str, up_desc: str = "Navigate up", action: View | None = None) -> View:
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


def _root(c: Ctx) -> tuple[View, View]:
    m = c.m
    root = View(cls="android.widget.FrameLayout", bounds=(0, 0, m.w, m.h), package=c.pkg, paint="window")
    content = View(cls="android.widget.LinearLayout", bounds=(0, m.status_h, m.w, c.bottom), package=c.pkg)
    root.children.append(content)
    return root, content


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


def _record_row(c: Ctx, spec: RecordList, rec: Record, rect: Rect, clip: Rect) -> View:
    """One record as a row: title and summary (TextViews), and a switch when the list has one."""
    m, key = c.m, str(rec["_id"])
    x0, y0, x1, y1 = rect
    switch_w = m.dp(84) if spec.switch else 0
    summary = fill(spec.summary, rec) if spec.summary else ""
    title_h, sum_h = m.dp(26), (m.dp(20) if summary else 0)
    tt = (y0 + y1) // 2 - (title_h + sum_h) // 2
    parts: list[tuple[Rect, dict[str, object]]] = [
        (
            (x0 + m.dp(16), tt, x1 - m.dp(16) - switch_w, tt + title_h),
            {"paint": "title", "text": fill(spec.title, rec), "resource_id": "android:id/title"},
        ),
    ]
    if summary:
        parts.append(
            (
                (x0 + m.dp(16), tt + title_h, x1 - m.dp(16) - switch_w, tt + title_h + sum_h),
                {"paint": "summary", "text": summary, "resource_id": "android:id/summary"},
            )
        )
    if spec.switch:
        on = str(rec.get(spec.switch)) not in ("0", "None", "")
        cy = (y0 + y1) // 2
        parts.append(
            (
                (x1 - m.dp(68), cy - m.dp(16), x1 - m.dp(16), cy + m.dp(16)),
                {
                    "paint": "switch",
                    "resource_id": f"{c.pkg}:id/onoff",
                    "checkable": True,
                    "checked": on,
                    "text": "ON" if on else "OFF",
                    "clickable": True,
                    "focusable": True,
                    "tap": Tap("record_switch", key),
                },
            )
        )
    children = []
    for r, kw in parts:
        vis = clip_rect(r, clip)
        if vis is not None:
            children.append(
                View(
                    cls="android.widget.Switch" if kw.get("paint") == "switch" else "android.widget.TextView",
                    bounds=vis,
                    draw=r,
                    package=c.pkg,
                    **kw,
                )
            )  # type: ignore[arg-type]
    vis = clip_rect(rect, clip)
    assert vis is not None
    return View(
        cls="android.widget.LinearLayout",
        bounds=vis,
        draw=rect,
        package=c.pkg,
        paint="row",
        clickable=spec.opens is not None,
        focusable=True,
        children=children,
        tap=Tap("record_open", key) if spec.opens else None,
        long_tap=Tap("record_menu", key) if spec.menu else None,
    )


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
    root, content = _root(c)
    content.children.append(_app_bar(c, fill(c.screen.title, _parent(c, spec))))
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
    return root, lst, content_h


def _buttons(c: Ctx, items: list[MenuItem], y: int) -> View:
    m = c.m
    w = (m.w - m.dp(32)) // max(1, len(items))
    views = [
        clickable(
            "android.widget.Button",
            (m.dp(16) + i * w, y, m.dp(16) + (i + 1) * w - m.dp(8), y + m.dp(48)),
            c.pkg,
            Tap("record_button", i),
            paint="outlined",
            text=item.label,
        )
        for i, item in enumerate(items)
    ]
    return View(
        cls="android.widget.LinearLayout", bounds=(0, y, m.w, y + m.dp(48)), package=c.pkg, children=views
    )


def detail_window(c: Ctx) -> tuple[View, None, int]:
    """One record: its header, a label/value row per field, and the buttons (Edit, Delete...)."""
    spec = c.screen.record
    assert spec is not None
    m = c.m
    root, content = _root(c)
    rec = find_record(c.data, c.pkg, spec.source, spec.table, c.st.top.record) or {}
    content.children.append(_app_bar(c, fill(c.screen.title, rec)))
    y = m.status_h + m.dp(80)
    if spec.header:
        content.children.append(
            c.text(
                (m.dp(24), y, m.w - m.dp(24), y + m.dp(56)),
                fill(spec.header, rec),
                "big_title",
                f"{c.pkg}:id/large_title",
            )
        )
        y += m.dp(72)
    if spec.buttons:
        content.children.append(_buttons(c, spec.buttons, y))
        y += m.dp(64)
    for f in spec.fields:
        value = fill(f.value, rec)
        if not value:
            continue  # a contact without an e-mail shows no e-mail row
        box = View(
            cls="android.widget.LinearLayout", bounds=(0, y, m.w, y + m.dp(76)), package=c.pkg, paint="row"
        )
        box.children = [
            c.text(
                (m.dp(24), y + m.dp(12), m.w - m.dp(24), y + m.dp(40)), value, "title", "android:id/title"
            ),
            c.text(
                (m.dp(24), y + m.dp(40), m.w - m.dp(24), y + m.dp(64)),
                f.label,
                "summary",
                "android:id/summary",
            ),
        ]
        content.children.append(box)
        y += m.dp(76)
    return root, None, 0


def _form_field(c: Ctx, f: FormField, y: int) -> tuple[View, int]:
    """A text field (EditText with the label as hint), or a time/date row that opens its picker."""
    m = c.m
    value = shown_value(f, c.st.top.form)
    if f.input in ("time", "date"):
        box = clickable(
            "android.widget.LinearLayout", (0, y, m.w, y + m.dp(76)), c.pkg, Tap("picker", f.key), paint="row"
        )
        box.children = [
            c.text(
                (m.dp(24), y + m.dp(12), m.w - m.dp(24), y + m.dp(40)),
                value,
                "title",
                f"{c.pkg}:id/{f.key}_value",
            ),
            c.text(
                (m.dp(24), y + m.dp(40), m.w - m.dp(24), y + m.dp(64)),
                f.label,
                "summary",
                f"{c.pkg}:id/{f.key}_label",
            ),
        ]
        return box, m.dp(80)
    height = m.dp(120) if f.input == "multiline" else m.dp(64)
    rect = (m.dp(24), y + m.dp(8), m.w - m.dp(24), y + height)
    return field_view(c, rect, value, f.label, f.key, f"{c.pkg}:id/{f.key}"), height + m.dp(16)


def form_window(c: Ctx) -> tuple[View, None, int]:
    """An edit screen: Cancel (the up button), the title and Save in the bar, then one view per field."""
    spec = c.screen.form
    assert spec is not None
    m = c.m
    root, content = _root(c)
    y = m.status_h
    save = clickable(
        "android.widget.Button",
        (m.w - m.dp(112), y + m.dp(12), m.w - m.dp(16), y + m.dp(52)),
        c.pkg,
        Tap("form_save"),
        paint="filled",
        text=spec.save,
        resource_id=f"{c.pkg}:id/save",
    )
    new = c.st.top.record is None
    title = spec.add_title if new and spec.add_title else c.screen.title
    content.children.append(_app_bar(c, title, "Cancel", save))
    y += m.dp(80)
    for f in spec.fields:
        view, h = _form_field(c, f, y)
        if y + h <= c.bottom:
            content.children.append(view)
        y += h
    return root, None, 0


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
