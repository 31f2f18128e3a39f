"""A phone's userland: its /system image, its sandbox and the binder its Android programs call, started
together on the phone's first shell command and ended with the phone."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from virtual_phone.shell.binder import Binder
from virtual_phone.shell.commands import command_table
from virtual_phone.shell.program import Caller
from virtual_phone.shell.sandbox import Sandbox, require_tools
from virtual_phone.shell.su import su
from virtual_phone.shell.system_image import install
from virtual_phone.state.owners import IDS, can_own
from virtual_phone.state.tree import owned_temp_dir

if TYPE_CHECKING:
    from virtual_phone.phone import Phone


class Userland:
    def __init__(self, phone: Phone) -> None:
        tools = require_tools()
        commands = command_table()
        users = phone.users if can_own() else None
        install(phone.tree.root / "system", tools, commands, users)
        phone.clock.write_shell_time(phone.tree.root / "system" / "etc")
        if users is not None:
            users.apply(phone.tree.root)
        self._socket_dir = Path(owned_temp_dir("virtual-phone-sock"))
        self._socket_dir.chmod(0o755)  # /dev/socket in the sandbox, open to every user as on Android
        self.sandbox = Sandbox(phone.tree.root, self._socket_dir, tools, users is not None)
        names = dict(IDS) | {f"u0_a{u - 10000}": u for u in phone.users.app_uids.values()}

        def caller(cwd: str, uid: int | None) -> Caller:
            # None: the program runs as adbd's user (root after `adb root`).
            adbd = 0 if phone.root else 2000
            return Caller(
                phone, root=phone.root if uid is None else uid == 0, cwd=cwd, uid=adbd if uid is None else uid
            )

        self.binder = Binder(
            self._socket_dir,
            commands,
            caller,
            lambda request, fds, conn: su(self.sandbox, names, request, fds, conn),
            peer_uid=users is not None,
        )

    def close(self) -> None:
        self.sandbox.close()
        self.binder.close()
        shutil.rmtree(self._socket_dir, ignore_errors=True)
