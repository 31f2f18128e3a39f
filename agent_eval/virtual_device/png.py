"""Fast PNG encoding for screenshots: unfiltered rows, deflate level 1, bands compressed on parallel threads.

zlib releases the GIL, so the bands of one frame compress at once; the bands join into one valid zlib stream.
"""

from __future__ import annotations

import struct
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from PIL import Image

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="png")
_BANDS = 2


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def _deflate(data: bytes, last: bool) -> bytes:
    c = zlib.compressobj(1, zlib.DEFLATED, -15)
    # A sync flush ends a band on a byte boundary, so the next band's raw deflate data can follow it.
    return c.compress(data) + c.flush(zlib.Z_FINISH if last else zlib.Z_SYNC_FLUSH)


def encode_png(img: Image.Image) -> bytes:
    rgb = np.asarray(img.convert("RGB") if img.mode != "RGB" else img)
    h, w, _ = rgb.shape
    rows = np.zeros((h, w * 3 + 1), dtype=np.uint8)  # column 0: filter type 0 (None) for every row
    rows[:, 1:] = rgb.reshape(h, w * 3)
    raw = rows.tobytes()
    step = -(-h // _BANDS) * (w * 3 + 1)
    bands = [raw[i : i + step] for i in range(0, len(raw), step)]
    parts = list(_POOL.map(_deflate, bands, [i == len(bands) - 1 for i in range(len(bands))]))
    stream = b"\x78\x01" + b"".join(parts) + struct.pack(">I", zlib.adler32(raw) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", stream) + _chunk(b"IEND", b"")
