"""parse_ui on literal uiautomator dumps: which nodes the agent sees, their fields, and malformed input."""

from __future__ import annotations

import pytest
from _ui_dumps import SCREEN

from agent_eval.errors import DeviceError
from agent_eval.screen.uitree import ancestors, describe, parse_bounds, parse_ui


def test_lists_labels_switches_scrollables_and_unlabelled_buttons_but_not_rows_or_containers() -> None:
    elements, nodes = parse_ui(SCREEN)
    assert [describe(e) for e in elements] == [
        "0 ImageButton desc='Navigate up'",
        "1 ImageView",
        "2 RecyclerView id=recycler_view scrollable",
        '3 TextView "Wi-Fi" id=title',
        "4 Switch id=switch_widget checked",
        '5 TextView "AndroidWifi"',
        '6 TextView "Connected"',
    ]
    assert [e.index for e in elements] == list(range(7))
    assert len(nodes) == 11  # every node, the invisible one included
    assert all(n.index == position == n.node for position, n in enumerate(nodes))


def test_fields_and_tree_links_survive_parsing() -> None:
    elements, nodes = parse_ui(SCREEN)
    switch = elements[4]
    assert switch.cls == "android.widget.Switch"
    assert switch.checkable and switch.checked and not switch.clickable
    assert switch.bounds.center == (960, 480)
    assert switch.package == "com.android.settings"
    row = nodes[switch.parent]
    assert row.cls == "android.widget.LinearLayout" and row.clickable
    assert [a.cls.rsplit(".", 1)[-1] for a in ancestors(nodes, switch)] == [
        "LinearLayout",
        "RecyclerView",
        "FrameLayout",
    ]
    assert nodes[0].parent == -1


def test_dump_to_tty_with_trailing_status_line_parses() -> None:
    elements, _ = parse_ui(SCREEN + "UI hierchary dumped to: /dev/tty\n")
    assert len(elements) == 7


def test_naf_attribute_and_missing_attributes_are_tolerated() -> None:
    xml = (
        '<hierarchy rotation="0"><node NAF="true" index="0" class="android.widget.ImageView" '
        'clickable="true" bounds="[10,10][50,50]" /></hierarchy>'
    )
    elements, _ = parse_ui(xml)
    assert len(elements) == 1 and elements[0].clickable and elements[0].enabled
    assert elements[0].text == "" and elements[0].resource_id == ""


@pytest.mark.parametrize(
    "bad",
    ["", "ERROR: could not get idle state.", "<?xml version='1.0' ?><hierarchy><node></hierarchy>"],
)
def test_garbage_is_a_device_error(bad: str) -> None:
    with pytest.raises(DeviceError):
        parse_ui(bad)


def test_bounds_parsing() -> None:
    assert parse_bounds("[0,63][1080,2337]").height == 2274
    assert parse_bounds("nonsense").width == 0
