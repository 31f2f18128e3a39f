"""Settings that move together (airplane mode → radios, Battery Saver → dark theme) and the quick-settings
shade, driven through the real adb server: linked keys, switches, and the tiles as drawn and as dumped."""

from __future__ import annotations

from _phones import Node, adb, dump, find, one_phone, row_of, screenshot, sh, tap

BASE = 6480  # clear of test_phone_fleet.py (5660..5681)
fleet, serial = one_phone(BASE)
SYSTEMUI = "com.android.systemui"
LIGHT_BG, LIGHT_ACCENT = (0xF8, 0xF9, 0xFC), (0x0B, 0x57, 0xD0)


def get(serial: str, namespace: str, key: str) -> str:
    return sh(serial, f"settings get {namespace} {key}").strip()


def switch_in_row(nodes: list[Node], title: str) -> Node:
    """The switch on the same row as `title` (disabled rows are not clickable, so go by position)."""
    y = find(nodes, title).center[1]
    switches = [n for n in nodes if n.cls == "android.widget.Switch" and abs(n.center[1] - y) < 80]
    assert len(switches) == 1, title
    return switches[0]


def tiles(serial: str) -> dict[str, Node]:
    """The shade's tiles by label, from a uiautomator dump (the shade must be open)."""
    nodes = dump(serial)
    return {n.content_desc: n for n in nodes if n.cls == "android.widget.Switch" and n.content_desc}


def tile_fill(serial: str, tile: Node) -> tuple[int, int, int]:
    """The tile's background colour, sampled inside it between its icon and its label."""
    x0, y0, _, _ = tile.bounds
    pixel = screenshot(serial).getpixel((x0 + 120, y0 + 16))
    assert isinstance(pixel, tuple)
    return (pixel[0], pixel[1], pixel[2])


def test_airplane_mode_turns_radios_off_and_restores_them(serial: str) -> None:
    sh(serial, "svc bluetooth enable")
    sh(serial, "am start -a android.settings.WIRELESS_SETTINGS")
    tap(serial, row_of(dump(serial), "Airplane mode"))
    assert get(serial, "global", "airplane_mode_on") == "1"
    assert (get(serial, "global", "wifi_on"), get(serial, "global", "bluetooth_on")) == ("0", "0")
    assert get(serial, "global", "mobile_data") == "1"  # the setting stays; the radio is off
    sh(serial, "am start -a android.settings.WIFI_SETTINGS")
    nodes = dump(serial)
    assert not switch_in_row(nodes, "Wi-Fi").checked
    assert not switch_in_row(nodes, "T-Mobile").checked
    assert not find(nodes, "T-Mobile").enabled
    sh(serial, "cmd connectivity airplane-mode disable")
    assert (get(serial, "global", "wifi_on"), get(serial, "global", "bluetooth_on")) == ("1", "1")
    nodes = dump(serial)
    assert switch_in_row(nodes, "Wi-Fi").checked and switch_in_row(nodes, "T-Mobile").checked


def test_battery_saver_forces_dark_theme_while_on(serial: str) -> None:
    sh(serial, "am start -a android.settings.DISPLAY_SETTINGS")
    assert screenshot(serial).getpixel((5, 400)) == LIGHT_BG
    sh(serial, "settings put global low_power 1")
    assert get(serial, "secure", "ui_night_mode") == "1"  # the user's choice is kept
    assert screenshot(serial).getpixel((5, 400)) != LIGHT_BG
    dark = switch_in_row(dump(serial), "Dark theme")
    assert dark.checked
    sh(serial, "settings put global low_power 0")
    assert not switch_in_row(dump(serial), "Dark theme").checked
    assert screenshot(serial).getpixel((5, 400)) == LIGHT_BG


def test_shade_opens_from_the_top_edge_and_its_tiles_are_the_settings(serial: str) -> None:
    assert adb(serial, "shell", "input swipe 540 2 540 1400 200").returncode == 0
    shown = tiles(serial)
    assert list(shown) == [
        "Internet",
        "Bluetooth",
        "Airplane mode",
        "Do Not Disturb",
        "Flashlight",
        "Auto-rotate",
        "Battery Saver",
        "Dark theme",
    ]
    assert shown["Internet"].checked and not shown["Bluetooth"].checked
    assert tile_fill(serial, shown["Internet"]) != tile_fill(serial, shown["Bluetooth"])
    off_fill = tile_fill(serial, shown["Bluetooth"])
    tap(serial, shown["Bluetooth"])
    assert get(serial, "global", "bluetooth_on") == "1"
    after = tiles(serial)
    assert after["Bluetooth"].checked and tile_fill(serial, after["Bluetooth"]) != off_fill
    assert tile_fill(serial, after["Bluetooth"]) == tile_fill(serial, after["Internet"])
    # Airplane mode from the shade: the linked radios' tiles follow.
    tap(serial, after["Airplane mode"])
    linked = tiles(serial)
    assert linked["Airplane mode"].checked
    assert not linked["Internet"].checked and not linked["Bluetooth"].checked
    # A tap below the panel closes the shade; the app's window is dumped again.
    tap(serial, Node("", "", "", "", False, True, False, (0, 2000, 1080, 2100)))
    assert all(n.resource_id != f"{SYSTEMUI}:id/quick_settings_panel" for n in dump(serial))


def test_settings_screen_and_shade_agree_both_ways(serial: str) -> None:
    sh(serial, "am start -a android.settings.WIFI_SETTINGS")
    tap(serial, switch_in_row(dump(serial), "Wi-Fi"))  # Wi-Fi off from Internet
    assert get(serial, "global", "wifi_on") == "0"
    assert sh(serial, "cmd statusbar expand-settings") == ""
    internet = tiles(serial)["Internet"]
    assert not internet.checked
    assert find(dump(serial), "Wi-Fi off")
    tap(serial, internet)
    assert get(serial, "global", "wifi_on") == "1"
    sh(serial, "cmd statusbar collapse")
    assert switch_in_row(dump(serial), "Wi-Fi").checked
    # Battery Saver from the shade forces the Dark theme tile on, and that tile cannot be toggled meanwhile.
    sh(serial, "cmd statusbar expand-settings")
    tap(serial, tiles(serial)["Battery Saver"])
    dark = tiles(serial)["Dark theme"]
    assert dark.checked
    tap(serial, dark)
    assert tiles(serial)["Dark theme"].checked and get(serial, "secure", "ui_night_mode") == "1"
    adb(serial, "shell", "input keyevent KEYCODE_BACK")
    assert all(n.resource_id != f"{SYSTEMUI}:id/quick_settings_panel" for n in dump(serial))
