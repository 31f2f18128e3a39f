"""`input text` types what Android's InputShellCommand types: the next argument only, `%s` as a space, the
shell's quoting, Enter for a newline, and nothing (an exception) for characters the virtual keyboard lacks."""

from __future__ import annotations

import pytest

from virtual_phone.phone import Phone
from virtual_phone.shell.android_commands import decode_text
from virtual_phone.shell.command_line import Shell
from virtual_phone.state.phone_state import Dialog


@pytest.fixture
def phone() -> Phone:
    """Settings' Device name dialog open with an empty field and the keyboard up."""
    p = Phone("emulator-5554")
    p.start_screen("com.android.settings", "about")
    rows = p.catalog.apps["com.android.settings"].screens["about"].rows
    p.state.dialog = Dialog("text", next(i for i, r in enumerate(rows) if r.title == "Device name"), "")
    p.state.keyboard_shown = True
    return p


def typed(phone: Phone, line: str) -> tuple[str, str, int]:
    out, rc = Shell(phone).run(line)
    assert phone.state.dialog is not None
    return phone.state.dialog.draft, out.stderr().decode(), rc


def test_percent_s_is_a_space_and_only_the_next_argument_is_typed(phone: Phone) -> None:
    assert typed(phone, "input text Dana%sLee ignored") == ("Dana Lee", "", 0)
    assert typed(phone, 'input text "\'s%%s 5"') == ("Dana Lee's%  5", "", 0)  # quotes are the shell's


def test_decode_follows_sendtext_escape_loop() -> None:
    assert decode_text("hello%sworld") == "hello world"
    assert decode_text("100%") == "100%"
    assert decode_text("%%s") == "% "
    assert decode_text("a%%%sb") == "a%% b"
    assert decode_text("%S") == "%S"


def test_characters_without_a_key_type_nothing_and_fail_as_android(phone: Phone) -> None:
    draft, err, rc = typed(phone, "input text café")
    assert (draft, rc) == ("", 255)
    assert err == (
        "Exception occurred while executing 'text':\n"
        "java.lang.NullPointerException: Attempt to get length of null array\n"
    )


def test_a_newline_presses_enter_which_saves_the_dialog(phone: Phone) -> None:
    Shell(phone).run("input text 'Pixel\nignored'")
    assert phone.state.dialog is None  # Enter saved the field
    assert phone.get_setting("global", "device_name") == "Pixel"
