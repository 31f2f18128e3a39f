"""Lays out one record (a header, label/value rows, buttons) and the edit screen (Cancel, title and Save in
the bar; a text field per text column, a row per time or date that opens its picker).
"""

from __future__ import annotations

from collections.abc import Mapping

from virtual_phone.records.form_values import shown_value
from virtual_phone.records.record_source import find_record
from virtual_phone.records.record_view import Ctx, app_bar, field_view, root
from virtual_phone.records.templates import fill
from virtual_phone.schema.screen_data import FormField, MenuItem, RecordDetail
from virtual_phone.views.view_tree import Tap, View, clickable


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


def _detail_rows(spec: RecordDetail, rec: Mapping[str, object]) -> list[tuple[str, str]]:
    """A record screen's label/value rows: a field's own, or one per pair of its `rows` column."""
    out: list[tuple[str, str]] = []
    for f in spec.fields:
        pairs = rec.get(f.rows) if f.rows else [(f.label, fill(f.value, rec))]
        out.extend((str(label), str(value)) for label, value in pairs or [])  # type: ignore[attr-defined]
    return out


def detail_window(c: Ctx) -> tuple[View, None, int]:
    """One record: its header, a label/value row per field, and the buttons (Edit, Delete...)."""
    spec = c.screen.record
    assert spec is not None
    m = c.m
    window, content = root(c)
    rec = find_record(c.data, c.pkg, spec.source, spec.table, c.st.top.record) or {}
    content.children.append(app_bar(c, fill(c.screen.title, rec)))
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
    for label, value in _detail_rows(spec, rec):
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
                label,
                "summary",
                "android:id/summary",
            ),
        ]
        content.children.append(box)
        y += m.dp(76)
    return window, None, 0


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
    window, content = root(c)
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
    content.children.append(app_bar(c, title, "Cancel", save))
    y += m.dp(80)
    for f in spec.fields:
        view, h = _form_field(c, f, y)
        if y + h <= c.bottom:
            content.children.append(view)
        y += h
    return window, None, 0
