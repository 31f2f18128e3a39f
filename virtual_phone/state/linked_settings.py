"""Settings that move together, as on a phone: each link is a row of data, applied wherever a key is written.

- `Cascade`: while `when` holds, the `follows` keys are forced to their value; what they held before is
  saved and written back when `when` stops holding (unless the user changed the key in between).
- `Override`: while `when` holds, the `shows` key is displayed as `value` (switch checked and disabled,
  colours) without changing what `settings get` reads, as Android does for dark theme under Battery Saver.
"""

from __future__ import annotations

from dataclasses import dataclass

Key = tuple[str, str]  # (namespace, key)


@dataclass(frozen=True)
class Cascade:
    when: Key
    equals: str
    follows: tuple[tuple[Key, str], ...]


@dataclass(frozen=True)
class Override:
    when: Key
    equals: str
    shows: Key
    value: str


CASCADES = (
    # Airplane mode turns the radios off; turning it off restores the radios the user had on.
    Cascade(
        ("global", "airplane_mode_on"),
        "1",
        ((("global", "wifi_on"), "0"), (("global", "bluetooth_on"), "0")),
    ),
)
OVERRIDES = (
    # Battery Saver turns dark theme on while it is on ("Temporarily turned on due to Battery Saver").
    Override(("global", "low_power"), "1", ("secure", "ui_night_mode"), "2"),
    # Airplane mode keeps the mobile-data setting but the radio is off: its switch shows off, disabled.
    Override(("global", "airplane_mode_on"), "1", ("global", "mobile_data"), "0"),
)


def saved_key(key: Key) -> str:
    return f"{key[0]}/{key[1]}"


def cascade(
    settings: dict[str, dict[str, str]], saved: dict[str, str], key: Key, old: str | None, new: str
) -> None:
    """Applies the cascades that `key` changing from `old` to `new` starts or ends."""
    for c in CASCADES:
        if c.when != key or (old == c.equals) == (new == c.equals):
            continue
        for (ns, k), forced in c.follows:
            table = settings.setdefault(ns, {})
            if new == c.equals:
                if (ns, k) != key and table.get(k) is not None:
                    saved[saved_key((ns, k))] = table[k]
                table[k] = forced
            else:
                before = saved.pop(saved_key((ns, k)), None)
                if before is not None and table.get(k) == forced:
                    table[k] = before


def override(settings: dict[str, dict[str, str]], key: Key) -> str | None:
    """The value `key` is shown as because of a link, or None when it shows what it holds."""
    for o in OVERRIDES:
        if o.shows == key and settings.get(o.when[0], {}).get(o.when[1]) == o.equals:
            return o.value
    return None
