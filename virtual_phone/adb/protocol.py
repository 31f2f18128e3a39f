"""The adbd wire protocol: message framing, the CNXN banner, and checking an AUTH signature.

Facts from AOSP's protocol.txt; the host is the real adb server.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass

CNXN = 0x4E584E43
AUTH = 0x48545541
OPEN = 0x4E45504F
OKAY = 0x59414B4F
CLSE = 0x45534C43
WRTE = 0x45545257
STLS = 0x534C5453
COMMANDS = {CNXN, AUTH, OPEN, OKAY, CLSE, WRTE, STLS}
NAMES = {CNXN: "CNXN", AUTH: "AUTH", OPEN: "OPEN", OKAY: "OKAY", CLSE: "CLSE", WRTE: "WRTE", STLS: "STLS"}

VERSION_CHECKSUM = 0x01000000
VERSION_NO_CHECKSUM = 0x01000001
MAX_PAYLOAD = 1024 * 1024
HANDSHAKE_MAX = 4096
HEADER = struct.Struct("<6I")

AUTH_TOKEN, AUTH_SIGNATURE, AUTH_RSAPUBLICKEY = 1, 2, 3
# Features this device implements; no delayed_ack, stat_v2, ls_v2 or sendrecv_v2 (they change the protocol).
FEATURES = "shell_v2,cmd,fixed_push_mkdir"


class ProtocolError(Exception):
    """The peer sent something that is not a valid adb message; the connection is closed."""


@dataclass(frozen=True)
class Message:
    command: int
    arg0: int
    arg1: int
    data: bytes

    def __str__(self) -> str:
        return (
            f"{NAMES.get(self.command, hex(self.command))}({self.arg0:#x}, {self.arg1:#x}, {len(self.data)}B)"
        )


def pack(command: int, arg0: int, arg1: int, data: bytes = b"", checksum: bool = False) -> bytes:
    check = sum(data) & 0xFFFFFFFF if checksum else 0
    return HEADER.pack(command, arg0, arg1, len(data), check, command ^ 0xFFFFFFFF) + data


def parse_header(raw: bytes, max_payload: int) -> tuple[int, int, int, int]:
    """Validates a 24-byte header; returns (command, arg0, arg1, payload length)."""
    command, arg0, arg1, length, _check, magic = HEADER.unpack(raw)
    if command not in COMMANDS:
        raise ProtocolError(f"unknown command {command:#x}")
    if magic != command ^ 0xFFFFFFFF:
        raise ProtocolError(f"bad magic for {NAMES[command]}")
    if length > max_payload:
        raise ProtocolError(f"{NAMES[command]} payload of {length} bytes exceeds {max_payload}")
    return command, arg0, arg1, length


def banner(name: str, model: str, device: str) -> bytes:
    props = f"ro.product.name={name};ro.product.model={model};ro.product.device={device}"
    return f"device::{props};features={FEATURES}".encode()


# ASN.1 DigestInfo prefix for SHA-1: adb signs its 20-byte token as if it were a SHA-1 digest.
_SHA1_PREFIX = bytes.fromhex("3021300906052b0e03021a05000414")


@dataclass(frozen=True)
class PublicKey:
    n: int
    e: int
    text: bytes  # as the host sent it (base64 + " user@host")


def parse_public_key(payload: bytes) -> PublicKey:
    """Android's RSAPublicKey struct (base64): words, n0inv, n[words] LE, rr[words] LE, exponent."""
    text = payload.rstrip(b"\0")
    try:
        raw = base64.b64decode(text.split(b" ")[0])
        (words,) = struct.unpack_from("<I", raw, 0)
        n = int.from_bytes(raw[8 : 8 + 4 * words], "little")
        (e,) = struct.unpack_from("<I", raw, 8 + 8 * words)
    except (ValueError, struct.error) as err:
        raise ProtocolError(f"malformed adb public key: {err}") from err
    return PublicKey(n=n, e=e, text=text)


def verify(key: PublicKey, token: bytes, signature: bytes) -> bool:
    size = (key.n.bit_length() + 7) // 8
    if len(signature) != size:
        return False
    m = pow(int.from_bytes(signature, "big"), key.e, key.n).to_bytes(size, "big")
    expected_tail = _SHA1_PREFIX + token
    pad_len = size - len(expected_tail) - 3
    return m == b"\x00\x01" + b"\xff" * pad_len + b"\x00" + expected_tail
