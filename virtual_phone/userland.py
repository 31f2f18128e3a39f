"""A phone's userland: its /system image, its sandbox and the binder its Android programs call, started
together on the phone's first shell command and ended with the phone."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from virtual_phone.binder import Binder
from virtual_phone.commands import command_table
from virtual_phone.program import Caller
from virtual_phone.sandbox import PHONE_TIME, Sandbox, require_tools
from virtual_phone.system_image import install
from virtual_phone.tree import owned_temp_dir

if TYPE_CHECKING:
    from virtual_phone.phone import Phone


class Userland:
    def __init__(self, phone: Phone) -> None:
        tools = require_tools()
        commands = command_table()
        install(phone.tree.root / "system", tools, commands, PHONE_TIME)
        self._socket_dir = Path(owned_temp_dir("virtual-phone-sock"))

        def caller(cwd: str, uid: str) -> Caller:
            # `su` names a user; otherwise programs run as adbd's user (root after `adb root`).
            return Caller(phone, root=phone.root if uid == "" else uid == "0", cwd=cwd)

        self.binder = Binder(self._socket_dir, commands, caller)
        self.sandbox = Sandbox(phone.tree.root, self._socket_dir, tools)

    def close(self) -> None:
        self.sandbox.close()
        self.binder.close()
        shutil.rmtree(self._socket_dir, ignore_errors=True)
