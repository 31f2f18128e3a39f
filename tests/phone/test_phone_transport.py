"""The virtual phone as the real adb server and adbutils see it: listing, shell (v2 and legacy), exec-out,
push/pull, concurrent streams, and malformed protocol input that must not kill the phone."""

from __future__ import annotations

import concurrent.futures
import os
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest
from _phones import ADB, adb, device, one_phone, sh

BASE = 5600
SERIAL = f"emulator-{BASE}"

fleet, serial = one_phone(BASE)


def test_adb_devices_lists_the_phone_with_its_product_fields(serial: str) -> None:
    out = subprocess_out("devices", "-l")
    line = next(ln for ln in out.splitlines() if ln.startswith(serial))
    assert line.split()[1] == "device"
    assert "product:sdk_gphone64_x86_64" in line
    assert "model:sdk_gphone64_x86_64" in line
    assert "device:emu64x" in line


def subprocess_out(*args: str) -> str:
    import subprocess

    from _phones import ADB

    return subprocess.run([ADB, *args], capture_output=True, timeout=30).stdout.decode()


def test_adb_shell_returns_exit_codes_and_separates_stderr(serial: str) -> None:
    done = adb(serial, "shell", "echo out; echo err >&2; exit 3")
    assert done.returncode == 3
    assert done.stdout == b"out\n"
    assert done.stderr == b"err\n"
    assert adb(serial, "shell", "true").returncode == 0
    assert adb(serial, "shell", "false").returncode == 1


def test_unknown_command_exits_127_with_androids_message(serial: str) -> None:
    done = adb(serial, "shell", "foo")
    assert done.returncode == 127
    # mksh's message as AOSP's external/mksh (R59, src/main.c error_prefix) prints it: the shell's name, not
    # the `E: ` Debian's build puts first.
    assert done.stderr == b"/system/bin/sh: foo: inaccessible or not found\n"


def test_adbutils_shell2_v2_and_legacy_shell(serial: str) -> None:
    d = device(serial)
    r = d.shell2("echo hi; ls /nonexistent", v2=True)
    assert r.returncode == 1
    assert r.stdout == "hi\n"
    assert "No such file or directory" in r.stderr
    # Legacy shell: one stream, stdout and stderr in the order they were produced.
    assert d.shell("echo a; echo b >&2; echo c") == "a\nb\nc"
    assert d.shell2("getprop sys.boot_completed").output.strip() == "1"


def test_interactive_adb_shell_reads_commands_from_stdin(serial: str) -> None:
    done = adb(serial, "shell", stdin=b"echo hi\nsettings get global wifi_on\nexit 3\n")
    assert done.returncode == 3
    lines = done.stdout.decode().replace("\r", "").splitlines()
    assert "hi" in lines and "1" in lines


def test_exec_out_is_binary_safe(serial: str) -> None:
    payload = bytes(range(256)) * 40 + b"\r\n\n\r"
    device(serial).sync.push(payload, "/sdcard/blob.bin")
    assert adb(serial, "exec-out", "cat", "/sdcard/blob.bin").stdout == payload
    # The legacy shell is binary safe too (no \n -> \r\n translation without a pty).
    assert device(serial).shell(["cat", "/sdcard/blob.bin"], encoding=None) == payload


def test_push_and_pull_round_trip_bytes(serial: str, tmp_path: Path) -> None:
    src = tmp_path / "in.bin"
    data = bytes((i * 7) % 256 for i in range(300_000))  # several sync DATA chunks
    src.write_bytes(data)
    assert adb(serial, "push", str(src), "/sdcard/Download/in.bin").returncode == 0
    dst = tmp_path / "out.bin"
    assert adb(serial, "pull", "/sdcard/Download/in.bin", str(dst)).returncode == 0
    assert dst.read_bytes() == data
    assert "in.bin\n" in sh(serial, "ls /sdcard/Download")
    assert sh(serial, "wc -c /sdcard/Download/in.bin") == "300000 /sdcard/Download/in.bin\n"
    # A push into a directory keeps the file name; a pull of a missing file fails.
    assert adb(serial, "push", str(src), "/sdcard/").returncode == 0
    assert "in.bin" in sh(serial, "ls /sdcard")
    missing = adb(serial, "pull", "/sdcard/nope.txt", str(tmp_path / "x"))
    assert missing.returncode != 0
    assert b"does not exist" in missing.stderr or b"No such file" in missing.stderr


def test_push_to_read_only_place_fails(serial: str, tmp_path: Path) -> None:
    src = tmp_path / "f.txt"
    src.write_text("x")
    done = adb(serial, "push", str(src), "/system/f.txt")
    assert done.returncode != 0
    assert b"Read-only file system" in done.stderr


def test_concurrent_streams_do_not_block_each_other(serial: str) -> None:
    d = device(serial)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        slow = pool.submit(d.shell2, "sleep 2; echo slow")
        fast = [pool.submit(d.shell2, f"echo {i}") for i in range(6)]
        results = [f.result(timeout=5).output.strip() for f in fast]
        # The fast ones all finished while the slow one still sleeps.
        assert not slow.done()
        assert results == [str(i) for i in range(6)]
        assert slow.result(timeout=10).output.strip() == "slow"


def _message(cmd: int, arg0: int, arg1: int, data: bytes = b"") -> bytes:
    return struct.pack("<6I", cmd, arg0, arg1, len(data), sum(data), cmd ^ 0xFFFFFFFF) + data


