"""The shell commands actions become: text escaping, key codes, swipe geometry, app label lookup."""

from __future__ import annotations

import shlex

from agent_eval.device import gestures
from agent_eval.screen.observation import Bounds


def test_text_escapes_spaces_as_percent_s_and_quotes_for_the_shell() -> None:
    cmd = gestures.text_command("it's a 'test' & $HOME")
    words = shlex.split(cmd)
    assert words[:2] == ["input", "text"]
    assert words[2] == "it's%sa%s'test'%s&%s$HOME"
    assert len(words) == 3


def test_only_printable_ascii_is_typable() -> None:
    assert gestures.untypable("Pixel 8 (work) #2 ~ 'ok'") is None
    assert gestures.untypable("café") == "é"
    assert gestures.untypable("📡 Cursor") == "📡"
    assert gestures.untypable("two\nlines\tand a tab") is None  # Enter and Tab have keys


def test_keys_map_to_android_keycodes() -> None:
    assert gestures.key_command("back") == "input keyevent KEYCODE_BACK"
    assert gestures.key_command("home") == "input keyevent KEYCODE_HOME"
    assert gestures.key_command("enter") == "input keyevent KEYCODE_ENTER"


def test_scroll_down_moves_the_finger_up_within_the_area() -> None:
    area = Bounds(0, 200, 1080, 2200)
    (x0, y0), (x1, y1) = gestures.scroll_points("down", area)
    assert x0 == x1 == 540 and y0 > y1
    assert 200 < y1 < y0 < 2200
    assert gestures.swipe_points("up", area) == ((x0, y0), (x1, y1))
    (lx0, _), (lx1, _) = gestures.scroll_points("right", area)
    assert lx0 > lx1


def test_text_fields_are_recognised_by_class() -> None:
    assert gestures.is_text_field("android.widget.EditText")
    assert gestures.is_text_field("android.widget.AutoCompleteTextView")
    assert not gestures.is_text_field("android.widget.TextView")


def test_clearing_a_field_is_one_input_run() -> None:
    words = gestures.clear_field_command(3).split()
    assert words == ["input", "keyevent", "KEYCODE_MOVE_END", "KEYCODE_DEL", "KEYCODE_DEL", "KEYCODE_DEL"]


def test_long_press_is_a_stationary_swipe() -> None:
    assert gestures.long_press_command(10, 20) == f"input swipe 10 20 10 20 {gestures.LONG_PRESS_MS}"


def test_app_labels_resolve_to_installed_packages() -> None:
    installed = [
        "com.android.settings",
        "com.google.android.deskclock",
        "com.android.chrome",
        "org.example.notes",
    ]
    assert gestures.package_for_label("Settings", installed) == "com.android.settings"
    assert gestures.package_for_label("clock", installed) == "com.google.android.deskclock"
    assert gestures.package_for_label("Notes", installed) == "org.example.notes"
    assert gestures.package_for_label("Calculator", installed) is None
    assert gestures.looks_like_package("com.android.settings")
    assert not gestures.looks_like_package("Settings")
    assert not gestures.looks_like_package("Dr. Who")
