"""The schema of screens bound to an app's records: a list of a table's rows (`records:`), one record
(`record:`) and an edit screen (`form:`), with their templates, menus and fields as apps/*.yaml declares them.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

# A template's placeholders: `{column}` or `{format(column, column)}` (formats in records/templates.py).
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(\(([A-Za-z0-9_, ]*)\))?\}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MenuItem(_Strict):
    """One entry of a row's long-press menu or a detail screen's buttons: open a screen for the record, delete
    it after a confirm dialog, or run an action of the app's module (which may first ask for a text)."""

    label: str
    opens: str | None = None
    delete: str | None = None  # the confirm dialog's question, e.g. "Delete this contact?"
    action: str | None = None  # an action of the app's module (app_modules/*)
    ask: str | None = None  # with `action`: a text dialog titled so, whose text the action gets
    ask_value: str = ""  # the text dialog's starting text (a template)
    choose: str = (
        ""  # with `action`: a dialog listing this source's records (titles); the action gets the key
    )

    @model_validator(mode="after")
    def _one_effect(self) -> MenuItem:
        if sum(x is not None for x in (self.opens, self.delete, self.action)) != 1:
            raise ValueError(f"menu item {self.label!r} needs exactly one of `opens`, `delete`, `action`")
        return self


class AddButton(_Strict):
    """The floating add button: its content-desc and the edit screen it opens for a new record."""

    label: str
    opens: str


class Compose(_Strict):
    """A text field and Send button under a list (a message thread): Send inserts a row into `table` with the
    typed text in `column` and `set` (templates over the screen's record and `{now}`)."""

    source: str = "table"
    table: str
    column: str
    hint: str = "Text message"
    send: str = "Send"
    set: dict[str, str] = {}


class RecordList(_Strict):
    """A list screen whose rows are records: of the app's table, or of a source an app module registers."""

    source: str = "table"
    table: str = ""
    title: str
    summary: str = ""
    sort: str = "_id"  # SQL ORDER BY over the table's columns
    where: str = ""  # SQL filter; `:column` is that column of the record the screen was opened for
    group: str = ""  # one row per value of this column: the first by `sort`
    empty: str = "No items"
    search: str = ""  # hint of a search field that filters the rows by title and summary
    opens: str | None = None  # the screen a tap on a row opens for its record
    switch: str = ""  # a column each row's switch flips between 1 and 0
    add: AddButton | None = None
    menu: list[MenuItem] = []
    compose: Compose | None = None


class DetailField(_Strict):
    label: str = ""
    value: str = ""  # a template
    # A column whose value is a list of (label, value) pairs: one row per pair (a contact's numbers, each
    # with its type), instead of `label` and `value`.
    rows: str | None = None


class RecordDetail(_Strict):
    """One record: a header line, label/value rows, and buttons (Edit, Delete...)."""

    source: str = "table"
    table: str
    header: str = ""  # a template shown large at the top
    fields: list[DetailField] = []
    buttons: list[MenuItem] = []


FieldInput = Literal["text", "phone", "multiline", "time", "date"]


class FormField(_Strict):
    """One field of an edit screen: a text field, or a time/date field that opens its picker.

    A time field edits `columns: [hour, minutes]` or the time of day of `column` (epoch ms); a date field the
    date of `column` (epoch ms, UTC)."""

    label: str
    column: str = ""
    columns: list[str] = []
    input: FieldInput = "text"

    @model_validator(mode="after")
    def _columns(self) -> FormField:
        if not self.column and not (self.input == "time" and len(self.columns) == 2):
            raise ValueError(f"field {self.label!r} needs `column` (a time field may have `columns: [h, m]`)")
        return self

    @property
    def key(self) -> str:
        """The field's name in the edit screen's state (a date and a time field may share an epoch column)."""
        if self.input in ("time", "date") and self.column:
            return f"{self.column}_{self.input}"
        return self.column or "_".join(self.columns)


class RecordForm(_Strict):
    """An edit screen: fields over one record of `table`; Save inserts (a new record) or updates it."""

    source: str = "table"
    table: str
    fields: list[FormField]
    save: str = "Save"
    add_title: str = ""  # the title when it creates a record (the screen's title when it edits one)
    set: dict[str, str] = {}  # columns set on insert (templates; `{now}` = now in epoch ms)


def placeholders(template: str) -> list[tuple[str, list[str]]]:
    """(format or "", the columns) of each placeholder of a template."""
    out = []
    for name, call, args in PLACEHOLDER.findall(template):
        if call:
            out.append((name, [a.strip() for a in args.split(",") if a.strip()]))
        else:
            out.append(("", [name]))
    return out
