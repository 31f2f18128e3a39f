"""Benchmark: one observation of the virtual phone through the real adb server, as the driver takes it.

One observation = `exec-out screencap -p` + `uiautomator dump` + reading the XML back, via adbutils.
Prints p50/p95 in ms at 1080x2400 (target p50 <= 100 ms on the 2-core machine).
"""

from __future__ import annotations

import argparse
import statistics
import time

import adbutils

from agent_eval.virtual_device import start_fleet


def exec_out(dev: adbutils.AdbDevice, command: str) -> bytes:
    """`adb exec-out COMMAND` through the adb server: raw stdout, no shell protocol."""
    conn = dev.open_transport()
    try:
        conn.send_command(f"exec:{command}")
        conn.check_okay()
        data = conn.read_until_close(encoding=None)
    finally:
        conn.close()
    assert isinstance(data, bytes)
    return data


def observe(dev: adbutils.AdbDevice) -> tuple[bytes, str]:
    png = exec_out(dev, "screencap -p")
    xml = dev.dump_hierarchy()  # rm -f X; uiautomator dump X && echo success; then X is pulled over sync
    return png, xml


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--base-port", type=int, default=5690)
    ap.add_argument("--changing", action="store_true", help="scroll before each observation: a new frame")
    args = ap.parse_args()
    with start_fleet(count=1, base_port=args.base_port) as fleet:
        dev = adbutils.AdbClient().device(fleet.serials[0])
        dev.shell("am start -n com.android.settings/.Settings")
        for _ in range(3):
            observe(dev)
        times = []
        for i in range(args.n):
            if args.changing:
                dev.shell(f"input swipe 540 {1800 - (i % 2) * 600} 540 {1200 + (i % 2) * 600} 100")
            t = time.perf_counter()
            png, xml = observe(dev)
            times.append((time.perf_counter() - t) * 1000)
            assert png[:8] == b"\x89PNG\r\n\x1a\n" and xml.startswith("<?xml")
        q = statistics.quantiles(times, n=20)
        kind = "changing screen" if args.changing else "static screen"
        print(
            f"observation ({kind}, 1080x2400, n={args.n}): p50 {statistics.median(times):.1f} ms, "
            f"p95 {q[18]:.1f} ms, max {max(times):.1f} ms"
        )


if __name__ == "__main__":
    main()
