"""adb key authentication on a virtual phone started with auth: a signature from an unknown key is refused,
the key offered in the clear is trusted, and its signatures pass from then on (RSA done by hand here)."""

from __future__ import annotations

import base64
import random
import socket
import struct
from collections.abc import Iterator

import pytest

from virtual_phone import Fleet, start_fleet

BASE = 5650
CNXN, AUTH = 0x4E584E43, 0x48545541
SHA1_PREFIX = bytes.fromhex("3021300906052b0e03021a05000414")


def _prime(bits: int, rng: random.Random) -> int:
    while True:
        n = rng.getrandbits(bits) | (1 << (bits - 1)) | 1
        if all(pow(a, n - 1, n) == 1 for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)):
            return n


class Key:
    """A 1024-bit RSA key that signs an adb token as adbd expects (PKCS#1 v1.5, token as a SHA-1 digest)."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        e = 65537
        while True:
            p, q = _prime(512, rng), _prime(512, rng)
            phi = (p - 1) * (q - 1)
            if p != q and phi % e:
                break
        self.n, self.e, self.d = p * q, e, pow(e, -1, phi)

    def sign(self, token: bytes) -> bytes:
        size = (self.n.bit_length() + 7) // 8
        tail = SHA1_PREFIX + token
        padded = b"\x00\x01" + b"\xff" * (size - len(tail) - 3) + b"\x00" + tail
        return pow(int.from_bytes(padded, "big"), self.d, self.n).to_bytes(size, "big")

    def public(self) -> bytes:
        words = (self.n.bit_length() + 31) // 32
        n0inv = (-pow(self.n, -1, 1 << 32)) % (1 << 32)
        rr = pow(2, 64 * words, self.n)
        raw = struct.pack("<II", words, n0inv) + self.n.to_bytes(4 * words, "little")
        raw += rr.to_bytes(4 * words, "little") + struct.pack("<I", self.e)
        return base64.b64encode(raw) + b" test@host\0"


def send(s: socket.socket, cmd: int, arg0: int, arg1: int, data: bytes = b"") -> None:
    s.sendall(struct.pack("<6I", cmd, arg0, arg1, len(data), 0, cmd ^ 0xFFFFFFFF) + data)


def recv(s: socket.socket) -> tuple[int, int, bytes]:
    head = b""
    while len(head) < 24:
        chunk = s.recv(24 - len(head))
        assert chunk, "the phone closed the connection"
        head += chunk
    cmd, arg0, _, length, _, _ = struct.unpack("<6I", head)
    data = b""
    while len(data) < length:
        data += s.recv(length - len(data))
    return cmd, arg0, data


@pytest.fixture(scope="module")
def fleet() -> Iterator[Fleet]:
    with start_fleet(count=1, base_port=BASE, auth=True) as f:
        yield f


def test_unknown_key_is_refused_until_offered_then_trusted(fleet: Fleet) -> None:
    key, stranger = Key(1), Key(2)
    with socket.create_connection(("127.0.0.1", BASE + 1), timeout=5) as s:
        send(s, CNXN, 0x01000001, 1 << 20, b"host::\0")
        cmd, kind, token = recv(s)
        assert (cmd, kind, len(token)) == (AUTH, 1, 20)
        send(s, AUTH, 2, 0, key.sign(token))
        cmd, kind, token = recv(s)
        assert (cmd, kind) == (AUTH, 1)  # not trusted yet: a fresh token
        send(s, AUTH, 3, 0, key.public())
        cmd, _, banner = recv(s)
        assert cmd == CNXN and banner.startswith(b"device::")
    with socket.create_connection(("127.0.0.1", BASE + 1), timeout=5) as s:
        send(s, CNXN, 0x01000001, 1 << 20, b"host::\0")
        _, _, token = recv(s)
        send(s, AUTH, 2, 0, stranger.sign(token))
        cmd, kind, token = recv(s)
        assert (cmd, kind) == (AUTH, 1)
        send(s, AUTH, 2, 0, key.sign(token))
        cmd, _, banner = recv(s)
        assert cmd == CNXN and banner.startswith(b"device::")
