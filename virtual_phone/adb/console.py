"""The emulator console on port P-1: greeting, `auth` against ~/.emulator_console_auth_token, snapshots, kill,
and `faults show|set|reset` so tests can change fault injection while a phone runs. Errors start with `KO: `.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from virtual_phone.phone import Phone
from virtual_phone.state import content_providers

TOKEN_FILE = ".emulator_console_auth_token"
HELP = (
    "Android console commands:\r\n\r\n"
    "    help|h|?         print a list of commands\r\n"
    "    kill             kill the emulator instance\r\n"
    "    quit|exit        quit control session\r\n"
    "    ping             check if the emulator is alive\r\n"
    "    auth             user authentication for the emulator console\r\n"
    "    avd              control virtual device execution (avd snapshot save|load|list|delete NAME)\r\n"
    "    sms              SMS related commands (sms send NUMBER TEXT)\r\n"
    "    faults           fault injection of the virtual phone (faults show|set FIELD VALUE|reset)\r\n"
    "\r\ntry 'help <command>' for command-specific help\r\n"
)


def token_path() -> Path:
    return Path(os.path.expanduser("~")) / TOKEN_FILE


def read_token() -> str:
    """The console's auth token, creating the file as the emulator does when it is missing."""
    path = token_path()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError:
        return ""
    else:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(12))
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


class Console:
    def __init__(self, phone: Phone, avd_name: str, on_kill: Callable[[], None]) -> None:
        self.phone = phone
        self.avd_name = avd_name
        self.on_kill = on_kill

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        def say(text: str) -> None:
            writer.write(text.encode())

        token = read_token()
        authed = not token
        if authed:
            say("Android Console: type 'help' for a list of commands\r\nOK\r\n")
        else:
            say(
                "Android Console: Authentication required\r\n"
                "Android Console: type 'auth <auth_token>' to authenticate\r\n"
                "Android Console: you can find your <auth_token> in \r\n"
                f"'{token_path()}'\r\nOK\r\n"
            )
        try:
            while True:
                await writer.drain()
                raw = await reader.readline()
                if not raw:
                    break
                words = raw.decode("utf-8", "replace").split()
                if not words:
                    continue
                cmd = words[0]
                if cmd in ("quit", "exit"):
                    break
                if cmd == "auth":
                    if (len(words) > 1 and words[1] == token) or not token:
                        authed = True
                        say("Android Console: type 'help' for a list of commands\r\nOK\r\n")
                    else:
                        say(f"KO: authentication token does not match {token_path()}\r\n")
                elif cmd in ("help", "h", "?"):
                    say(HELP + "OK\r\n")
                elif not authed:
                    say("KO: unknown command, try 'help'\r\n")
                else:
                    reply, kill = self.command(words)
                    say(reply)
                    if kill:
                        await writer.drain()
                        self.on_kill()
                        break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            try:
                await writer.drain()
                writer.close()
            except ConnectionError:
                pass

    def command(self, words: list[str]) -> tuple[str, bool]:
        """The reply to one authenticated console command, and whether the phone must stop."""
        cmd, args = words[0], words[1:]
        if cmd == "ping":
            return "I am alive!\r\nOK\r\n", False
        if cmd == "kill":
            return "OK: killing emulator, bye bye\r\n", True
        if cmd == "avd":
            return self._avd(args), False
        if cmd == "faults":
            return self._faults(args), False
        if cmd == "sms":
            return self._sms(args), False
        return "KO: unknown command, try 'help'\r\n", False

    def _avd(self, args: list[str]) -> str:
        if args[:1] == ["name"]:
            return f"{self.avd_name}\r\nOK\r\n"
        if args[:1] == ["status"]:
            return "virtual device is running\r\nOK\r\n"
        if args[:1] != ["snapshot"] or len(args) < 2:
            return "KO: bad sub-command, try 'help avd'\r\n"
        verb, name = args[1], args[2] if len(args) > 2 else ""
        phone = self.phone
        if verb == "list":
            lines = [
                "List of snapshots present on all disks:",
                "ID        TAG                 VM SIZE                DATE       VM CLOCK",
            ]
            for snap in phone.snapshots.values():
                date = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(snap.created))
                lines.append(f"--        {snap.name:<20}    1M {date}   00:00:00.000")
            return "\r\n".join(lines) + "\r\nOK\r\n"
        if not name:
            return f"KO: missing snapshot name, try 'help avd snapshot {verb}'\r\n"
        if verb == "save":
            phone.save_snapshot(name, time.time())
            return "OK\r\n"
        if verb == "load":
            if not phone.load_snapshot(name):
                return f"KO: snapshot '{name}' does not exist\r\n"
            phone.prerender_soon()
            return "OK\r\n"
        if verb == "delete":
            if not phone.delete_snapshot(name):
                return f"KO: snapshot '{name}' does not exist\r\n"
            return "OK\r\n"
        return "KO: bad sub-command, try 'help avd snapshot'\r\n"

    def _sms(self, args: list[str]) -> str:
        """`sms send NUMBER TEXT`: the modem receives an SMS, which lands in the inbox (unread) as the
        default SMS app stores it."""
        if args[:1] != ["send"]:
            return "KO: bad sub-command, try 'help sms'\r\n"
        if len(args) < 3:
            return "KO: missing argument, try 'sms send <phonenumber> <text message>'\r\n"
        number, text = args[1], " ".join(args[2:])
        if not re.fullmatch(r"\+?[0-9]+", number):
            return "KO: bad phone number format, must be [+](0-9)*\r\n"
        inbox = content_providers.resolve("content://sms/inbox")
        with self.phone.lock:
            content_providers.insert(self.phone.data, inbox, {"address": number, "body": text})
        self.phone.prerender_soon()
        return "OK\r\n"

    def _faults(self, args: list[str]) -> str:
        inj = self.phone.faults
        if not args or args[0] == "show":
            return "".join(f"{k}: {v}\r\n" for k, v in inj.config.model_dump().items()) + "OK\r\n"
        if args[0] == "reset":
            inj.reset()
            self.phone.changed()
            return "OK\r\n"
        if args[0] == "set" and len(args) >= 3:
            try:
                inj.set(args[1], " ".join(args[2:]))
            except ValueError as e:
                msg = str(e).splitlines()[0] if str(e) else "invalid value"
                return f"KO: {msg}\r\n"
            self.phone.changed()
            return "OK\r\n"
        return "KO: usage: faults show | faults set FIELD VALUE | faults reset\r\n"
