"""The phone's clock in its shell: `date` reads it, root's `date -s` and AlarmManager's setTime and
setTimeZone (`service call alarm 2|3 ...`) set it, records made afterwards carry it and a snapshot keeps it.

Sources: toybox `toys/posix/date.c` (the default format `%a %b %e %H:%M:%S %Z %Y`, `-s`, the lone
`MMDDhhmm[[CC]YY][.ss]`, `date: cannot set date: Operation not permitted` without the right to set the clock);
IAlarmManager.aidl (frameworks/base `apex/jobscheduler/framework/java/android/app/IAlarmManager.aidl`: set,
setTime, setTimeZone are transactions 1, 2, 3); `service` prints the reply parcel as `Result: Parcel(...)`
(frameworks/native `cmds/service/service.cpp`, Parcel's text form: words in hex, then the bytes).
"""

from __future__ import annotations

import time

import pytest

from virtual_phone.phone import Phone
from virtual_phone.shell.command_line import Shell
from virtual_phone.state.owners import can_own


def run(phone: Phone, line: str) -> tuple[str, str, int]:
    out, rc = Shell(phone).run(line)
    return out.stdout().decode(), out.stderr().decode(), rc


def test_date_reads_the_phone_s_clock(phone: Phone) -> None:
    assert run(phone, "date") == ("Thu Jan  1 12:00:00 UTC 2026\n", "", 0)
    assert run(phone, "date +%s") == ("1767268800\n", "", 0)
    assert run(phone, "getprop persist.sys.timezone") == ("UTC\n", "", 0)


def test_set_time_zone_changes_what_date_and_getprop_show(phone: Phone) -> None:
    assert run(phone, "service call alarm 3 s16 America/New_York") == (
        "Result: Parcel(00000000    '....')\n",
        "",
        0,
    )
    assert run(phone, "date") == ("Thu Jan  1 07:00:00 EST 2026\n", "", 0)
    assert run(phone, "getprop persist.sys.timezone") == ("America/New_York\n", "", 0)
    assert run(phone, "service call alarm 3 s16 UTC")[2] == 0
    assert run(phone, "date +%Z") == ("UTC\n", "", 0)


def test_set_time_moves_the_clock_for_the_shell_and_the_records(phone: Phone) -> None:
    ms = 1_800_000_000_000  # 2027-01-15 08:00 UTC
    assert run(phone, f"service call alarm 2 i64 {ms}") == (
        "Result: Parcel(00000000 00000001   '........')\n",
        "",
        0,
    )
    assert run(phone, "date +%s") == (f"{ms // 1000}\n", "", 0)
    run(phone, "content insert --uri content://sms/sent --bind address:s:5550100 --bind body:s:hi")
    out = run(phone, "content query --uri content://sms/sent --projection date --sort '_id DESC LIMIT 1'")[0]
    assert ms <= int(out.split("date=")[1]) < ms + 1000


@pytest.mark.skipif(not can_own(), reason="the shell user differs from root only on a phone started as root")
def test_only_root_sets_the_clock_with_date(phone: Phone) -> None:
    # toybox prints the date it parsed, then fails to set it (no right to the clock), as on a device.
    assert run(phone, "date -s '2027-03-04 05:06:07'") == (
        "Thu Mar  4 05:06:07 UTC 2027\n",
        "date: cannot set date: Operation not permitted\n",
        1,
    )
    assert run(phone, "date +%s") == ("1767268800\n", "", 0)
    assert run(phone, "su 0 date -s '2027-03-04 05:06:07'") == ("Thu Mar  4 05:06:07 UTC 2027\n", "", 0)
    assert run(phone, "date") == ("Thu Mar  4 05:06:07 UTC 2027\n", "", 0)
    assert run(phone, "su 0 date 0102030426") == ("Fri Jan  2 03:04:00 UTC 2026\n", "", 0)


def test_a_snapshot_keeps_the_clock_and_its_zone(phone: Phone) -> None:
    phone.save_snapshot("boot", time.time())
    run(phone, "service call alarm 3 s16 Asia/Tokyo; service call alarm 2 i64 1800000000000")
    assert run(phone, "date +%Z") == ("JST\n", "", 0)
    phone.load_snapshot("boot")
    assert run(phone, "date") == ("Thu Jan  1 12:00:00 UTC 2026\n", "", 0)


def test_service_answers_bad_input_as_android_s(phone: Phone) -> None:
    assert run(phone, "service check alarm") == ("Service alarm: found\n", "", 0)
    assert run(phone, "service check nosuch") == ("Service nosuch: not found\n", "", 0)
    assert run(phone, "service call nosuch 1") == ("", "service: Service nosuch does not exist\n", 10)
    out, err, rc = run(phone, "service call alarm 3 s16")
    assert (err, rc) == ("service: no string supplied for 's16'\n", 10) and out.startswith("Usage: service")
