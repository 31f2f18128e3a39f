"""The windows that open over a screen: choice and text dialogs, and the soft keyboard's keys.

A dialog is its own window: while it is open, uiautomator dumps only it.
"""

from __future__ import annotations

from virtual_phone.schema.app_schema import App, Row, Screen
from virtual_phone.state.phone_state import PhoneState
from virtual_phone.views.view_tree import KEYBOARD_ROWS, Key, Metrics, Rect, Tap, View, clickable, edit_text


def _button(pkg: str, rect: Rect, text: str, resource_id: str, tap: str) -> View:
    return clickable(
        "android.widget.Button",
        rect,
        pkg,
        Tap(tap),
        paint="button",
        text=text,
        resource_id=resource_id,
    )


def _choices(m: Metrics, pkg: str, row: Row, st: PhoneState, box: Rect) -> View:
    """The options of a choice dialog, one radio row each, the current value checked."""
    assert row.bind is not None
    cur = st.get(row.bind.namespace, row.bind.key)
    left, y, right, _ = box
    opts = []
    for opt in row.options:
        opts.append(
            clickable(
                "android.widget.CheckedTextView",
                (left, y, right, y + m.dp(56)),
                pkg,
                Tap("choose", opt.value),
                paint="radio",
                text=opt.label,
                resource_id="android:id/text1",
                checkable=True,
                checked=opt.value == cur,
            )
        )
        y += m.dp(56)
    return View(
        cls="android.widget.ListView",
        bounds=(left, box[1], right, y),
        package=pkg,
        resource_id="android:id/select_dialog_listview",
        children=opts,
    )


def dialog_window(m: Metrics, app: App, screen: Screen, st: PhoneState) -> View | None:
    """The open dialog's window: title, then the options (choice) or a text field with OK, then Cancel."""
    d = st.dialog
    if d is None or d.row >= len(screen.rows):
        return None
    row = screen.rows[d.row]
    pkg = app.package
    w, left, pad = m.w - m.dp(48), m.dp(24), m.dp(24)
    if d.kind == "choice":
        height = m.dp(72) + m.dp(56) * len(row.options) + m.dp(72)
        top = max(m.status_h, (m.h - height) // 2)
    else:
        height = m.dp(72) + m.dp(64) + m.dp(72)
        top = m.status_h + m.dp(160)
    title = View(
        cls="android.widget.TextView",
        bounds=(left + pad, top + pad, left + w - pad, top + m.dp(60)),
        package=pkg,
        paint="dialog_title",
        text=row.title,
        resource_id="android:id/alertTitle",
    )
    y, bw, by = top + m.dp(72), m.dp(96), top + height - m.dp(64)
    buttons: list[View] = []
    if d.kind == "choice":
        body = _choices(m, pkg, row, st, (left, y, left + w, top + height))
    else:
        body = edit_text(
            (left + pad, y, left + w - pad, y + m.dp(56)), pkg, d.draft, "android:id/edit", "edit", True
        )
        ok = (left + w - pad - bw, by, left + w - pad, by + m.dp(48))
        buttons.append(_button(pkg, ok, "OK", "android:id/button1", "dialog_ok"))
    cancel_right = left + w - pad - (bw + m.dp(8) if buttons else 0)
    cancel = (cancel_right - bw - m.dp(24), by, cancel_right, by + m.dp(48))
    buttons.insert(0, _button(pkg, cancel, "Cancel", "android:id/button2", "dialog_cancel"))
    rect = (left, top, left + w, top + height)
    return View(
        cls="android.widget.FrameLayout",
        bounds=rect,
        package=pkg,
        paint="dialog",
        children=[title, body, *buttons],
    )


def keyboard_keys(m: Metrics) -> list[Key]:
    kb = m.keyboard_rect()
    keys = []
    y = kb[1] + m.dp(8)
    kh = m.dp(52)
    for line in KEYBOARD_ROWS:
        widths = [0.6, 0.15, 0.25] if line == " .>" else [1 / 10] * len(line)
        pad_l = (1 - sum(widths)) / 2 * m.w
        x = pad_l
        for ch, wf in zip(line, widths, strict=True):
            kw = wf * m.w
            keys.append(Key(ch, (round(x), y, round(x + kw), y + kh)))
            x += kw
        y += kh
    return keys
