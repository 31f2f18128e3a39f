"""Small JPEG copies of step screenshots, made once per run under runs/<id>/thumbs/, so big runs load fast.

A thumbnail newer than its screenshot is reused; the screenshot's own size comes back, for drawing overlays.
The runner may make an episode's thumbnails as it finishes (`episode_thumbnails`), so reports need not.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from agent_eval.rundir import THUMBS_DIR

THUMB_WIDTH = 200  # about; the page shows them 180 CSS pixels wide
_MAX_WORKERS = 4


@dataclass(frozen=True)
class Thumbnail:
    path: str  # relative to the run directory, with forward slashes (it goes into the page as a URL)
    width: int  # of the full screenshot, in pixels
    height: int
    small: bool = True  # False: not made (out of time), `path` is the full screenshot itself


def _thumb_path(run_dir: Path, screenshot: Path) -> Path:
    return run_dir / THUMBS_DIR / screenshot.relative_to(run_dir).with_suffix(".jpg")


def thumbnail(run_dir: Path, screenshot: Path, make: bool = True) -> Thumbnail | None:
    """The cached thumbnail of `screenshot` (a file under run_dir); None when it is missing or unreadable.

    With make=False a missing thumbnail is not made, and the screenshot itself stands in for it.
    """
    try:
        thumb = _thumb_path(run_dir, screenshot)
        source_mtime = screenshot.stat().st_mtime
    except (ValueError, OSError):
        return None
    url = thumb.relative_to(run_dir).as_posix()
    fresh = thumb.is_file() and thumb.stat().st_mtime >= source_mtime
    try:
        with Image.open(screenshot) as image:
            width, height = image.size  # from the header alone; pixels are decoded only for a new thumbnail
            if fresh:
                return Thumbnail(url, width, height)
            if not make:
                return Thumbnail(screenshot.relative_to(run_dir).as_posix(), width, height, small=False)
            # reduce() averages whole pixel blocks: far cheaper than a filtered resize of a 1080x2400 screen,
            # and converting after it touches a fraction of the pixels.
            small = image.reduce(max(1, round(width / THUMB_WIDTH))).convert("RGB")
    except (OSError, UnidentifiedImageError, ValueError):
        return None
    thumb.parent.mkdir(parents=True, exist_ok=True)
    small.save(thumb, "JPEG", quality=72)
    return Thumbnail(url, width, height)


def thumbnails(
    run_dir: Path, screenshots: Iterable[Path], budget_s: float | None = None
) -> dict[Path, Thumbnail | None]:
    """Thumbnails of many screenshots, made on a few threads; past `budget_s`, the rest are left unmade.

    Decoding PNGs is what a first report costs (ms per screen, tens at 1080x2400); Pillow releases the GIL
    while it decodes, scales and encodes, so threads share it across cores without a process's start-up.
    """
    wanted = list(dict.fromkeys(screenshots))
    deadline = time.monotonic() + budget_s if budget_s is not None else None

    def one(screenshot: Path) -> Thumbnail | None:
        return thumbnail(run_dir, screenshot, make=deadline is None or time.monotonic() < deadline)

    with ThreadPoolExecutor(max_workers=min(_MAX_WORKERS, os.cpu_count() or 1)) as pool:
        made = list(pool.map(one, wanted))
    return dict(zip(wanted, made, strict=True))


def episode_thumbnails(run_dir: Path, episode_dir: Path) -> int:
    """Make the thumbnails of one finished episode's screenshots (step-NNN.png); return how many exist."""
    made = thumbnails(run_dir, sorted(episode_dir.glob("step-*.png")))
    return sum(1 for t in made.values() if t is not None)
