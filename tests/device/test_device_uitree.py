"""parse_ui on literal uiautomator dumps: which nodes the agent sees, their fields, and malformed input."""

from __future__ import annotations

import pytest

from agent_eval.errors import DeviceError
from agent_eval.screen.uitree import ancestors, describe, parse_bounds, parse_ui

_ATTRS = (
    'checkable="{checkable}" checked="{checked}" clickable="{clickable}" enabled="true" focusable="false" '
    'focused="false" scrollable="{scrollable}" long-clickable="false" password="false" selected="false"'
)


def node(
    cls: str, bounds: str, text: str = "", rid: str = "", desc: str = "", children: str = "", **flags: bool
) -> str:
    attrs = _ATTRS.format(
        checkable=str(flags.get("checkable", False)).lower(),
        checked=str(flags.get("checked", False)).lower(),
        clickable=str(flags.get("clickable", False)).lower(),
        scrollable=str(flags.get("scrollable", False)).lower(),
    )
    head = (
        f'<node index="0" text="{text}" resource-id="{rid}" class="{cls}" package="com.android.settings" '
        f'content-desc="{desc}" {attrs} bounds="{bounds}"'
    )
    return f"{head}>{children}</node>" if children else f"{head} />"


# The Internet screen of Android 14 Settings, trimmed: a toolbar with a back button, a list whose Wi-Fi row
# holds a title and a switch, and a row of a network.
WIFI_ROW = node(
    "android.widget.LinearLayout",
    "[0,400][1080,560]",
    clickable=True,
    children=node("android.widget.TextView", "[60,440][700,520]", text="Wi-Fi", rid="android:id/title")
    + node(
        "android.widget.Switch",
        "[900,440][1020,520]",
        rid="com.android.settings:id/switch_widget",
        checkable=True,
        checked=True,
    ),
)
NETWORK_ROW = node(
    "android.widget.LinearLayout",
    "[0,560][1080,720]",
    clickable=True,
    children=node("android.widget.TextView", "[60,580][700,640]", text="AndroidWifi")
    + node("android.widget.TextView", "[60,640][700,700]", text="Connected"),
)
SCREEN = (
    "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
    + node(
        "android.widget.FrameLayout",
        "[0,0][1080,2400]",
        children=node("android.widget.ImageButton", "[0,100][150,250]", desc="Navigate up", clickable=True)
        + node("android.widget.ImageView", "[200,100][300,250]", clickable=True)
        + node(
            "androidx.recyclerview.widget.RecyclerView",
            "[0,300][1080,2400]",
            rid="com.android.settings:id/recycler_view",
            scrollable=True,
            children=WIFI_ROW + NETWORK_ROW,
        )
        + node("android.view.View", "[0,0][0,0]", text="invisible"),
    )
    + "</hierarchy>"
)


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
