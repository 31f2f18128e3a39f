"""Literal uiautomator dumps for the tests of what the harness reads from a screen: a node builder and the
Internet screen of Android 14 Settings, trimmed (used by the UI-tree and the element-matching tests)."""

from __future__ import annotations

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
