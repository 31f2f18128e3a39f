"""The virtual phone's screen: real pixels that match the uiautomator dump, taps that navigate, switches bound
to settings keys both ways, scrolling, dialogs, the text field and keyboard, and `wm size`."""

from __future__ import annotations

import re

from _phones import Node, adb, device, dump, find, one_phone, row_of, screenshot, sh, tap
from PIL import Image, ImageChops

BASE = 5610
SERIAL = f"emulator-{BASE}"
# `.Settings` is an activity-alias since Android 12; the activity that runs is the homepage.
HOMEPAGE = "com.android.settings/com.android.settings.homepage.SettingsHomepageActivity"

fleet, serial = one_phone(BASE)


def colours(img: Image.Image, box: tuple[int, int, int, int]) -> int:
    return len(img.crop(box).getcolors(maxcolors=1 << 16) or [])


def focus(serial: str) -> str:
    line = next(ln for ln in sh(serial, "dumpsys window").splitlines() if "mCurrentFocus" in ln)
    return line.split()[-1].rstrip("}")


def open_settings(serial: str) -> list[Node]:
    tap(serial, find(dump(serial), "Settings"))
    return dump(serial)


def test_screencap_is_a_png_of_the_wm_size(serial: str) -> None:
    assert sh(serial, "wm size") == "Physical size: 1080x2400\n"
    img = screenshot(serial)
    assert img.size == (1080, 2400)
    assert colours(img, (0, 0, 1080, 2400)) > 10  # a real picture, not a blank frame


def test_wm_size_changes_the_screen_and_the_dump(serial: str) -> None:
    try:
        assert adb(serial, "shell", "wm size 720x1600").returncode == 0
        assert sh(serial, "wm size") == "Physical size: 1080x2400\nOverride size: 720x1600\n"
        assert screenshot(serial).size == (720, 1600)
        root = dump(serial)[0]
        assert root.bounds == (0, 0, 720, 1600)
        assert device(serial).window_size() == (720, 1600)
    finally:
        adb(serial, "shell", "wm size reset")
    assert screenshot(serial).size == (1080, 2400)


def test_dump_bounds_hit_the_rows_drawn_there(serial: str) -> None:
    nodes = open_settings(serial)
    img = screenshot(serial)
    titles = [n for n in nodes if n.resource_id == "android:id/title"]
    assert len(titles) >= 8
    for n in titles:
        # Text is drawn inside the title's bounds...
        assert colours(img, n.bounds) > 2, n.text
        # ...and the row's empty right end (no widget in main list rows) is plain background.
        row = row_of(nodes, n.text)
        assert (
            colours(img, (row.bounds[2] - 60, row.bounds[1] + 4, row.bounds[2] - 8, row.bounds[3] - 4)) == 1
        )
    # A node's bounds lie on the screen and inside its parent list.
    lst = next(n for n in nodes if n.scrollable)
    for n in titles:
        assert lst.bounds[1] <= n.bounds[1] and n.bounds[3] <= lst.bounds[3]


def test_tapping_a_row_centre_opens_that_screen_and_back_returns(serial: str) -> None:
    assert focus(serial).endswith("NexusLauncherActivity")
    nodes = open_settings(serial)
    assert focus(serial) == HOMEPAGE
    tap(serial, row_of(nodes, "Network & internet"))
    nodes = dump(serial)
    assert focus(serial).endswith("Settings$NetworkDashboardActivity")
    assert find(nodes, "Airplane mode")
    assert device(serial).app_current().package == "com.android.settings"
    adb(serial, "shell", "input keyevent KEYCODE_BACK")
    assert focus(serial) == HOMEPAGE
    adb(serial, "shell", "input keyevent 4")
    assert focus(serial).endswith("NexusLauncherActivity")


def test_navigate_up_button_and_home_key(serial: str) -> None:
    adb(serial, "shell", "am start -a android.settings.DISPLAY_SETTINGS")
    up = next(n for n in dump(serial) if n.content_desc == "Navigate up")
    tap(serial, up)
    assert "Settings$DisplaySettingsActivity" not in focus(serial)
    adb(serial, "shell", "am start -a android.settings.DISPLAY_SETTINGS")
    adb(serial, "shell", "input keyevent KEYCODE_HOME")
    assert focus(serial).endswith("NexusLauncherActivity")
    # Settings resumes where it was left, as its task is still there.
    tap(serial, find(dump(serial), "Settings"))
    assert focus(serial).endswith("Settings$DisplaySettingsActivity")


