"""Small JPEG copies of step screenshots, made once per run under runs/<id>/thumbs/, so big runs load fast.

A thumbnail newer than its screenshot is reused; the screenshot's own size comes back, for drawing overlays.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

THUMB_WIDTH = 240
THUMBS_DIR = "thumbs"


@dataclass(frozen=True)
class Thumbnail:
    path: str  # relative to the run directory, with forward slashes (it goes into the page as a URL)
    width: int  # of the full screenshot, in pixels
    height: int


def thumbnail(run_dir: Path, screenshot: Path) -> Thumbnail | None:
    """The cached thumbnail of `screenshot` (a file under run_dir); None when it is missing or unreadable."""
    try:
        relative = screenshot.relative_to(run_dir)
        source_mtime = screenshot.stat().st_mtime
    except (ValueError, OSError):
        return None
    thumb = run_dir / THUMBS_DIR / relative.with_suffix(".jpg")
    url = thumb.relative_to(run_dir).as_posix()
    fresh = thumb.is_file() and thumb.stat().st_mtime >= source_mtime
    try:
        with Image.open(screenshot) as image:
            width, height = image.size  # from the header alone; pixels are decoded only for a new thumbnail
            if fresh:
                return Thumbnail(url, width, height)
            scale = max(1, width // THUMB_WIDTH)
            # reduce() averages whole pixel blocks, much cheaper than a filtered resize on a 1080x2400 screen.
            small = image.convert("RGB").reduce(scale) if scale > 1 else image.convert("RGB")
    except (OSError, UnidentifiedImageError):
        return None
    thumb.parent.mkdir(parents=True, exist_ok=True)
    small.save(thumb, "JPEG", quality=72)
    return Thumbnail(url, width, height)
