"""The table of the phone's Android programs (the ones that ask the phone process), put together explicitly
from the command modules."""

from __future__ import annotations

from virtual_phone.shell import (
    activity_manager,
    android_commands,
    bugreport,
    content_command,
    dumpsys,
    logcat,
    package_manager,
    service_command,
    system_commands,
)
from virtual_phone.shell.program import Command

MODULES = (
    android_commands,
    activity_manager,
    package_manager,
    dumpsys,
    logcat,
    system_commands,
    service_command,
    content_command,
    bugreport,
)


def command_table() -> dict[str, Command]:
    """Program name → command; a name defined twice is a bug caught here."""
    table: dict[str, Command] = {}
    for module in MODULES:
        for name, fn in module.COMMANDS.items():
            assert name not in table, f"command {name!r} is defined twice"
            table[name] = fn
    return table
