"""Turns a uiautomator XML dump into Elements: the numbered list an agent sees, and every node for predicates.

Pure parsing, no device access; the driver feeds it what `uiautomator dump` wrote.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace

from agent_eval.errors import DeviceError
from agent_eval.screen.observation import Bounds, Element

_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")


def parse_bounds(text: str) -> Bounds:
    match = _BOUNDS.fullmatch(text.strip())
    if match is None:
        return Bounds(0, 0, 0, 0)
    left, top, right, bottom = (int(g) for g in match.groups())
    return Bounds(left, top, right, bottom)


def _flag(node: ET.Element, name: str, default: bool = False) -> bool:
    value = node.get(name)
    return default if value is None else value == "true"


def _element(node: ET.Element, position: int, parent: int) -> Element:
    return Element(
        index=position,
        cls=node.get("class", ""),
        text=node.get("text", ""),
        content_desc=node.get("content-desc", ""),
        resource_id=node.get("resource-id", ""),
        package=node.get("package", ""),
        bounds=parse_bounds(node.get("bounds", "")),
        checkable=_flag(node, "checkable"),
        checked=_flag(node, "checked"),
        clickable=_flag(node, "clickable"),
        long_clickable=_flag(node, "long-clickable"),
        scrollable=_flag(node, "scrollable"),
        focusable=_flag(node, "focusable"),
        focused=_flag(node, "focused"),
        selected=_flag(node, "selected"),
        enabled=_flag(node, "enabled", default=True),
        password=_flag(node, "password"),
        node=position,
        parent=parent,
    )


def _hierarchy(xml: str) -> ET.Element:
    # Some dumps (e.g. to /dev/tty) carry the "UI hierchary dumped to" line after the XML.
    start = xml.find("<?xml")
    if start < 0:
        start = xml.find("<hierarchy")
    end = xml.rfind("</hierarchy>")
    if start < 0 or end < 0:
        raise DeviceError(f"the UI dump is not uiautomator XML: {xml[:200]!r}")
    try:
        root = ET.fromstring(xml[start : end + len("</hierarchy>")])
    except ET.ParseError as e:
        raise DeviceError(f"the UI dump is malformed XML ({e}): {xml[:200]!r}") from e
    if root.tag != "hierarchy":
        raise DeviceError(f"the UI dump's root is <{root.tag}>, expected <hierarchy>")
    return root


def _all_nodes(root: ET.Element) -> list[Element]:
    nodes: list[Element] = []

    def walk(node: ET.Element, parent: int) -> None:
        position = len(nodes)
        nodes.append(_element(node, position, parent))
        for child in node:
            if child.tag == "node":
                walk(child, position)

    for top in root:
        if top.tag == "node":
            walk(top, -1)
    return nodes


def _is_labelled(element: Element) -> bool:
    return bool(element.text.strip() or element.content_desc.strip())


def _wants_listing(element: Element, has_labelled_descendant: bool) -> bool:
    """Whether the agent should see this node as a numbered element."""
    if element.bounds.width <= 0 or element.bounds.height <= 0:
        return False
    if _is_labelled(element) or element.checkable or element.scrollable:
        return True
    if "EditText" in element.cls:
        return True
    # A clickable row is represented by the labels inside it (tapping a label lands in the row);
    # an unlabelled clickable leaf such as an icon button has nothing else to stand for it.
    return (element.clickable or element.long_clickable) and not has_labelled_descendant


def parse_ui(xml: str) -> tuple[list[Element], list[Element]]:
    """Parse a uiautomator dump into (elements the agent sees, numbered 0..n-1; every node in document order).

    Each listed element keeps `node`, its position in the second list, so predicates and the oracle can
    look at its ancestors. Raises DeviceError when the text is not a uiautomator hierarchy.
    """
    nodes = _all_nodes(_hierarchy(xml))
    labelled_below = [False] * len(nodes)
    for node in reversed(nodes):  # children come after their parent, so one backward pass suffices
        if node.parent >= 0 and (labelled_below[node.node] or _is_labelled(node)):
            labelled_below[node.parent] = True
    listed: list[Element] = []
    for node in nodes:
        if _wants_listing(node, labelled_below[node.node]):
            listed.append(replace(node, index=len(listed)))
    return listed, nodes


def ancestors(nodes: list[Element] | tuple[Element, ...], element: Element) -> list[Element]:
    """The chain of parents of `element` in `nodes` (as from parse_ui), nearest first."""
    chain: list[Element] = []
    parent = element.parent
    while 0 <= parent < len(nodes):
        chain.append(nodes[parent])
        parent = nodes[parent].parent
    return chain


def describe(element: Element) -> str:
    """A compact one-line description of an element, e.g. `3 Switch "Wi-Fi" checked`."""
    kind = element.cls.rsplit(".", 1)[-1] or "View"
    parts = [str(element.index), kind]
    if element.text:
        parts.append(repr(element.text) if '"' in element.text else f'"{element.text}"')
    if element.content_desc and element.content_desc != element.text:
        parts.append(f"desc={element.content_desc!r}")
    if element.resource_id:
        parts.append(f"id={element.resource_id.rsplit('/', 1)[-1]}")
    if element.checkable:
        parts.append("checked" if element.checked else "unchecked")
    parts.extend(flag for flag in element.flags() if flag != "focused")
    return " ".join(parts)