def wifi_switch(serial: str) -> Node:
    nodes = dump(serial)
    row = row_of(nodes, "Wi-Fi")
    return next(
        n for n in nodes if n.cls == "android.widget.Switch" and row.bounds[1] <= n.bounds[1] < row.bounds[3]
    )


def test_wifi_switch_and_settings_agree_both_ways(serial: str) -> None:
    adb(serial, "shell", "am start -a android.settings.WIFI_SETTINGS")
    before = wifi_switch(serial)
    assert before.checked
    assert sh(serial, "settings get global wifi_on") == "1\n"
    on_pixels = screenshot(serial).crop(before.bounds)
    assert find(dump(serial), "AndroidWifi")

    tap(serial, row_of(dump(serial), "Wi-Fi"))
    assert sh(serial, "settings get global wifi_on") == "0\n"
    off = wifi_switch(serial)
    assert not off.checked
    off_pixels = screenshot(serial).crop(off.bounds)
    assert ImageChops.difference(on_pixels, off_pixels).getbbox() is not None
    assert "AndroidWifi" not in [n.text for n in dump(serial)]
    assert sh(serial, "cmd wifi status").startswith("Wifi is disabled")

    adb(serial, "shell", "settings put global wifi_on 1")
    again = wifi_switch(serial)
    assert again.checked
    assert ImageChops.difference(on_pixels, screenshot(serial).crop(again.bounds)).getbbox() is None
    adb(serial, "shell", "svc wifi disable")
    assert not wifi_switch(serial).checked


def test_main_list_scrolls_and_off_screen_rows_are_absent(serial: str) -> None:
    nodes = open_settings(serial)
    assert "About phone" not in [n.text for n in nodes]
    first = find(nodes, "Network & internet")
    lst = next(n for n in nodes if n.scrollable)
    x = (lst.bounds[0] + lst.bounds[2]) // 2
    for _ in range(3):
        adb(serial, "shell", f"input swipe {x} {lst.bounds[3] - 50} {x} {lst.bounds[1] + 50} 300")
    nodes = dump(serial)
    about = row_of(nodes, "About phone")
    assert "Network & internet" not in [n.text for n in nodes]  # scrolled off the top: gone from the dump
    assert lst.bounds[1] <= about.bounds[1] and about.bounds[3] <= lst.bounds[3]
    # Scrolling back down brings the first row back where it was.
    for _ in range(3):
        adb(serial, "shell", f"input swipe {x} {lst.bounds[1] + 50} {x} {lst.bounds[3] - 50} 300")
    assert find(dump(serial), "Network & internet") == first
    for _ in range(3):
        adb(serial, "shell", f"input swipe {x} {lst.bounds[3] - 50} {x} {lst.bounds[1] + 50} 300")
    tap(serial, about)
    assert focus(serial).endswith("Settings$MyDeviceInfoActivity")


def test_choice_dialog_sets_screen_timeout(serial: str) -> None:
    adb(serial, "shell", "am start -a android.settings.DISPLAY_SETTINGS")
    tap(serial, row_of(dump(serial), "Screen timeout"))
    nodes = dump(serial)
    assert find(nodes, "Screen timeout").resource_id == "android:id/alertTitle"
    assert find(nodes, "1 minute").checked
    assert focus(serial).endswith("Settings$DisplaySettingsActivity")
    tap(serial, find(nodes, "5 minutes"))
    assert sh(serial, "settings get system screen_off_timeout") == "300000\n"
    nodes = dump(serial)
    assert find(nodes, "5 minutes").resource_id == "android:id/summary"
    # Back closes a dialog without choosing.
    tap(serial, row_of(nodes, "Screen timeout"))
    adb(serial, "shell", "input keyevent KEYCODE_BACK")
    assert find(dump(serial), "Dark theme")
    assert sh(serial, "settings get system screen_off_timeout") == "300000\n"


