"""What the harness exposes: the virtual phone and `agent-eval view` listen on 127.0.0.1 only, and the phone's
console obeys nothing (no kill, no faults, no snapshot load) before `auth` with the token file's token.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from _phones import adb
from _synthetic import SyntheticRun, write_synthetic_run

from virtual_phone import Fleet, start_fleet
from virtual_phone.adb.console import read_token

BASE = 6050
AGENT_EVAL = str(Path(sys.executable).parent / "agent-eval")


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    with start_fleet(count=2, base_port=BASE) as f:
        yield f


def listening(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket the process (and its children) listen on."""
    procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    return {
        (c.laddr.ip, c.laddr.port)
        for p in procs
        for c in p.net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN
    }


def kernel_listeners(port: int) -> set[str]:
    """Local addresses the kernel lists for listening sockets on `port`, from /proc/net/tcp and tcp6."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def other_addresses() -> list[str]:
    """This host's non-loopback IPv4 addresses (where a wrongly bound server would answer)."""
    return [
        a.address
        for addrs in psutil.net_if_addrs().values()
        for a in addrs
        if a.family == socket.AF_INET and not ipaddress.ip_address(a.address).is_loopback
    ]


def refuses(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=2):
            return False
    except OSError:
        return True


def test_phones_listen_on_loopback_only(fleet: Fleet) -> None:
    ports = {BASE, BASE + 1, BASE + 2, BASE + 3}  # console and adb port of each phone
    bound = listening(fleet.process.pid)
    assert ports <= {port for _, port in bound}, bound
    assert {address for address, _ in bound} == {"127.0.0.1"}, bound
    for port in ports:
        assert kernel_listeners(port) == {"0100007F"}  # 127.0.0.1, little-endian hex; nothing on IPv6
        for address in other_addresses():
            assert refuses(address, port), f"{address}:{port} answered"


def test_agent_eval_view_listens_on_loopback_only(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    write_synthetic_run(run_dir, SyntheticRun(builds=("bf16",), tasks=("wifi_on",), seeds=1, max_steps=2))
    view = subprocess.Popen(
        [AGENT_EVAL, "view", str(run_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert view.stdout is not None
        line = view.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line + (view.stderr.read() if view.poll() is not None and view.stderr else "")
        port = int(match.group(1))
        assert listening(view.pid) == {("127.0.0.1", port)}
        assert kernel_listeners(port) == {"0100007F"}
        for address in other_addresses():
            assert refuses(address, port)
    finally:
        view.kill()
        view.wait(timeout=10)


def _console(port: int, lines: list[str]) -> list[str]:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        for line in lines:
            s.sendall(line.encode() + b"\n")
        s.sendall(b"quit\n")
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode().split("\r\n")


def test_console_obeys_nothing_before_auth(fleet: Fleet) -> None:
    serial = fleet.serials[1]
    console = BASE + 2
    dangerous = ["faults set dump_fail_rate 1.0", "avd snapshot delete default_boot", "kill"]
    lines = _console(console, dangerous)
    assert lines[0] == "Android Console: Authentication required"
    answers = lines[lines.index("OK") + 1 :]  # the greeting ends with OK, as the emulator's does
    assert sum(1 for ln in answers if ln.startswith("KO:")) == len(dangerous), lines
    assert "OK" not in answers, lines
    # None of it happened: the phone is alive, has no faults on, and still has its snapshot.
    assert fleet.alive() and adb(serial, "get-state").stdout.decode().strip() == "device"
    assert "dump_fail_rate: 0.0" in adb(serial, "emu", "faults", "show").stdout.decode()
    assert "default_boot" in adb(serial, "emu", "avd", "snapshot", "list").stdout.decode()
    # With the token the same console obeys (faults set, then reset to leave the phone as it was).
    token = read_token()
    lines = _console(console, [f"auth {token}", "faults set dump_fail_rate 0.5", "faults show"])
    assert any("dump_fail_rate: 0.5" in ln for ln in lines), lines
    assert "OK" in adb(serial, "emu", "faults", "reset").stdout.decode()
