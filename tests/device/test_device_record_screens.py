"""Record screens through the real adb server, with the harness's own gesture commands: add a contact with
the keyboard, delete one from its long-press menu, write a note and read its file back, then reset."""

from __future__ import annotations

from _phones import Node, adb, dump, find, one_phone, reset, screenshot, sh

from agent_eval.device import gestures

BASE = 5694
fleet, serial = one_phone(BASE)


def by_desc(nodes: list[Node], desc: str) -> Node:
    found = [n for n in nodes if n.content_desc == desc]
    assert found, f"no node with content-desc {desc!r}"
    return found[0]


def run(serial: str, command: str) -> None:
    assert adb(serial, "shell", command).returncode == 0, command


def tap(serial: str, node: Node) -> None:
    run(serial, gestures.tap_command(*node.center))


def test_add_a_contact_and_delete_another_through_adb(serial: str) -> None:
    run(serial, "monkey -p com.google.android.contacts 1")
    before = screenshot(serial)
    tap(serial, by_desc(dump(serial), "Create contact"))
    tap(serial, find(dump(serial), "Name"))
    keyboard = screenshot(serial)
    assert before.size == keyboard.size == (1080, 2400)
    assert keyboard.getpixel((540, 2000)) != before.getpixel((540, 2000)), "the keyboard is on screen"
    assert "mInputShown=true" in sh(serial, "dumpsys input_method")
    run(serial, gestures.text_command("Eve O'Neil"))
    tap(serial, find(dump(serial), "Phone"))
    run(serial, gestures.text_command("+1 555 0100"))
    fields = [n for n in dump(serial) if n.cls == "android.widget.EditText"]
    assert [f.text for f in fields] == ["Eve O'Neil", "+1 555 0100", "Email"]
    tap(serial, find(dump(serial), "Save"))
    nodes = dump(serial)
    texts = [n.text for n in nodes]
    assert texts[texts.index("Eve O'Neil") + 1] == "+1 555 0100"
    run(serial, gestures.long_press_command(*find(nodes, "Sam Carter").center))
    tap(serial, find(dump(serial), "Delete"))
    tap(serial, find(dump(serial), "Delete"))
    assert "Sam Carter" not in [n.text for n in dump(serial)]
    reset(serial)
    run(serial, "monkey -p com.google.android.contacts 1")
    texts = [n.text for n in dump(serial)]
    assert "Sam Carter" in texts and "Eve O'Neil" not in texts, "a reset restores the contacts"


def test_a_note_written_on_screen_is_a_file_adb_reads(serial: str) -> None:
    run(serial, "monkey -p net.gsantner.markor 1")
    tap(serial, by_desc(dump(serial), "New note"))
    tap(serial, find(dump(serial), "Title"))
    run(serial, gestures.text_command("Trip plan"))
    tap(serial, find(dump(serial), "Note"))
    run(serial, gestures.text_command("Book the train"))
    run(serial, gestures.key_command("enter"))
    run(serial, gestures.text_command("Pack light"))
    tap(serial, find(dump(serial), "Save"))
    assert sh(serial, "cat '/sdcard/Documents/Markor/Trip plan.md'") == "Book the train\nPack light"
    assert "Trip plan" in [n.text for n in dump(serial)]
    reset(serial)
    assert "Trip plan.md" not in sh(serial, "ls /sdcard/Documents/Markor")
