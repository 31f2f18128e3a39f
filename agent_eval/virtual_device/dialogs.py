"""The windows that open over a screen: choice and text dialogs, and the soft keyboard's keys.

A dialog is its own window: while it is open, uiautomator dumps only it.
"""

from __future__ import annotations

from agent_eval.virtual_device.apps import App, Screen
from agent_eval.virtual_device.state import PhoneState
from agent_eval.virtual_device.views import KEYBOARD_ROWS, Key, Metrics, Tap, View


def dialog_window(m: Metrics, app: App, screen: Screen, st: PhoneState) -> View | None:
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
    children.append(
        View(
            cls="android.widget.TextView",
            bounds=title,
            package=pkg,
            paint="dialog_title",
            text=row.title,
            resource_id="android:id/alertTitle",
        )
    )
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
            opts.append(
                View(
                    cls="android.widget.CheckedTextView",
                    bounds=r,
                    package=pkg,
                    paint="radio",
                    text=opt.label,
                    resource_id="android:id/text1",
                    checkable=True,
                    checked=opt.value == cur,
                    clickable=True,
                    focusable=True,
                    tap=Tap("choose", opt.value),
                )
            )
            y += opt_h
        children.append(
            View(
                cls="android.widget.ListView",
                bounds=(left, top + m.dp(72), left + w, y),
                package=pkg,
                resource_id="android:id/select_dialog_listview",
                children=opts,
            )
        )
    else:
        r = (left + pad, y, left + w - pad, y + m.dp(56))
        children.append(
            View(
                cls="android.widget.EditText",
                bounds=r,
                package=pkg,
                paint="edit",
                text=d.draft,
                resource_id="android:id/edit",
                clickable=True,
                focusable=True,
                focused=True,
                tap=Tap("field"),
            )
        )
        ok = (left + w - pad - bw, by, left + w - pad, by + m.dp(48))
        buttons.append(
            View(
                cls="android.widget.Button",
                bounds=ok,
                package=pkg,
                paint="button",
                text="OK",
                resource_id="android:id/button1",
                clickable=True,
                focusable=True,
                tap=Tap("dialog_ok"),
            )
        )
    cancel_right = left + w - pad - (bw + m.dp(8) if buttons else 0)
    cancel = (cancel_right - bw - m.dp(24), by, cancel_right, by + m.dp(48))
    buttons.insert(
        0,
        View(
            cls="android.widget.Button",
            bounds=cancel,
            package=pkg,
            paint="button",
            text="Cancel",
            resource_id="android:id/button2",
            clickable=True,
            focusable=True,
            tap=Tap("dialog_cancel"),
        ),
    )
    children.extend(buttons)
    return View(cls="android.widget.FrameLayout", bounds=rect, package=pkg, paint="dialog", children=children)


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
