"""Checks the screens of app records against the data they are bound to, at phone start: every source,
table, column, template, filter and sort order they name. A mistake fails with the file and field named.
"""

from __future__ import annotations

import re

from virtual_phone.errors import PhoneConfigError
from virtual_phone.records.app_behaviour import BEHAVIOURS
from virtual_phone.records.record_source import SOURCES, DataContext
from virtual_phone.records.templates import template_errors
from virtual_phone.schema.app_schema import App, Catalog
from virtual_phone.schema.screen_data import MenuItem, RecordList

Problems = list[tuple[str, str]]  # (field, what is wrong)


def _columns(
    ctx: DataContext, app: App, source: str, table: str, where: str, out: Problems
) -> set[str] | None:
    if source not in SOURCES:
        out.append((f"{where}.source", f"unknown source {source!r} (known: {', '.join(sorted(SOURCES))})"))
        return None
    try:
        return SOURCES[source].columns(ctx, app.package, table)
    except Exception as e:  # an unknown table: the database's own message says which
        out.append((f"{where}.table", f"{table!r}: {e}"))
        return None


def _templates(fields: dict[str, str], cols: set[str], out: Problems) -> None:
    for name, template in fields.items():
        out.extend((name, err) for err in template_errors(template, cols))


def _items(app: App, items: list[MenuItem], cols: set[str], where: str, out: Problems) -> None:
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        _templates({f"{at}.delete": item.delete or "", f"{at}.ask_value": item.ask_value}, cols, out)
        if item.choose and item.choose not in SOURCES:
            out.append((f"{at}.choose", f"unknown source {item.choose!r}"))
        if item.action is not None and app.package not in BEHAVIOURS:
            out.append((f"{at}.action", f"{app.package} has no module that runs {item.action!r}"))


def _list(ctx: DataContext, app: App, spec: RecordList, at: str, out: Problems) -> set[str]:
    cols = _columns(ctx, app, spec.source, spec.table, at, out)
    if cols is None:
        return set()
    _templates({f"{at}.title": spec.title, f"{at}.summary": spec.summary}, cols, out)
    if spec.switch and spec.switch not in cols:
        out.append((f"{at}.switch", f"unknown column {spec.switch!r}"))
    _items(app, spec.menu, cols, f"{at}.menu", out)
    params = {name: None for name in re.findall(r":([A-Za-z_]\w*)", spec.where)}
    try:
        SOURCES[spec.source].rows(ctx, app.package, spec, params)
    except Exception as e:  # SQLite names the bad column of `where`, `sort` or `group`
        out.append((f"{at}.where/sort/group", str(e)))
    if spec.compose is not None:
        c = spec.compose
        target = _columns(ctx, app, c.source, c.table, f"{at}.compose", out) or set()
        for col in [c.column, *c.set]:
            if target and col not in target:
                out.append((f"{at}.compose", f"unknown column {col!r} of {c.table!r}"))
        _templates({f"{at}.compose.set.{k}": v for k, v in c.set.items()}, cols, out)
    return cols


def _screen_problems(ctx: DataContext, app: App, sid: str) -> Problems:
    screen, out = app.screens[sid], Problems()
    at = f"screens.{sid}"
    if screen.records is not None:
        cols = _list(ctx, app, screen.records, f"{at}.records", out)
        _templates({f"{at}.title": screen.title}, cols | {"_id"}, out)
    if screen.record is not None:
        r = screen.record
        cols = _columns(ctx, app, r.source, r.table, f"{at}.record", out) or set()
        fields = {f"{at}.record.fields[{i}].value": f.value for i, f in enumerate(r.fields)}
        out.extend(
            (f"{at}.record.fields[{i}].rows", f"unknown column {f.rows!r}")
            for i, f in enumerate(r.fields)
            if f.rows and cols and f.rows not in cols
        )
        _templates({f"{at}.title": screen.title, f"{at}.record.header": r.header, **fields}, cols, out)
        _items(app, r.buttons, cols, f"{at}.record.buttons", out)
    if screen.form is not None:
        f = screen.form
        cols = _columns(ctx, app, f.source, f.table, f"{at}.form", out) or set()
        for i, field in enumerate(f.fields):
            for col in [field.column] if field.column else field.columns:
                if cols and col not in cols:
                    out.append((f"{at}.form.fields[{i}]", f"unknown column {col!r} of {f.table!r}"))
        out.extend((f"{at}.form.set", f"unknown column {k!r}") for k in f.set if cols and k not in cols)
    return out


def check_screens(catalog: Catalog, ctx: DataContext) -> None:
    """Raises PhoneConfigError listing every mistake of every app's record screens, with file and field."""
    lines = []
    for pkg, app in catalog.apps.items():
        for sid in app.screens:
            for field, problem in _screen_problems(ctx, app, sid):
                lines.append(f"{catalog.files.get(pkg, pkg)}: {field}: {problem}")
    if lines:
        raise PhoneConfigError("app screens do not fit their data; fix them:\n  " + "\n  ".join(lines))
