"""The dialogs of record screens, each its own window: a row's long-press menu, a confirm dialog ("Delete this
contact?" Cancel/Delete), a text prompt (Rename), and the time and date pickers (pickers.py).
"""

from __future__ import annotations

from virtual_phone.records.pickers import SPINNERS, neighbours
from virtual_phone.records.record_source import SOURCES, DataContext, find_record
from virtual_phone.records.templates import fill
from virtual_phone.schema.app_schema import App, Screen
from virtual_phone.schema.screen_data import MenuItem, RecordList
from virtual_phone.state.phone_state import Dialog, PhoneState
from virtual_phone.views.view_tree import Metrics, Rect, Tap, View, clickable

RECORD_DIALOGS = frozenset(("menu", "confirm", "prompt", "pick", "time", "date"))
TITLES = {"time": "Set time", "date": "Set date"}


def menu_items(screen: Screen) -> list[MenuItem]:
    return screen.records.menu if screen.records is not None else []


def chosen_item(screen: Screen, where: str) -> MenuItem:
    """The menu item or detail button a confirm/prompt dialog carries out (`menu:1`, `button:0`)."""
    kind, index = where.split(":")
    items = menu_items(screen) if kind == "menu" else (screen.record.buttons if screen.record else [])
    return items[int(index)]


def _button(pkg: str, rect: Rect, text: str, rid: str, tap: Tap) -> View:
    return clickable("android.widget.Button", rect, pkg, tap, paint="button", text=text, resource_id=rid)


def _frame(m: Metrics, pkg: str, top: int, height: int, title: str, body: list[View], ok: str) -> View:
    """A dialog box: title, body, Cancel and (unless `ok` is empty) a positive button."""
    left, w, pad = m.dp(24), m.w - m.dp(48), m.dp(24)
    title_v = View(
        cls="android.widget.TextView",
        bounds=(left + pad, top + pad, left + w - pad, top + m.dp(60)),
        package=pkg,
        paint="dialog_title",
        text=title,
        resource_id="android:id/alertTitle",
    )
    bw, by = m.dp(96), top + height - m.dp(64)
    buttons = []
    right = left + w - pad
    if ok:
        buttons.append(
            _button(
                pkg,
                (right - bw - m.dp(16), by, right, by + m.dp(48)),
                ok,
                "android:id/button1",
                Tap("dialog_positive"),
            )
        )
        right -= bw + m.dp(24)
    buttons.insert(
        0,
        _button(
            pkg,
            (right - bw - m.dp(16), by, right, by + m.dp(48)),
            "Cancel",
            "android:id/button2",
            Tap("dialog_cancel"),
        ),
    )
    return View(
        cls="android.widget.FrameLayout",
        bounds=(left, top, left + w, top + height),
        package=pkg,
        paint="dialog",
        children=[title_v, *body, *buttons],
    )


def _item_list(
    m: Metrics, pkg: str, at: tuple[int, int, int], rows: list[tuple[Tap, str]], cls: str, rid: str
) -> View:
    """An AlertDialog's list: one 56 dp item per row from y down, as a ListView (`at`: left, width, y)."""
    left, w, y = at
    top = y
    views = []
    for tap, text in rows:
        extra = {"checkable": True} if cls == "android.widget.CheckedTextView" else {}
        views.append(
            clickable(
                cls,
                (left, y, left + w, y + m.dp(56)),
                pkg,
                tap,
                paint="menu_item",
                text=text,
                resource_id=rid,
                **extra,
            )
        )
        y += m.dp(56)
    return View(
        cls="android.widget.ListView",
        bounds=(left, top, left + w, y),
        package=pkg,
        resource_id="android:id/select_dialog_listview",
        children=views,
    )


def _menu(m: Metrics, pkg: str, screen: Screen, title: str) -> View:
    """A row's context menu: the record's title, then one item per entry (no buttons)."""
    items = menu_items(screen)
    left, w = m.dp(24), m.w - m.dp(48)
    height = m.dp(80) + m.dp(56) * len(items) + m.dp(16)
    top = (m.h - height) // 2
    y = top + m.dp(80)
    rows = [(Tap("menu_item", i), item.label) for i, item in enumerate(items)]
    lst = _item_list(m, pkg, (left, w, y), rows, "android.widget.TextView", "android:id/title")
    title_v = View(
        cls="android.widget.TextView",
        bounds=(left + m.dp(24), top + m.dp(24), left + w - m.dp(24), top + m.dp(64)),
        package=pkg,
        paint="dialog_title",
        text=title,
        resource_id="android:id/alertTitle",
    )
    return View(
        cls="android.widget.FrameLayout",
        bounds=(left, top, left + w, top + height),
        package=pkg,
        paint="dialog",
        children=[title_v, lst],
    )


