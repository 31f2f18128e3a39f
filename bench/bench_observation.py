"""Benchmark: one observation of the virtual phone through the real adb server, as the driver takes it.

One observation = `exec-out screencap -p` + `uiautomator dump` + reading the XML back, via adbutils.
Prints p50/p95 in ms at 1080x2400 (target p50 <= 100 ms on the 2-core machine).

`--records N` compares, interleaved on one phone, a Settings list screen with the Contacts list holding N
contacts (seeded with `content insert`, each with a number): each observation follows `am start` of its
screen and a scroll of its list, so every one is a new frame read from the data.
"""

from __future__ import annotations

import argparse
import statistics
import time

import adbutils

from virtual_phone import start_fleet


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


SETTINGS = "com.android.settings/.Settings"  # the main list, longer than the screen
CONTACTS = "com.google.android.contacts/com.google.android.apps.contacts.activities.PeopleActivity"


def seed_contacts(dev: adbutils.AdbDevice, count: int) -> None:
    """`count` contacts, each a raw contact and a phone number, through the contacts provider."""
    lines = []
    for i in range(count):
        raw = 100 + i
        uri = "content://com.android.contacts"
        name = f"'display_name:s:Person {i:03d}'"
        lines.append(f"content insert --uri {uri}/raw_contacts --bind _id:i:{raw} --bind {name}")
        lines.append(
            f"content insert --uri {uri}/data --bind raw_contact_id:i:{raw} "
            f"--bind mimetype:s:vnd.android.cursor.item/phone_v2 --bind 'data1:s:+1 555-{i:04d}'"
        )
    for start in range(0, len(lines), 100):
        dev.shell("; ".join(lines[start : start + 100]))


def summary(times: list[float]) -> str:
    q = statistics.quantiles(times, n=20)
    return f"p50 {statistics.median(times):.1f} ms, p95 {q[18]:.1f} ms, max {max(times):.1f} ms"


def compare_records(dev: adbutils.AdbDevice, n: int, count: int) -> None:
    """Settings screen vs the Contacts list with `count` records, interleaved (ABBA), each a fresh frame."""
    seed_contacts(dev, count)
    dev.shell(f"am start -n {CONTACTS}")
    xml = observe(dev)[1]
    assert "Person 000" in xml, "the seeded contacts are on the list"
    times: dict[str, list[float]] = {"settings": [], "contacts": []}
    for i in range(n):
        order = ("settings", "contacts") if i % 2 == 0 else ("contacts", "settings")
        for name in order:
            dev.shell(f"am start -n {SETTINGS if name == 'settings' else CONTACTS}")
            dev.shell(f"input swipe 540 {1800 - (i % 2) * 600} 540 {1200 + (i % 2) * 600} 100")
            t = time.perf_counter()
            png, xml = observe(dev)
            times[name].append((time.perf_counter() - t) * 1000)
            assert png[:8] == b"\x89PNG\r\n\x1a\n" and xml.startswith("<?xml")
    for name, ts in times.items():
        label = "Settings main list" if name == "settings" else f"Contacts list, {count} records"
        print(f"observation, {label}, 1080x2400, n={n}: {summary(ts)}")
    ratio = statistics.median(times["contacts"]) / statistics.median(times["settings"])
    print(f"contacts / settings p50: {ratio:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--base-port", type=int, default=5690)
    ap.add_argument("--changing", action="store_true", help="scroll before each observation: a new frame")
    ap.add_argument("--records", type=int, default=0, help="compare Settings with a list of N contacts")
    args = ap.parse_args()
    with start_fleet(count=1, base_port=args.base_port) as fleet:
        if args.records:
            compare_records(adbutils.AdbClient().device(fleet.serials[0]), args.n, args.records)
            return
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
