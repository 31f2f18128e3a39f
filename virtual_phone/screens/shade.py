"""The quick-settings shade (System UI): pulled down from the top edge or by `cmd statusbar expand-settings`.

Its tiles are data bound to the same settings keys as Settings' switches, so either place changes both.
"""

from __future__ import annotations

from dataclasses import dataclass

from virtual_phone.state.phone_state import PhoneState
from virtual_phone.views.view_tree import Metrics, Rect, Tap, View

SYSTEMUI = "com.android.systemui"


@dataclass(frozen=True)
class Tile:
    label: str
    namespace: str
    key: str
    on_value: str = "1"
    off_value: str = "0"
    on_text: str = "On"
    off_text: str = "Off"


TILES = (
    Tile("Internet", "global", "wifi_on", on_text="AndroidWifi", off_text="Wi-Fi off"),
    Tile("Bluetooth", "global", "bluetooth_on"),
    Tile("Airplane mode", "global", "airplane_mode_on"),
    Tile("Do Not Disturb", "global", "zen_mode"),
    Tile("Flashlight", "device", "flashlight_on"),
    Tile("Auto-rotate", "system", "accelerometer_rotation"),
    Tile("Battery Saver", "global", "low_power"),
    Tile("Dark theme", "secure", "ui_night_mode", on_value="2", off_value="1"),
)
COLUMNS = 2


def tile_on(tile: Tile, st: PhoneState) -> bool:
    return st.shown(tile.namespace, tile.key) not in (None, tile.off_value, "0")


def toggle(tile: Tile, st: PhoneState) -> None:
    """What tapping a tile does: flips its key (a tile a linked setting forces does nothing)."""
    if st.forced(tile.namespace, tile.key):
        return
    st.put(tile.namespace, tile.key, tile.off_value if tile_on(tile, st) else tile.on_value)


def panel_rect(m: Metrics) -> Rect:
    rows = (len(TILES) + COLUMNS - 1) // COLUMNS
    return (0, 0, m.w, m.status_h + m.dp(16) + rows * m.dp(80) + m.dp(40))


def _tile_view(m: Metrics, i: int, tile: Tile, st: PhoneState) -> View:
    col_w = (m.w - m.dp(24)) // COLUMNS
    x0 = m.dp(16) + (i % COLUMNS) * col_w
    y0 = m.status_h + m.dp(16) + (i // COLUMNS) * m.dp(80)
    rect = (x0, y0, x0 + col_w - m.dp(8), y0 + m.dp(72))
    on = tile_on(tile, st)
    enabled = not st.forced(tile.namespace, tile.key)
    label = (rect[0] + m.dp(56), rect[1] + m.dp(10), rect[2] - m.dp(8), rect[1] + m.dp(36))
    state = (label[0], label[3], label[2], rect[3] - m.dp(10))
    return View(
        cls="android.widget.Switch",
        bounds=rect,
        package=SYSTEMUI,
        paint="tile",
        content_desc=tile.label,
        clickable=True,
        focusable=True,
        checkable=True,
        checked=on,
        enabled=enabled,
        tap=Tap("tile", i),
        children=[
            View(
                cls="android.widget.TextView",
                bounds=label,
                package=SYSTEMUI,
                paint="tile_label",
                text=tile.label,
                resource_id=f"{SYSTEMUI}:id/tile_label",
                checked=on,
                enabled=enabled,
            ),
            View(
                cls="android.widget.TextView",
                bounds=state,
                package=SYSTEMUI,
                paint="tile_state",
                text=tile.on_text if on else tile.off_text,
                resource_id=f"{SYSTEMUI}:id/app_label",
                checked=on,
                enabled=enabled,
            ),
        ],
    )


def shade_window(m: Metrics, st: PhoneState) -> View:
    """The shade's window: the quick-settings panel with one tile per entry of TILES."""
    panel = panel_rect(m)
    tiles = [_tile_view(m, i, t, st) for i, t in enumerate(TILES)]
    qs = View(
        cls="android.view.ViewGroup",
        bounds=(0, m.status_h, m.w, panel[3] - m.dp(40)),
        package=SYSTEMUI,
        resource_id=f"{SYSTEMUI}:id/quick_settings_panel",
        children=tiles,
    )
    return View(
        cls="android.widget.FrameLayout",
        bounds=panel,
        package=SYSTEMUI,
        paint="shade",
        resource_id=f"{SYSTEMUI}:id/notification_panel",
        children=[qs],
    )