def test_text_field_with_keyboard_edits_device_name(serial: str) -> None:
    adb(serial, "shell", "am start -a android.settings.DEVICE_INFO_SETTINGS")
    before = screenshot(serial)
    tap(serial, row_of(dump(serial), "Device name"))
    field = next(n for n in dump(serial) if n.cls == "android.widget.EditText")
    assert field.text == "sdk_gphone64_x86_64"
    assert "mInputShown=true" in sh(serial, "dumpsys input_method")
    # The keyboard is drawn over the bottom of the screen.
    bottom = (0, 1700, 1080, 2300)
    assert ImageChops.difference(before.crop(bottom), screenshot(serial).crop(bottom)).getbbox() is not None
    for _ in range(len(field.text)):
        adb(serial, "shell", "input keyevent KEYCODE_DEL")
    adb(serial, "shell", "input text Work%sPhone")
    assert next(n for n in dump(serial) if n.cls == "android.widget.EditText").text == "Work Phone"
    tap(serial, find(dump(serial), "OK"))
    assert sh(serial, "settings get global device_name") == "Work Phone\n"
    assert "mInputShown=false" in sh(serial, "dumpsys input_method")
    assert find(dump(serial), "Work Phone").resource_id == "android:id/summary"


def test_dark_theme_switch_darkens_the_screen(serial: str) -> None:
    adb(serial, "shell", "am start -a android.settings.DISPLAY_SETTINGS")
    light = screenshot(serial).getpixel((5, 1000))
    tap(serial, row_of(dump(serial), "Dark theme"))
    assert sh(serial, "settings get secure ui_night_mode") == "2\n"
    dark = screenshot(serial).getpixel((5, 1000))
    assert isinstance(light, tuple) and isinstance(dark, tuple)
    assert sum(dark) < sum(light) / 2


def test_brightness_slider_follows_taps(serial: str) -> None:
    adb(serial, "shell", "am start -a android.settings.DISPLAY_SETTINGS")
    bar = next(n for n in dump(serial) if n.cls == "android.widget.SeekBar")
    adb(serial, "shell", f"input tap {bar.bounds[2] - 1} {bar.center[1]}")
    assert sh(serial, "settings get system screen_brightness") == "255\n"
    adb(serial, "shell", f"input tap {bar.bounds[0]} {bar.center[1]}")
    assert sh(serial, "settings get system screen_brightness") == "0\n"


def test_nodes_without_label_are_marked_naf(serial: str) -> None:
    adb(serial, "shell", "am start -a android.settings.DISPLAY_SETTINGS")
    xml = device(serial).dump_hierarchy()
    assert xml.startswith(
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
    )
    assert re.search(r'<node NAF="true" index="\d+" text="" resource-id="android:id/seekbar"', xml)
    assert 'NAF="true"' not in xml.replace(re.search(r'<node NAF="true"[^>]*seekbar[^>]*>', xml).group(0), "")
    assert "\n" not in xml


def test_settings_search_finds_a_row_and_opens_its_screen(serial: str) -> None:
    nodes = open_settings(serial)
    search_bar = next(n for n in nodes if n.content_desc == "Search settings")
    tap(serial, search_bar)
    assert "mInputShown=true" in sh(serial, "dumpsys input_method")
    adb(serial, "shell", "input text dark")
    nodes = dump(serial)
    field = next(n for n in nodes if n.cls == "android.widget.EditText")
    assert field.text == "dark"
    result = row_of(nodes, "Dark theme")
    assert find(nodes, "Display").bounds[1] >= result.bounds[1]  # its path is the summary
    tap(serial, result)
    assert focus(serial).endswith("Settings$DisplaySettingsActivity")
    assert "mInputShown=false" in sh(serial, "dumpsys input_method")
    # Back returns to the results, still holding the query.
    adb(serial, "shell", "input keyevent KEYCODE_BACK")
    assert next(n for n in dump(serial) if n.cls == "android.widget.EditText").text == "dark"
    adb(serial, "shell", "input keyevent KEYCODE_DEL")
    adb(serial, "shell", "input keyevent KEYCODE_DEL")
    adb(serial, "shell", "input keyevent KEYCODE_DEL")
    adb(serial, "shell", "input keyevent KEYCODE_DEL")
    assert [n for n in dump(serial) if n.resource_id == "android:id/title"] == []