def _cnxn(version: int = 0x01000001) -> bytes:
    return _message(0x4E584E43, version, 1 << 20, b"host::features=shell_v2\0")


def _recv_message(s: socket.socket) -> tuple[int, int, int, int, bytes]:
    head = b""
    while len(head) < 24:
        chunk = s.recv(24 - len(head))
        if not chunk:
            raise ConnectionError("closed")
        head += chunk
    cmd, arg0, arg1, length, check, _ = struct.unpack("<6I", head)
    data = b""
    while len(data) < length:
        data += s.recv(length - len(data))
    return cmd, arg0, arg1, check, data


@pytest.mark.parametrize(
    "garbage",
    [
        b"this is not adb at all, just some text" * 2,
        struct.pack("<6I", 0x4E584E43, 0x01000001, 4096, 0, 0, 0x12345678),  # bad magic
        struct.pack("<6I", 0x4E45504F, 1, 0, 5, 0, 0x4E45504F ^ 0xFFFFFFFF) + b"echo\0",  # OPEN before CNXN
        struct.pack("<6I", 0x45545257, 1, 1, 1 << 30, 0, 0x45545257 ^ 0xFFFFFFFF),  # absurd payload length
    ],
)
def test_malformed_message_closes_that_connection_only(serial: str, garbage: bytes) -> None:
    with socket.create_connection(("127.0.0.1", BASE + 1), timeout=5) as s:
        s.sendall(garbage)
        s.settimeout(5)
        assert s.recv(100) == b""  # the phone hung up on us
    # ...and still serves the real adb server.
    assert sh(serial, "echo alive") == "alive\n"


def test_handshake_answers_with_device_banner(serial: str) -> None:
    with socket.create_connection(("127.0.0.1", BASE + 1), timeout=5) as s:
        s.sendall(_cnxn())
        cmd, version, maxdata, _, data = _recv_message(s)
    assert (cmd, version, maxdata) == (0x4E584E43, 0x01000001, 1 << 20)
    assert data.startswith(b"device::ro.product.name=sdk_gphone64_x86_64;")
    assert b"features=shell_v2" in data and b"delayed_ack" not in data


def test_old_hosts_get_checksummed_messages_and_small_chunks(serial: str) -> None:
    """A host at version 0x01000000 with a 4 KiB payload limit: byte-sum checksums, output cut to 4 KiB."""
    device(serial).sync.push(b"0123456789" * 1000, "/sdcard/big.txt")
    okay, wrte, clse, opn = 0x59414B4F, 0x45545257, 0x45534C43, 0x4E45504F
    with socket.create_connection(("127.0.0.1", BASE + 1), timeout=5) as s:
        s.sendall(_message(0x4E584E43, 0x01000000, 4096, b"host::\0"))
        _, version, _, _, _ = _recv_message(s)
        assert version == 0x01000000
        s.sendall(_message(opn, 7, 0, b"exec:cat /sdcard/big.txt\0"))
        assert _recv_message(s)[0] == okay
        received = b""
        while True:
            cmd, arg0, _, check, data = _recv_message(s)
            if cmd == clse:
                break
            assert cmd == wrte and len(data) <= 4096 and check == sum(data)
            received += data
            s.sendall(_message(okay, 7, arg0))
    assert received == b"0123456789" * 1000


def test_reboot_keeps_settings_and_comes_back_home(serial: str) -> None:
    sh(serial, "settings put global bluetooth_on 1; am start -a android.settings.DISPLAY_SETTINGS")
    adb(serial, "reboot")
    # The phone leaves the adb server for a moment, then comes back booted.
    deadline = time.monotonic() + 20
    while adb(serial, "get-state").stdout.strip() == b"device" and time.monotonic() < deadline:
        time.sleep(0.05)
    while adb(serial, "shell", "getprop sys.boot_completed").stdout != b"1\n" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sh(serial, "getprop sys.boot_completed") == "1\n"
    assert sh(serial, "settings get global bluetooth_on") == "1\n"
    assert "NexusLauncherActivity" in sh(serial, "dumpsys window | grep mCurrentFocus")


def _sandboxed(marker: bytes) -> bool:
    """A `sleep MARKER` runs somewhere on this host."""
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read() == b"sleep\0" + marker + b"\0":
                    return True
        except OSError:
            continue
    return False


def test_a_command_whose_client_goes_away_is_killed(serial: str) -> None:
    client = subprocess.Popen([ADB, "-s", serial, "shell", "sleep 27.1828"])
    try:
        deadline = time.monotonic() + 10
        while not _sandboxed(b"27.1828") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _sandboxed(b"27.1828"), "the command runs in the phone's sandbox"
    finally:
        client.kill()  # as a timeout or ^C does: the adb server closes the stream
        client.wait()
    deadline = time.monotonic() + 5
    while _sandboxed(b"27.1828") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _sandboxed(b"27.1828")
    assert adb(serial, "shell", "echo still here").stdout == b"still here\n"


def test_shell_v2_stdin_reaches_the_command(serial: str) -> None:
    # The adb client sends stdin as shell v2 packets, then close-stdin (`echo SQL | adb shell sqlite3 DB`).
    done = adb(serial, "shell", "wc -c; cat /dev/null", stdin=b"hello\n")
    assert (done.returncode, done.stdout) == (0, b"6\n")
    assert adb(serial, "shell", "cat", stdin=b"").stdout == b""  # EOF at once: cat does not wait
