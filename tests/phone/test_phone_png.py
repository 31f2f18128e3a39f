"""The screenshot PNG encoder: every frame decodes to exactly the pixels drawn, also when most bands are
reused from the previous frame, and the band checksums combine as zlib's own."""

from __future__ import annotations

import io
import random
import zlib

import numpy as np
from PIL import Image, ImageDraw

from virtual_phone.views.png import BAND_ROWS, PngEncoder, adler32_combine, encode_png


def decode(data: bytes) -> np.ndarray:
    img = Image.open(io.BytesIO(data))
    img.load()
    return np.asarray(img.convert("RGB"))


def test_adler32_combine_matches_zlib() -> None:
    rng = random.Random(5)
    for _ in range(200):
        a = rng.randbytes(rng.randint(0, 5000))
        b = rng.randbytes(rng.randint(0, 5000))
        assert adler32_combine(zlib.adler32(a), zlib.adler32(b), len(b)) == zlib.adler32(a + b)


def test_successive_frames_decode_exactly() -> None:
    rng = random.Random(9)
    enc = PngEncoder()
    img = Image.new("RGB", (360, 5 * BAND_ROWS + 17), "#f8f9fc")
    draw = ImageDraw.Draw(img)
    for step in range(12):
        # Small changes (one band), big ones (many), and none at all.
        if step % 4 == 1:
            y = rng.randrange(img.height)
            draw.line((0, y, img.width, y), fill=(rng.randrange(256), 0, 0))
        elif step % 4 == 2:
            draw.rectangle((0, 0, img.width, img.height), fill=(0, rng.randrange(256), 0))
        elif step % 4 == 3:
            draw.text((rng.randrange(300), rng.randrange(img.height)), "Wi-Fi", fill="black")
        assert np.array_equal(decode(enc.encode(img)), np.asarray(img))


def test_size_change_and_odd_sizes() -> None:
    enc = PngEncoder()
    for size in ((1, 1), (7, 5), (720, 1600), (1080, 2400), (720, 1600)):
        img = Image.new("RGB", size, "red")
        ImageDraw.Draw(img).line((0, 0, *size), fill="blue")
        assert np.array_equal(decode(enc.encode(img)), np.asarray(img))
        assert np.array_equal(decode(encode_png(img)), np.asarray(img))