def _pick(m: Metrics, pkg: str, title: str, options: list[tuple[str, str]]) -> View:
    """A choice of records (Move to: the folders): one item each, then Cancel."""
    height = m.dp(72) + m.dp(56) * len(options) + m.dp(72)
    top = max(m.status_h, (m.h - height) // 2)
    left, w = m.dp(24), m.w - m.dp(48)
    y = top + m.dp(72)
    rows = [(Tap("pick", key), label) for key, label in options]
    lst = _item_list(m, pkg, (left, w, y), rows, "android.widget.CheckedTextView", "android:id/text1")
    return _frame(m, pkg, top, height, title, [lst], "")


def _spinner(m: Metrics, pkg: str, d: Dialog, part: str, rect: Rect) -> View:
    x0, y0, x1, _ = rect
    row = m.dp(56)
    before, after = neighbours(d.kind, part, d.values)
    focused = d.values.get("focus") == part
    value = d.draft if focused else d.values[part]
    kids = [
        clickable(
            "android.widget.Button",
            (x0, y0, x1, y0 + row),
            pkg,
            Tap("spin", f"{part}:-1"),
            paint="spin_side",
            text=before,
        ),
        clickable(
            "android.widget.EditText",
            (x0, y0 + row, x1, y0 + 2 * row),
            pkg,
            Tap("spin_focus", part),
            paint="spin_value",
            text=value,
            resource_id="android:id/numberpicker_input",
            focused=focused,
        ),
        clickable(
            "android.widget.Button",
            (x0, y0 + 2 * row, x1, y0 + 3 * row),
            pkg,
            Tap("spin", f"{part}:1"),
            paint="spin_side",
            text=after,
        ),
    ]
    kids = [k for k in kids if k.text or k.cls == "android.widget.EditText"]  # AM/PM: no button past an end
    return View(
        cls="android.widget.NumberPicker",
        bounds=(x0, y0, x1, y0 + 3 * row),
        package=pkg,
        resource_id=f"android:id/{part}",
        focusable=True,
        children=kids,
    )


def _picker(m: Metrics, pkg: str, d: Dialog, keyboard: bool) -> View:
    parts = SPINNERS[d.kind]
    height = m.dp(72) + m.dp(168) + m.dp(24) + m.dp(72)
    top = m.status_h + m.dp(40) if keyboard else (m.h - height) // 2
    left, w = m.dp(48), m.w - m.dp(96)
    y = top + m.dp(72)
    col = w // len(parts)
    spinners = [
        _spinner(m, pkg, d, p, (left + i * col, y, left + (i + 1) * col, y + m.dp(168)))
        for i, p in enumerate(parts)
    ]
    body = View(
        cls="android.widget.LinearLayout",
        bounds=(left, y, left + w, y + m.dp(168)),
        package=pkg,
        resource_id=f"android:id/{'timePicker' if d.kind == 'time' else 'pickers'}",
        children=spinners,
    )
    return _frame(m, pkg, top, height, TITLES[d.kind], [body], "OK")


def record_dialog(m: Metrics, app: App, screen: Screen, st: PhoneState, data: DataContext) -> View | None:
    """The window of the record dialog that is open, or None."""
    d = st.dialog
    if d is None or d.kind not in RECORD_DIALOGS:
        return None
    pkg = app.package
    if d.kind in SPINNERS:
        return _picker(m, pkg, d, st.keyboard_shown)
    spec = screen.records or screen.record
    rec = (find_record(data, pkg, spec.source, spec.table, d.record) if spec else None) or {}
    if d.kind == "menu":
        title = fill(screen.records.title, rec) if screen.records else ""
        return _menu(m, pkg, screen, title)
    item = chosen_item(screen, d.target)
    if d.kind == "pick":
        options = SOURCES[item.choose].rows(data, pkg, RecordList(source=item.choose, title="{name}"), {})
        return _pick(m, pkg, item.label, [(str(o["_id"]), str(o.get("name", ""))) for o in options])
    top = m.status_h + m.dp(160)
    if d.kind == "confirm":
        return _frame(
            m, pkg, top, m.dp(72) + m.dp(24) + m.dp(72), fill(item.delete or "", rec), [], item.label
        )
    left, w, pad = m.dp(24), m.w - m.dp(48), m.dp(24)
    edit = clickable(
        "android.widget.EditText",
        (left + pad, top + m.dp(72), left + w - pad, top + m.dp(128)),
        pkg,
        Tap("none"),
        paint="edit",
        text=d.draft,
        resource_id="android:id/edit",
        focused=True,
    )
    return _frame(m, pkg, top, m.dp(72) + m.dp(64) + m.dp(72), item.ask or item.label, [edit], "OK")
