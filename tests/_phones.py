"""Helpers for tests that play on virtual phones: the real adb binary and adbutils, pointed at our phones.

The phone's own tests use adb ports 5600..5699 (`one_phone`); `start_phone` takes the first free pair of a
range.
"""

from __future__ import annotations

import io
import re
import socket
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import adbutils
import pytest
from PIL import Image

from virtual_phone import Fleet, start_fleet
from virtual_phone.errors import PhoneStartError

ADB = adbutils.adb_path()


def adb(
    serial: str, *args: str, timeout: float = 30, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Runs the real adb client against one phone; never raises on a non-zero exit."""
    return subprocess.run([ADB, "-s", serial, *args], capture_output=True, timeout=timeout, input=stdin)


def sh(serial: str, command: str) -> str:
    """`adb shell COMMAND` stdout as text (the exit code is ignored)."""
    return adb(serial, "shell", command).stdout.decode()


def device(serial: str) -> adbutils.AdbDevice:
    return adbutils.AdbClient(host="127.0.0.1", port=5037).device(serial)


def reset(serial: str) -> None:
    out = adb(serial, "emu", "avd", "snapshot", "load", "default_boot").stdout.decode()
    assert "KO" not in out, out


def screenshot(serial: str) -> Image.Image:
    data = adb(serial, "exec-out", "screencap", "-p").stdout
    return Image.open(io.BytesIO(data)).convert("RGB")


@dataclass(frozen=True)
class Node:
    text: str
    resource_id: str
    cls: str
    content_desc: str
    checked: bool
    clickable: bool
    scrollable: bool
    bounds: tuple[int, int, int, int]
    enabled: bool = True

    @property
    def center(self) -> tuple[int, int]:
        return (self.bounds[0] + self.bounds[2]) // 2, (self.bounds[1] + self.bounds[3]) // 2


def parse_dump(xml: str) -> list[Node]:
    nodes = []
    for el in ET.fromstring(xml).iter("node"):
        nums = [int(v) for v in re.findall(r"\d+", el.get("bounds", ""))]
        nodes.append(
            Node(
                text=el.get("text", ""),
                resource_id=el.get("resource-id", ""),
                cls=el.get("class", ""),
                content_desc=el.get("content-desc", ""),
                checked=el.get("checked") == "true",
                clickable=el.get("clickable") == "true",
                scrollable=el.get("scrollable") == "true",
                bounds=(nums[0], nums[1], nums[2], nums[3]),
                enabled=el.get("enabled") != "false",
            )
        )
    return nodes


def dump(serial: str) -> list[Node]:
    xml = device(serial).dump_hierarchy()
    return parse_dump(xml)


def find(nodes: list[Node], text: str) -> Node:
    matches = [n for n in nodes if n.text == text]
    assert matches, f"no node with text {text!r}; texts: {[n.text for n in nodes if n.text]}"
    return matches[0]


def row_of(nodes: list[Node], title: str) -> Node:
    """The clickable row that holds the title (the smallest clickable node containing the title)."""
    t = find(nodes, title)
    rows = [
        n
        for n in nodes
        if n.clickable
        and n.bounds[0] <= t.bounds[0]
        and n.bounds[1] <= t.bounds[1]
        and n.bounds[2] >= t.bounds[2]
        and n.bounds[3] >= t.bounds[3]
    ]
    assert rows, f"{title!r} is not inside a clickable row"
    return min(rows, key=lambda n: (n.bounds[2] - n.bounds[0]) * (n.bounds[3] - n.bounds[1]))


def tap(serial: str, node: Node) -> None:
    x, y = node.center
    assert adb(serial, "shell", "input", "tap", str(x), str(y)).returncode == 0


def one_phone(base_port: int) -> tuple[Any, Any]:
    """`fleet` (module-scoped) and `serial` (reset before each test) fixtures for one phone on `base_port`."""
    serial_name = f"emulator-{base_port}"

    @pytest.fixture(scope="module")
    def fleet() -> Iterator[Fleet]:
        with start_fleet(count=1, base_port=base_port) as f:
            yield f

    @pytest.fixture
    def serial(fleet: Fleet) -> str:
        reset(serial_name)
        return serial_name

    return fleet, serial


NOWHERE = "emulator-5996"  # a serial no test starts


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def start_phone(ports: range, **options: Any) -> Any:
    """A virtual phone (a one-phone Fleet) on the first free console port of `ports`.

    Another run of these tests (or a phone left over) may hold a port: take the next pair instead.
    """
    for base in range(ports.start, ports.stop, 2):
        if port_free(base) and port_free(base + 1):
            try:
                return start_fleet(count=1, base_port=base, **options)
            except PhoneStartError:
                continue
    raise RuntimeError(f"no free adb port pair in {ports}")


def default_sigint() -> None:
    """preexec_fn for a child a test interrupts with SIGINT: a suite started in the background (`cmd &` in
    a non-interactive shell) passes SIGINT on as ignored, and Python then installs no handler for it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
