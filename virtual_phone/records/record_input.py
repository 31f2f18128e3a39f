"""What taps, long presses, typing and keys do on the screens of an app's records: open a record, flip its
switch, edit fields, drive pickers, save, delete after confirming, run an app's actions. Called by phone.py
under the phone's lock; every write goes through the screen's record source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from virtual_phone.records.app_behaviour import AppContext, behaviour
from virtual_phone.records.form_values import initial_form, record_values
from virtual_phone.records.pickers import (
    SPINNERS,
    date_parts,
    date_text,
    set_typed,
    step,
    time_parts,
    time_text,
)
from virtual_phone.records.record_dialogs import RECORD_DIALOGS, chosen_item, menu_items
from virtual_phone.records.record_screens import COMPOSE_FOCUS, SEARCH_FOCUS
from virtual_phone.records.record_source import SOURCES, DataContext, Record, find_record
from virtual_phone.records.templates import fill
from virtual_phone.schema.app_schema import App, Catalog, Screen
from virtual_phone.schema.screen_data import MenuItem
from virtual_phone.state.phone_state import Dialog, Frame, PhoneState
from virtual_phone.views.view_tree import Tap


@dataclass(frozen=True)
class Editor:
    """The phone as the record screens change it."""

    st: PhoneState
    catalog: Catalog
    data: DataContext

    @property
    def app(self) -> App:
        return self.catalog.apps[self.st.foreground]

    @property
    def screen(self) -> Screen:
        return self.app.screens[self.st.top.screen]

    @property
    def context(self) -> AppContext:
        return AppContext(self.app.package, self.data)

    def is_record_screen(self) -> bool:
        s = self.screen
        return s.records is not None or s.record is not None or s.form is not None

    def push(self, screen_id: str, key: str | None) -> None:
        """Opens a screen for a record (None: a new one); an edit screen starts from the record's values."""
        frame = Frame(screen_id, record=key)
        form = self.app.screens[screen_id].form
        if form is not None:
            rec = find_record(self.data, self.app.package, form.source, form.table, key)
            frame.form = initial_form(form, rec, self.data.clock.now_ms())
        self.st.keyboard_shown = False
        self.st.tasks[self.st.foreground].append(frame)

    def current(self, key: str | None) -> Record:
        spec = self.screen.records or self.screen.record
        if spec is None:
            return {}
        return find_record(self.data, self.app.package, spec.source, spec.table, key) or {}


def apply(ed: Editor, tap: Tap, x: int) -> bool:
    """Carries out a tap of the record screens; False when the tap is not one of theirs."""
    kind, arg = tap.kind, str(tap.arg)
    st, screen = ed.st, ed.screen
    if kind == "focus":
        st.top.focus, st.keyboard_shown = arg, True
    elif kind == "record_open" and screen.records is not None and screen.records.opens:
        ed.push(screen.records.opens, arg)
    elif kind == "record_add" and screen.records is not None and screen.records.add:
        ed.push(screen.records.add.opens, None)
    elif kind == "record_switch" and screen.records is not None:
        _flip(ed, arg)
    elif kind == "menu_item" and st.dialog is not None:
        key = st.dialog.record
        st.dialog = None
        run_item(ed, menu_items(screen)[int(arg)], key, f"menu:{arg}")
    elif kind == "record_button" and screen.record is not None:
        run_item(ed, screen.record.buttons[int(arg)], st.top.record, f"button:{arg}")
    elif kind == "dialog_positive" and st.dialog is not None:
        _positive(ed, st.dialog)
    elif kind == "pick" and st.dialog is not None:
        d, st.dialog = st.dialog, None
        _run_action(ed, chosen_item(screen, d.target), d.record, arg)
    elif kind in ("picker", "spin", "spin_focus"):
        _picker_tap(ed, kind, arg)
    elif kind == "form_save":
        save(ed)
    elif kind == "compose_send":
        send(ed)
    else:
        return False
    return True


