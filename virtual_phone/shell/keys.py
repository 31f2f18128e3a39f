"""Android key codes as `input keyevent` takes them (KEYCODE_ names without the prefix, to numbers), and the
characters that typing keys produce in a text field.
"""

from __future__ import annotations

KEYCODES = {
    "HOME": 3,
    "BACK": 4,
    "DPAD_UP": 19,
    "DPAD_DOWN": 20,
    "DPAD_LEFT": 21,
    "DPAD_RIGHT": 22,
    "DPAD_CENTER": 23,
    "POWER": 26,
    "TAB": 61,
    "SPACE": 62,
    "ENTER": 66,
    "DEL": 67,
    "MENU": 82,
    "SEARCH": 84,
    "ESCAPE": 111,
    "FORWARD_DEL": 112,
    "MOVE_END": 123,
    "APP_SWITCH": 187,
    "WAKEUP": 224,
    "VOLUME_UP": 24,
    "VOLUME_DOWN": 25,
    "CAMERA": 27,
    "NOTIFICATION": 83,
    "SLEEP": 223,
}
KEYCODES |= {chr(c): 29 + c - ord("A") for c in range(ord("A"), ord("Z") + 1)}
KEYCODES |= {str(d): 7 + d for d in range(10)}
KEYCODES |= {"PERIOD": 56, "COMMA": 55, "MINUS": 69, "AT": 77}
KEY_CHARS = {56: ".", 55: ",", 69: "-", 77: "@", 62: " "} | {29 + i: chr(ord("a") + i) for i in range(26)}
KEY_CHARS |= {7 + d: str(d) for d in range(10)}
