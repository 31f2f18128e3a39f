"""Fast PNG encoding for screenshots: unfiltered rows, deflate level 1, the frame cut into horizontal bands.

Each band is deflated on its own, so a band equal to the last frame's reuses its compressed bytes (a toggled
switch recompresses a few bands, not the screen); changed bands compress on two threads (zlib drops the GIL).
"""

from __future__ import annotations

import struct
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
from PIL import Image

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="png")
BAND_ROWS = 96
_ADLER_MOD = 65521


def _chunk(kind: bytes, data: bytes) -> bytes:
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def adler32_combine(first: int, second: int, second_len: int) -> int:
    """adler32 of A+B from adler32(A), adler32(B) and len(B), as zlib's adler32_combine."""
    a1, b1 = first & 0xFFFF, first >> 16
    a2, b2 = second & 0xFFFF, second >> 16
    a = (a1 + a2 - 1) % _ADLER_MOD
    b = (b1 + b2 + second_len * (a1 - 1)) % _ADLER_MOD
    return (b << 16) | a


@dataclass(frozen=True)
class _Band:
    deflated: bytes
    adler: int
    size: int  # bytes of raw (filter byte + RGB) rows


def _deflate(rgb: np.ndarray, last: bool) -> _Band:
    n, w, _ = rgb.shape
    rows = np.zeros((n, w * 3 + 1), dtype=np.uint8)  # column 0: filter type 0 (None) on every row
    rows[:, 1:] = rgb.reshape(n, w * 3)
    raw = rows.tobytes()
    c = zlib.compressobj(1, zlib.DEFLATED, -15)
    # A sync flush ends the band on a byte boundary, so the next band's deflate data can follow it.
    data = c.compress(raw) + c.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)
    return _Band(data, zlib.adler32(raw), len(raw))


class PngEncoder:
    """Encodes successive frames of one screen, reusing the compressed bands that did not change."""

    def __init__(self) -> None:
        self._prev: np.ndarray | None = None
        self._bands: list[_Band] = []

    def encode(self, img: Image.Image) -> bytes:
        rgb = np.array(img if img.mode == "RGB" else img.convert("RGB"))
        h, w, _ = rgb.shape
        prev = self._prev if self._prev is not None and self._prev.shape == rgb.shape else None
        starts = list(range(0, h, BAND_ROWS))
        last = len(starts) - 1
        bands: list[_Band | None] = [
            self._bands[i]
            if prev is not None and np.array_equal(rgb[s : s + BAND_ROWS], prev[s : s + BAND_ROWS])
            else None
            for i, s in enumerate(starts)
        ]
        todo = [i for i, b in enumerate(bands) if b is None]
        fresh = _POOL.map(lambda i: _deflate(rgb[starts[i] : starts[i] + BAND_ROWS], i == last), todo)
        for i, band in zip(todo, fresh, strict=True):
            bands[i] = band
        done = [b for b in bands if b is not None]
        self._prev, self._bands = rgb, done
        adler = 1
        for b in done:
            adler = adler32_combine(adler, b.adler, b.size)
        stream = b"\x78\x01" + b"".join(b.deflated for b in done) + struct.pack(">I", adler)
        header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
        return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", stream) + _chunk(b"IEND", b"")


def encode_png(img: Image.Image) -> bytes:
    """One frame, no history."""
    return PngEncoder().encode(img)