def long_press(ed: Editor, tap: Tap) -> None:
    """A long press: a row's menu, or (on a text field) the field's focus."""
    if tap.kind == "record_menu":
        ed.st.keyboard_shown = False
        ed.st.dialog = Dialog("menu", 0, record=str(tap.arg))
    elif tap.kind == "focus":
        ed.st.top.focus, ed.st.keyboard_shown = str(tap.arg), True


def _flip(ed: Editor, key: str) -> None:
    spec = ed.screen.records
    assert spec is not None
    rec = ed.current(key)
    on = str(rec.get(spec.switch)) not in ("0", "None", "")
    SOURCES[spec.source].update(ed.data, ed.app.package, spec.table, key, {spec.switch: 0 if on else 1})


def run_item(ed: Editor, item: MenuItem, key: str | None, where: str) -> None:
    """A menu item or button: open a screen for the record, ask to confirm a delete, or run an action."""
    if item.opens is not None:
        ed.push(item.opens, key)
    elif item.delete is not None:
        ed.st.dialog = Dialog("confirm", 0, record=key, target=where)
    elif item.choose:
        ed.st.dialog = Dialog("pick", 0, record=key, target=where)
    elif item.ask is not None:
        draft = fill(item.ask_value, ed.current(key))
        ed.st.dialog = Dialog("prompt", 0, draft=draft, record=key, target=where)
        ed.st.keyboard_shown = True
    else:
        _run_action(ed, item, key, "")


def _run_action(ed: Editor, item: MenuItem, key: str | None, text: str) -> None:
    assert item.action is not None
    behaviour(ed.app.package).action(ed.context, item.action, key, text)


def _positive(ed: Editor, d: Dialog) -> None:
    """OK / Delete of a record dialog."""
    st = ed.st
    if d.kind in SPINNERS:
        _commit_spinner(d)
        st.top.form[d.target] = time_text(d.values) if d.kind == "time" else date_text(d.values)
    elif d.kind == "confirm" and d.record is not None:
        spec = ed.screen.records or ed.screen.record
        assert spec is not None
        SOURCES[spec.source].delete(ed.data, ed.app.package, spec.table, d.record)
        if ed.screen.record is not None and st.top.record == d.record:
            st.tasks[st.foreground].pop()  # the record's own screen closes once it is gone
    elif d.kind == "prompt":
        _run_action(ed, chosen_item(ed.screen, d.target), d.record, d.draft)
    st.dialog = None
    st.keyboard_shown = False


def _picker_tap(ed: Editor, kind: str, arg: str) -> None:
    st = ed.st
    if kind == "picker":
        form = ed.screen.form
        field = next(f for f in form.fields if f.key == arg) if form else None
        if field is None:
            return
        text = st.top.form.get(arg, "")
        values = time_parts(text) if field.input == "time" else date_parts(text)
        st.top.focus, st.keyboard_shown = "", False
        st.dialog = Dialog(field.input, 0, target=arg, values=values)
        return
    d = st.dialog
    if d is None or d.kind not in SPINNERS:
        return
    _commit_spinner(d)
    if kind == "spin":
        part, delta = arg.split(":")
        step(d.kind, part, d.values, int(delta))
        st.keyboard_shown = False
    else:
        d.values["focus"], d.draft = arg, ""
        st.keyboard_shown = True


def _commit_spinner(d: Dialog) -> None:
    """A value typed into a spinner takes effect when the spinner loses focus (kept only if it is valid)."""
    part = d.values.pop("focus", "")
    if part and d.draft:
        set_typed(d.kind, part, d.values, d.draft)
    d.draft = ""


