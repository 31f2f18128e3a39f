"""Translates agent actions into Android `input` / `am` shell commands, with the escaping they need.

Pure functions: the driver runs the commands; tests check them without a device.
"""

from __future__ import annotations

import shlex

from agent_eval.action import Direction, Key
from agent_eval.screen.observation import Bounds

KEYCODES: dict[Key, str] = {"back": "KEYCODE_BACK", "home": "KEYCODE_HOME", "enter": "KEYCODE_ENTER"}

LONG_PRESS_MS = 800
SWIPE_MS = 300

# Labels whose package name does not contain the label (the common AOSP / Google apps).
KNOWN_APPS: dict[str, str] = {
    "settings": "com.android.settings",
    "chrome": "com.android.chrome",
    "clock": "com.google.android.deskclock",
    "contacts": "com.google.android.contacts",
    "phone": "com.google.android.dialer",
    "messages": "com.google.android.apps.messaging",
    "camera": "com.android.camera2",
    "files": "com.google.android.documentsui",
    "calendar": "com.google.android.calendar",
    "photos": "com.google.android.apps.photos",
    "gmail": "com.google.android.gm",
    "maps": "com.google.android.apps.maps",
    "play store": "com.android.vending",
}


def key_command(key: Key) -> str:
    return f"input keyevent {KEYCODES[key]}"


def tap_command(x: int, y: int) -> str:
    return f"input tap {x} {y}"


def long_press_command(x: int, y: int) -> str:
    # A swipe that does not move is how `input` expresses a long press on every API level.
    return f"input swipe {x} {y} {x} {y} {LONG_PRESS_MS}"


def untypable(text: str) -> str | None:
    """The first character `input text` cannot type, if any: it types through the virtual keyboard's key map,
    which has keys for printable ASCII, newline (Enter) and tab only; for anything else (é, an emoji) Android
    fails on a null event array and types nothing, so the action is the agent's mistake, not the device's."""
    return next((ch for ch in text if not (" " <= ch <= "~" or ch in "\n\t")), None)


def text_command(text: str) -> str:
    """`input text` with spaces as %s (it splits on them otherwise) and the rest shell-quoted."""
    return "input text " + shlex.quote(text.replace(" ", "%s"))


def is_text_field(cls: str) -> bool:
    """Whether a view class holds editable text (EditText and its subclasses such as AutoCompleteTextView)."""
    return any(kind in cls for kind in ("EditText", "AutoCompleteTextView", "TextField"))


def clear_field_command(length: int) -> str:
    """Moves to the end of the focused field and deletes `length` characters, in one `input` run (each run
    starts a Java process on a real device, so one per key would take seconds)."""
    return " ".join(["input keyevent KEYCODE_MOVE_END", *(["KEYCODE_DEL"] * length)])


def swipe_command(start: tuple[int, int], end: tuple[int, int], duration_ms: int = SWIPE_MS) -> str:
    return f"input swipe {start[0]} {start[1]} {end[0]} {end[1]} {duration_ms}"


def swipe_points(direction: Direction, area: Bounds) -> tuple[tuple[int, int], tuple[int, int]]:
    """Finger start and end for a swipe *moving* in `direction` across the middle of `area`.

    Stays within the central 60% so it starts on the content, not on an edge gesture zone.
    """
    cx, cy = area.center
    dx, dy = int(area.width * 0.3), int(area.height * 0.3)
    moves = {
        "up": ((cx, cy + dy), (cx, cy - dy)),
        "down": ((cx, cy - dy), (cx, cy + dy)),
        "left": ((cx + dx, cy), (cx - dx, cy)),
        "right": ((cx - dx, cy), (cx + dx, cy)),
    }
    return moves[direction]


def scroll_points(direction: Direction, area: Bounds) -> tuple[tuple[int, int], tuple[int, int]]:
    """A scroll names where the view goes (scroll down = reveal what is below): the finger moves opposite."""
    opposite: dict[Direction, Direction] = {"up": "down", "down": "up", "left": "right", "right": "left"}
    return swipe_points(opposite[direction], area)


def looks_like_package(app: str) -> bool:
    parts = app.split(".")
    return len(parts) >= 2 and all(p and (p[0].isalpha() or p[0] == "_") for p in parts) and " " not in app


def launch_command(package: str) -> str:
    # Without -c, monkey picks the package's LAUNCHER (or MONKEY) activity, like a tap on its icon.
    return f"monkey -p {shlex.quote(package)} 1"


def package_for_label(label: str, installed: list[str]) -> str | None:
    """The installed package an app label most plausibly names, or None.

    Tries the known AOSP/Google labels, then a package whose last part equals the label squashed
    ("Deskclock" → *.deskclock), then a unique package containing it.
    """
    wanted = label.strip().lower()
    known = KNOWN_APPS.get(wanted)
    if known is not None and known in installed:
        return known
    squashed = "".join(ch for ch in wanted if ch.isalnum())
    if not squashed:
        return None
    exact = [p for p in installed if p.rsplit(".", 1)[-1].lower() == squashed]
    if len(exact) == 1:
        return exact[0]
    containing = [p for p in installed if squashed in p.lower().replace("_", "")]
    if len(containing) == 1:
        return containing[0]
    return None
