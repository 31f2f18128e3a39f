"""Benchmark: this phone against another version of it (a source tree given with --old), interleaved.

First, rounds of `adb shell true` through the real adb server (shell protocol v2, as the adb client sends it)
on each phone in turn (ABBA order), each phone otherwise idle: once spoken on the server's socket directly
(`raw`, as the `adb` binary does it) and once through adbutils' `shell2` (`shell`: adbutils 2.12 opens two
connections per call and sleeps 10 ms in each one's close). Then rounds of one observation as
bench_observation.py takes it and a reset: the console's `avd snapshot load default_boot` after the round
changed a file and a setting (its round trip on the console socket, as `adb emu` sends it). Prints p50/p95
per phone and measure.

    git archive main virtual_phone | tar -x -C /tmp/old && python bench/bench_shell.py --old /tmp/old
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import adbutils
from bench_observation import observe

from virtual_phone import start_fleet
from virtual_phone.fleet import Fleet


def console(port: int) -> Callable[[str], str]:
    """A console session on `port` (authenticated with the emulator's token): command → its answer."""
    sock = socket.create_connection(("127.0.0.1", port))
    f = sock.makefile("rwb")

    def read_answer() -> str:
        lines = []
        while True:
            line = f.readline().decode()
            lines.append(line)
            if line.startswith(("OK", "KO")):
                return "".join(lines)

    def ask(command: str) -> str:
        f.write(command.encode() + b"\n")
        f.flush()
        return read_answer()

    read_answer()  # the banner
    token = (Path.home() / ".emulator_console_auth_token").read_text().strip()
    ask(f"auth {token}")
    return ask


def raw_shell(serial: str, command: str, port: int = 5037) -> tuple[bytes, int]:
    """`adb shell COMMAND` spoken on the adb server's socket, as the adb client does it: stdout, exit code."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        for request in (f"host:tport:serial:{serial}", f"shell,v2,raw:{command}"):
            sock.sendall(b"%04x%s" % (len(request), request.encode()))
            status = sock.recv(4)
            assert status == b"OKAY", status
            if request.startswith("host:tport"):
                sock.recv(8)  # the transport id
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    out, rc, pos = b"", 255, 0
    while pos + 5 <= len(data):  # shell v2 packets: id, length, payload
        kind, length = data[pos], int.from_bytes(data[pos + 1 : pos + 5], "little")
        payload = data[pos + 5 : pos + 5 + length]
        out, rc = (out + payload, rc) if kind == 1 else (out, payload[0] if kind == 3 else rc)
        pos += 5 + length
    return out, rc


def summary(times: list[float]) -> str:
    q = statistics.quantiles(times, n=20)
    return f"p50 {statistics.median(times):.2f} ms, p95 {q[18]:.2f} ms"


def start(base_port: int, source: str | None) -> Fleet:
    """A one-phone fleet whose child process imports virtual_phone from `source` (None: this tree).

    The child runs `python -m`, which puts its working directory on sys.path ahead of PYTHONPATH: started from
    this repository, an --old phone was this tree's (until 2026-12-07), so the child starts in `source`."""
    saved, here = os.environ.get("PYTHONPATH"), os.getcwd()
    root = source if source is not None else str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = root
    os.chdir(root)
    try:
        return start_fleet(count=1, base_port=base_port)
    finally:
        os.chdir(here)
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def round_trip(serial: str, dev: adbutils.AdbDevice, times: dict[str, list[float]]) -> None:
    """`adb shell true`, on the server's socket and through adbutils, on a phone with nothing else to do."""
    t = time.perf_counter()
    assert raw_shell(serial, "true") == (b"", 0)
    times["raw"].append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    assert dev.shell2("true", v2=True).returncode == 0
    times["shell"].append((time.perf_counter() - t) * 1000)


def observe_and_reset(
    dev: adbutils.AdbDevice, ask: Callable[[str], str], i: int, times: dict[str, list[float]]
) -> None:
    """One observation, then a change and a reset (whose new frame the phone renders after answering)."""
    t = time.perf_counter()
    png, xml = observe(dev)
    times["obs"].append((time.perf_counter() - t) * 1000)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and xml.startswith("<?xml")
    dev.shell(f"echo {i} > /sdcard/Download/round.txt; settings put global wifi_on {i % 2}")
    t = time.perf_counter()
    answer = ask("avd snapshot load default_boot")
    times["reset"].append((time.perf_counter() - t) * 1000)
    assert answer.startswith("OK"), answer


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="a source tree holding the other virtual_phone package")
    ap.add_argument("-n", type=int, default=40)
    ap.add_argument("--base-port", type=int, default=6400)
    args = ap.parse_args()
    fleets = {"old": start(args.base_port, args.old), "new": start(args.base_port + 2, None)}
    try:
        devices = {k: adbutils.AdbClient().device(f.serials[0]) for k, f in fleets.items()}
        consoles = {k: console(f.adb_ports[0] - 1) for k, f in fleets.items()}
        for dev in devices.values():
            for _ in range(3):  # warm: the first calls start the sandbox, fill caches
                dev.shell2("true", v2=True)
                observe(dev)
        times = {k: {"raw": [], "shell": [], "obs": [], "reset": []} for k in fleets}
        for i in range(args.n):
            for name in ("old", "new") if i % 2 == 0 else ("new", "old"):
                round_trip(fleets[name].serials[0], devices[name], times[name])
        for i in range(args.n):
            for name in ("old", "new") if i % 2 == 0 else ("new", "old"):
                observe_and_reset(devices[name], consoles[name], i, times[name])
        for name, measures in times.items():
            for measure, ts in measures.items():
                print(f"{name:3} {measure:5} n={args.n}: {summary(ts)}")
    finally:
        for f in fleets.values():
            f.stop()


if __name__ == "__main__":
    main()