def save(ed: Editor) -> None:
    """Save: insert a new record or update the one shown, then close the edit screen. Nothing typed: nothing
    saved, as Contacts discards an empty new contact (a form with a time or date, an alarm, saves anyway)."""
    spec, frame = ed.screen.form, ed.st.top
    assert spec is not None
    src = SOURCES[spec.source]
    rec = find_record(ed.data, ed.app.package, spec.source, spec.table, frame.record)
    values = record_values(spec, frame.form, rec, ed.data.clock.now_ms())
    texts = [values[f.column] for f in spec.fields if f.input not in ("time", "date")]
    if frame.record is None and texts and len(texts) == len(spec.fields) and not any(texts):
        ed.st.tasks[ed.st.foreground].pop()
        return
    behaviour(ed.app.package).saving(ed.context, spec.table, values, frame.record)
    if frame.record is None:
        now = str(ed.data.clock.now_ms())
        values = {**{k: fill(v.replace("{now}", now), {}) for k, v in spec.set.items()}, **values}
        src.insert(ed.data, ed.app.package, spec.table, values)
    else:
        src.update(ed.data, ed.app.package, spec.table, frame.record, values)
    ed.st.keyboard_shown = False
    ed.st.tasks[ed.st.foreground].pop()


def send(ed: Editor) -> None:
    """Send of a compose bar: a new row with the typed text and the values the thread's record gives."""
    spec = ed.screen.records
    frame = ed.st.top
    text = frame.form.get(COMPOSE_FOCUS, "")
    if spec is None or spec.compose is None or not text.strip():
        return
    c = spec.compose
    parent = find_record(ed.data, ed.app.package, spec.source, spec.table, frame.record) or {}
    now = str(ed.data.clock.now_ms())
    values = {k: fill(v.replace("{now}", now), parent) for k, v in c.set.items()}
    values[c.column] = text
    SOURCES[c.source].insert(ed.data, ed.app.package, c.table, values)
    frame.form[COMPOSE_FOCUS] = ""


def _text_target(ed: Editor) -> tuple[str, str] | None:
    """Where typed text goes: ("dialog", "") for a prompt or focused spinner, ("frame", focus) for a field."""
    d = ed.st.dialog
    if d is not None:
        if d.kind == "prompt" or (d.kind in SPINNERS and d.values.get("focus")):
            return ("dialog", "")
        return None
    if ed.is_record_screen() and ed.st.top.focus:
        return ("frame", ed.st.top.focus)
    return None


def type_text(ed: Editor, text: str) -> bool:
    """Typed text into the focused field; False when the record screens have no say (Settings' dialogs)."""
    return _edit_focused(ed, lambda old: old + text)


def backspace(ed: Editor) -> bool:
    return _edit_focused(ed, lambda old: old[:-1])


def _edit_focused(ed: Editor, change: Callable[[str], str]) -> bool:
    """Change the focused field's text (a dialog's draft, the search query or a form field)."""
    if ed.st.dialog is not None and ed.st.dialog.kind not in RECORD_DIALOGS:
        return False
    target = _text_target(ed)
    if target is None:
        return ed.is_record_screen() or ed.st.dialog is not None
    if target[0] == "dialog":
        assert ed.st.dialog is not None
        ed.st.dialog.draft = change(ed.st.dialog.draft)
    elif target[1] == SEARCH_FOCUS:
        ed.st.top.query = change(ed.st.top.query)
        ed.st.top.scroll = 0
    else:
        ed.st.top.form[target[1]] = change(ed.st.top.form.get(target[1], ""))
    return True


def enter(ed: Editor) -> bool:
    """Enter: a new line in a multi-line field, the next field in a form (the IME's Next), else the keyboard
    goes down; in a prompt or picker it is OK."""
    st = ed.st
    if st.dialog is not None:
        if st.dialog.kind in ("prompt", "time", "date"):
            _positive(ed, st.dialog)
            return True
        return st.dialog.kind in RECORD_DIALOGS
    if not ed.is_record_screen():
        return False
    form = ed.screen.form
    fields = [f for f in form.fields if f.input not in ("time", "date")] if form else []
    keys = [f.key for f in fields]
    if st.top.focus in keys:
        f = fields[keys.index(st.top.focus)]
        if f.input == "multiline":
            return type_text(ed, "\n")
        i = keys.index(st.top.focus)
        if i + 1 < len(keys):
            st.top.focus = keys[i + 1]
            return True
    st.keyboard_shown = False
    return True
