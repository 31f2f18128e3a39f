"""What `uiautomator dump` writes: the XML of the focused window, from the same view tree the renderer draws.

Only visible nodes are written; a clickable node with no text anywhere in it is marked NAF="true".
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from virtual_phone.views.view_tree import Layout, View

_ENTITIES = {'"': "&quot;", "\n": "&#10;", "\r": "&#13;"}


def _has_label(v: View) -> bool:
    return bool(v.text or v.hint or v.content_desc) or any(_has_label(c) for c in v.children)


def _b(flag: bool) -> str:
    return "true" if flag else "false"


def _node(v: View, index: int, out: list[str]) -> None:
    x0, y0, x1, y1 = v.bounds
    naf = 'NAF="true" ' if v.clickable and not _has_label(v) else ""
    # An empty text field reports its hint as its text (TextView.getTextForAccessibility).
    text = escape(v.text or v.hint, _ENTITIES)
    out.append(
        f'<node {naf}index="{index}" text="{text}" resource-id="{v.resource_id}" '
        f'class="{v.cls}" package="{v.package}" content-desc="{escape(v.content_desc, _ENTITIES)}" '
        f'checkable="{_b(v.checkable)}" checked="{_b(v.checked)}" clickable="{_b(v.clickable)}" '
        f'enabled="{_b(v.enabled)}" focusable="{_b(v.focusable)}" focused="{_b(v.focused)}" '
        f'scrollable="{_b(v.scrollable)}" long-clickable="{_b(v.long_tap is not None)}" password="false" '
        f'selected="false" '
        f'bounds="[{x0},{y0}][{x1},{y1}]"'
    )
    if not v.children:
        out.append(" />")
        return
    out.append(">")
    for i, c in enumerate(v.children):
        _node(c, i, out)
    out.append("</node>")


def dump_xml(layout: Layout) -> str:
    """The one-line XML `uiautomator dump` writes (no trailing newline), for the window that has focus."""
    out = ["<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"]
    focused = layout.shade or layout.dialog or layout.window
    _node(focused, 0, out)
    out.append("</hierarchy>")
    return "".join(out)
