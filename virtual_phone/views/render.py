"""Real pixels for the phone's screen with Pillow: status bar, app bar, rows, switches, dialogs, keyboard.

Draws the same view tree that uiautomator dumps; dark theme follows `secure ui_night_mode`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache

from PIL import Image, ImageDraw, ImageFont

from virtual_phone.state.phone_state import PhoneState
from virtual_phone.views.view_tree import KEY_LABELS, Layout, Metrics, View

FontT = ImageFont.FreeTypeFont | ImageFont.ImageFont


@dataclass(frozen=True)
class Palette:
    bg: str
    surface: str
    text: str
    subtext: str
    accent: str
    on_accent: str
    track_off: str
    disabled: str


LIGHT = Palette("#f8f9fc", "#e9eef6", "#1f1f1f", "#5e5e62", "#0b57d0", "#ffffff", "#c4c7c5", "#a8abae")
DARK = Palette("#131316", "#2a2b2f", "#e3e3e3", "#a8abb1", "#a8c7fa", "#062e6f", "#5c5f63", "#6b6e72")


@cache
def font(px: int) -> FontT:
    for path in ("DejaVuSans.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"):
        try:
            return ImageFont.truetype(path, px)
        except OSError:
            continue
    return ImageFont.load_default(size=px)


@lru_cache(maxsize=4096)
def glyphs(text: str, px: int, anchor: str) -> tuple[Image.Image, int, int]:
    """`text` rendered once as an alpha mask, and where its corner sits relative to the anchor point."""
    f = font(px)
    left, top, right, bottom = (int(v) for v in f.getbbox(text, anchor=anchor))
    mask = Image.new("L", (max(1, right - left), max(1, bottom - top)), 0)
    ImageDraw.Draw(mask).text((-left, -top), text, font=f, fill=255, anchor=anchor)
    return mask, left, top


CHROME_PAINTS = frozenset(
    (
        "window",
        "wallpaper",
        "app_icon",
        "big_title",
        "search",
        "search_text",
        "app_bar",
        "up_arrow",
        "bar_title",
    )
)
ROW_PAINTS = frozenset(("header", "icon", "title", "summary", "switch", "seekbar", "progress"))
DIALOG_PAINTS = frozenset(("dialog", "dialog_title", "radio", "edit", "search_field", "button"))
SHADE_PAINTS = frozenset(("shade", "tile", "tile_label", "tile_state"))
RECORD_PAINTS = frozenset(
    ("field", "empty", "fab", "outlined", "filled", "menu_item", "spin_side", "spin_value")
)


def _center(r: tuple[int, int, int, int]) -> tuple[int, int]:
    return (r[0] + r[2]) // 2, (r[1] + r[3]) // 2


class Painter:
    def __init__(self, state: PhoneState) -> None:
        self.m = Metrics(state)
        self.p = DARK if state.shown("secure", "ui_night_mode") == "2" else LIGHT
        self.state = state
        self.img = Image.new("RGB", (state.width, state.height), self.p.bg)
        self.d = ImageDraw.Draw(self.img)

    def write(self, xy: tuple[int, int], text: str, size: float, fill: str, anchor: str) -> None:
        """Draws text from the glyph cache: FreeType renders each distinct label once, not once per frame."""
        if not text:
            return
        text = text.replace("\n", " ")  # one line here; multi-line fields draw line by line
        mask, dx, dy = glyphs(text, max(6, self.m.dp(size)), anchor)
        self.img.paste(fill, (xy[0] + dx, xy[1] + dy), mask)

    def text(self, v: View, size: float, color: str, anchor: str = "lm") -> None:
        x0, y0, _, y1 = v.rect
        fill = color if v.enabled else self.p.disabled
        if anchor == "mm":
            self.write(_center(v.rect), v.text, size, fill, "mm")
        else:
            self.write((x0, (y0 + y1) // 2), v.text, size, fill, "lm")

    def view(self, v: View) -> None:
        k = v.paint
        if k in CHROME_PAINTS:
            self._chrome(v, k)
        elif k in ROW_PAINTS:
            self._row_part(v, k)
        elif k in DIALOG_PAINTS:
            self._dialog_part(v, k)
        elif k in SHADE_PAINTS:
            self.shade_part(v)
        elif k in RECORD_PAINTS:
            self.record_part(v, k)
        for c in v.children:
            self.view(c)

    def _chrome(self, v: View, k: str) -> None:
        """Window, launcher and app-bar paints."""
        p, d, dp, r = self.p, self.d, self.m.dp, v.rect
        if k == "window":
            d.rectangle(r, fill=p.bg)
        elif k == "wallpaper":
            d.rectangle(r, fill="#3d5a80")
            d.ellipse((-dp(120), r[3] // 3, r[2] // 2 + dp(120), r[3] // 3 + r[2]), fill="#98c1d9")
        elif k == "app_icon":
            cx = (r[0] + r[2]) // 2
            s = dp(28)
            top = r[1] + dp(12)
            d.ellipse((cx - s, top, cx + s, top + 2 * s), fill=v.color or "#5f6368")
            self.write((cx, top + s), v.text[:1], 26, "#ffffff", "mm")
            self.write((cx, top + 2 * s + dp(16)), v.text, 13, "#ffffff", "mm")
        elif k == "big_title":
            self.text(v, 36, p.text)
        elif k == "search":
            d.rounded_rectangle(r, radius=(r[3] - r[1]) // 2, fill=p.surface)
            cy = (r[1] + r[3]) // 2
            d.ellipse((r[0] + dp(20), cy - dp(9), r[0] + dp(36), cy + dp(7)), outline=p.subtext, width=dp(2))
            d.line((r[0] + dp(34), cy + dp(5), r[0] + dp(40), cy + dp(11)), fill=p.subtext, width=dp(2))
        elif k == "search_text":
            self.text(v, 16, p.subtext)
        elif k == "app_bar":
            d.rectangle(r, fill=p.bg)
        elif k == "up_arrow":
            cx, cy = _center(r)
            w = dp(2)
            d.line((cx - dp(8), cy, cx + dp(8), cy), fill=p.text, width=w)
            d.line((cx - dp(8), cy, cx, cy - dp(8)), fill=p.text, width=w)
            d.line((cx - dp(8), cy, cx, cy + dp(8)), fill=p.text, width=w)
        elif k == "bar_title":
            self.text(v, 22, p.text)

    def _row_part(self, v: View, k: str) -> None:
        """Paints inside list rows."""
        p, d, dp, r = self.p, self.d, self.m.dp, v.rect
        if k == "header":
            self.text(v, 14, p.accent)
        elif k == "icon":
            d.ellipse(r, fill=v.color or p.subtext)
        elif k == "title":
            self.text(v, 18, p.text)
        elif k == "summary":
            self.text(v, 14, p.subtext)
        elif k == "switch":
            self.switch(v)
        elif k == "seekbar":
            cy = (r[1] + r[3]) // 2
            x = r[0] + round(v.value * (r[2] - r[0]))
            d.rounded_rectangle((r[0], cy - dp(6), r[2], cy + dp(6)), radius=dp(6), fill=p.track_off)
            d.rounded_rectangle(
                (r[0], cy - dp(6), max(x, r[0] + dp(12)), cy + dp(6)), radius=dp(6), fill=p.accent
            )
            d.ellipse((x - dp(10), cy - dp(10), x + dp(10), cy + dp(10)), fill=p.accent)
        elif k == "progress":
            w = r[2] - r[0]
            x = r[0] + round(v.value * w)
            d.rectangle(r, fill=p.track_off)
            d.rectangle((x, r[1], min(r[2], x + w // 4), r[3]), fill=p.accent)

    def _dialog_part(self, v: View, k: str) -> None:
        """Dialog, field and button paints."""
        p, d, dp, r = self.p, self.d, self.m.dp, v.rect
        if k == "dialog":
            d.rounded_rectangle(r, radius=dp(28), fill=p.surface)
        elif k == "dialog_title":
            self.text(v, 22, p.text)
        elif k == "radio":
            cx, cy = r[0] + dp(40), (r[1] + r[3]) // 2
            d.ellipse(
                (cx - dp(10), cy - dp(10), cx + dp(10), cy + dp(10)),
                outline=p.accent if v.checked else p.subtext,
                width=dp(2),
            )
            if v.checked:
                d.ellipse((cx - dp(5), cy - dp(5), cx + dp(5), cy + dp(5)), fill=p.accent)
            self.write((r[0] + dp(72), cy), v.text, 16, p.text, "lm")
        elif k == "edit":
            d.line((r[0], r[3] - dp(2), r[2], r[3] - dp(2)), fill=p.accent, width=dp(2))
            self.text(v, 18, p.text)
            tw = int(font(max(6, dp(18))).getlength(v.text))
            d.line(
                (r[0] + tw + dp(2), r[1] + dp(12), r[0] + tw + dp(2), r[3] - dp(12)),
                fill=p.accent,
                width=dp(2),
            )
        elif k == "search_field":
            cy = (r[1] + r[3]) // 2
            if v.text:
                self.text(v, 20, p.text)
            else:
                self.write((r[0], cy), "Search settings", 20, p.subtext, "lm")
            if v.focused:
                tw = int(font(max(6, dp(20))).getlength(v.text)) if v.text else 0
                d.line(
                    (r[0] + tw + dp(2), r[1] + dp(10), r[0] + tw + dp(2), r[3] - dp(10)),
                    fill=p.accent,
                    width=dp(2),
                )
        elif k == "button":
            self.text(v, 15, p.accent, anchor="mm")

    def field(self, v: View) -> None:
        """A text field: its lines (the hint, grey, while empty) and, while focused, the cursor at the end."""
        p, d, dp, r = self.p, self.d, self.m.dp, v.rect
        d.rounded_rectangle(r, radius=dp(8), outline=p.accent if v.focused else p.subtext, width=dp(2))
        lines = (v.text or v.hint).split("\n")
        line_h = dp(26)
        multi = len(lines) > 1
        y = r[1] + dp(20) if multi else (r[1] + r[3]) // 2
        for line in lines[-max(1, (r[3] - r[1] - dp(16)) // line_h) :]:
            self.write((r[0] + dp(16), y), line, 17, p.text if v.text else p.subtext, "lm")
            y += line_h
        if v.focused:
            last = lines[-1] if v.text else ""
            x = r[0] + dp(16) + (int(font(max(6, dp(17))).getlength(last)) if last else 0) + dp(2)
            cy = y - line_h if multi or v.text else y
            d.line((x, cy - dp(12), x, cy + dp(12)), fill=p.accent, width=dp(2))

    def record_part(self, v: View, k: str) -> None:
        """Text fields (the hint grey while empty, a cursor while focused), buttons, menus and spinners."""
        p, d, dp, r = self.p, self.d, self.m.dp, v.rect
        if k == "field":
            self.field(v)
        elif k == "empty":
            self.text(v, 16, p.subtext, anchor="mm")
        elif k == "fab":
            d.rounded_rectangle(r, radius=dp(16), fill=p.accent)
            cx, cy = _center(r)
            if v.resource_id.endswith(":id/send_message_button"):  # a paper plane: a triangle pointing right
                d.polygon(
                    [(cx - dp(9), cy - dp(9)), (cx + dp(10), cy), (cx - dp(9), cy + dp(9))], fill=p.on_accent
                )
            else:  # a plus
                d.line((cx - dp(10), cy, cx + dp(10), cy), fill=p.on_accent, width=dp(3))
                d.line((cx, cy - dp(10), cx, cy + dp(10)), fill=p.on_accent, width=dp(3))
        elif k in ("outlined", "filled"):
            radius = (r[3] - r[1]) // 2
            if k == "filled":
                d.rounded_rectangle(r, radius=radius, fill=p.accent)
            else:
                d.rounded_rectangle(r, radius=radius, outline=p.subtext, width=dp(1))
            self.text(v, 15, p.on_accent if k == "filled" else p.accent, anchor="mm")
        elif k == "menu_item":
            self.write((r[0] + dp(24), (r[1] + r[3]) // 2), v.text, 17, p.text, "lm")
        elif k == "spin_side":
            self.text(v, 18, p.subtext, anchor="mm")
        elif k == "spin_value":
            d.line((r[0] + dp(12), r[1], r[2] - dp(12), r[1]), fill=p.accent, width=dp(2))
            d.line((r[0] + dp(12), r[3], r[2] - dp(12), r[3]), fill=p.accent, width=dp(2))
            self.text(v, 24, p.accent if v.focused else p.text, anchor="mm")

    def switch(self, v: View) -> None:
        p, d, dp = self.p, self.d, self.m.dp
        r = v.rect
        h = r[3] - r[1]
        if v.checked:
            d.rounded_rectangle(r, radius=h // 2, fill=p.accent if v.enabled else p.disabled)
            d.ellipse((r[2] - h + dp(4), r[1] + dp(4), r[2] - dp(4), r[3] - dp(4)), fill=p.on_accent)
        else:
            d.rounded_rectangle(r, radius=h // 2, fill=p.surface, outline=p.subtext, width=dp(2))
            d.ellipse((r[0] + dp(8), r[1] + dp(8), r[0] + h - dp(8), r[3] - dp(8)), fill=p.subtext)

    def shade_part(self, v: View) -> None:
        """The shade's panel and its tiles: a filled rounded tile when on, an outlined one when off."""
        p, d, dp, r = self.p, self.d, self.m.dp, v.rect
        if v.paint == "shade":
            d.rounded_rectangle(r, radius=dp(28), fill=p.surface)
            cx = (r[0] + r[2]) // 2
            d.rounded_rectangle(
                (cx - dp(18), r[3] - dp(16), cx + dp(18), r[3] - dp(12)), dp(2), fill=p.subtext
            )
        elif v.paint == "tile":
            d.rounded_rectangle(r, radius=dp(20), fill=p.accent if v.checked else p.bg)
            cy = (r[1] + r[3]) // 2
            icon_fill = p.on_accent if v.checked else p.subtext
            d.ellipse((r[0] + dp(16), cy - dp(12), r[0] + dp(40), cy + dp(12)), fill=icon_fill)
        else:
            fg = p.on_accent if v.checked else (p.text if v.paint == "tile_label" else p.subtext)
            self.write((r[0], (r[1] + r[3]) // 2), v.text, 15 if v.paint == "tile_label" else 13, fg, "lm")

    def status_bar(self, rect: tuple[int, int, int, int], shade: bool = False) -> None:
        p, d, dp, st = self.p, self.d, self.m.dp, self.state
        home = st.foreground == "com.google.android.apps.nexuslauncher" and not shade
        d.rectangle(rect, fill=p.surface if shade else "#3d5a80" if home else p.bg)
        fg = "#ffffff" if home else p.text
        cy = (rect[1] + rect[3]) // 2
        self.write((dp(24), cy), "12:00", 15, fg, "lm")
        x = rect[2] - dp(24)
        # Battery, then the radios that are on, right to left.
        d.rectangle((x - dp(12), cy - dp(9), x, cy + dp(9)), fill=fg)
        x -= dp(24)
        if st.get("system", "status_bar_show_battery_percent") == "1":
            self.write((x, cy), "100%", 13, fg, "rm")
            x -= dp(44)
        if st.get("global", "airplane_mode_on") == "1":
            self.write((x, cy), "✈", 16, fg, "rm")
            x -= dp(24)
        if st.get("global", "wifi_on") == "1":
            d.pieslice((x - dp(18), cy - dp(10), x, cy + dp(14)), 225, 315, fill=fg)
            x -= dp(24)
        if st.get("global", "bluetooth_on") == "1":
            self.write((x, cy), "B", 14, fg, "rm")
            x -= dp(20)
        if st.get("global", "zen_mode") not in (None, "0"):
            d.ellipse((x - dp(14), cy - dp(7), x, cy + dp(7)), fill=fg)
            x -= dp(20)
        if st.get("global", "low_power") == "1":
            d.rectangle((rect[2] - dp(36), cy - dp(9), rect[2] - dp(24), cy + dp(9)), fill="#e37400")

    def keyboard(self, layout: Layout) -> None:
        p, d, dp = self.p, self.d, self.m.dp
        d.rectangle(self.m.keyboard_rect(), fill=p.surface)
        for key in layout.keyboard:
            r = (key.rect[0] + dp(3), key.rect[1] + dp(4), key.rect[2] - dp(3), key.rect[3] - dp(4))
            d.rounded_rectangle(r, radius=dp(6), fill=p.bg)
            label = KEY_LABELS.get(key.char, key.char.upper() if self.state.shift else key.char)
            self.write(_center(r), label, 18 if len(label) == 1 else 13, p.text, "mm")


def render(layout: Layout, state: PhoneState) -> Image.Image:
    pt = Painter(state)
    pt.view(layout.window)
    pt.status_bar(layout.status_bar)
    nav = layout.nav_bar
    pt.d.rectangle(
        nav, fill=pt.p.bg if state.foreground != "com.google.android.apps.nexuslauncher" else "#3d5a80"
    )
    cx, cy = _center(nav)
    pt.d.rounded_rectangle(
        (cx - pt.m.dp(54), cy - pt.m.dp(2), cx + pt.m.dp(54), cy + pt.m.dp(2)),
        radius=pt.m.dp(2),
        fill=pt.p.subtext,
    )
    if layout.dialog is not None:
        pt.img = Image.blend(pt.img, Image.new("RGB", pt.img.size, "#000000"), 0.4)
        pt.d = ImageDraw.Draw(pt.img)
        pt.view(layout.dialog)
    if layout.keyboard:
        pt.keyboard(layout)
    if layout.shade is not None:
        pt.img = Image.blend(pt.img, Image.new("RGB", pt.img.size, "#000000"), 0.5)
        pt.d = ImageDraw.Draw(pt.img)
        pt.view(layout.shade)
        pt.status_bar(layout.status_bar, shade=True)
    return pt.img
