"""Helpers for the record screens' tests: one in-process phone driven by shell commands (`input tap`,
`input text`, `input keyevent`) as an agent's driver sends them, and its UI dump read back as nodes."""

from __future__ import annotations

import shlex

from _phones import Node, parse_dump

from virtual_phone.phone import Phone
from virtual_phone.shell.command_line import Shell


class Driver:
    """A phone and the commands an agent's driver would send it."""

    def __init__(self, phone: Phone | None = None) -> None:
        self.phone = phone or Phone("emulator-5554")

    def sh(self, line: str) -> str:
        out, rc = Shell(self.phone).run(line)
        assert rc == 0, (line, out.stderr().decode())
        return out.stdout().decode()

    def nodes(self) -> list[Node]:
        return parse_dump(self.phone.dump())

    def texts(self) -> list[str]:
        return [n.text for n in self.nodes() if n.text]

    def node(self, text: str = "", desc: str = "", rid: str = "") -> Node:
        found = [
            n
            for n in self.nodes()
            if (not text or n.text == text)
            and (not desc or n.content_desc == desc)
            and (not rid or n.resource_id == rid)
        ]
        assert found, f"no node text={text!r} desc={desc!r} id={rid!r}; texts: {self.texts()}"
        return found[0]

    def tap(self, text: str = "", desc: str = "", rid: str = "") -> None:
        x, y = self.node(text, desc, rid).center
        self.sh(f"input tap {x} {y}")

    def long_press(self, text: str) -> None:
        x, y = self.node(text).center
        self.sh(f"input swipe {x} {y} {x} {y} 800")

    def type(self, text: str) -> None:
        """`input text` as the harness sends it: spaces as %s, the rest shell-quoted."""
        self.sh("input text " + shlex.quote(text.replace(" ", "%s")))

    def key(self, name: str) -> None:
        self.sh(f"input keyevent KEYCODE_{name}")

    def launch(self, package: str) -> None:
        self.sh(f"monkey -p {package} 1")
