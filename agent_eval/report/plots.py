"""Hand-written SVG charts for the static report: rates with interval whiskers, stacked bars, grouped bars.

No plotting library: the page must open from file:// alone, and a few hundred SVG elements draw instantly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

PALETTE = ("#3b6fb6", "#e08a2c", "#4c9a5b", "#b54a4a", "#8062a8", "#7a7a7a", "#c9a227")
_FONT = 'font-family="system-ui, sans-serif" font-size="12"'


@dataclass(frozen=True)
class Interval:
    value: float
    low: float
    high: float


@dataclass(frozen=True)
class Part:
    name: str
    color: str


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (
        f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}" {_FONT}>'
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
    )


def _legend(parts: Sequence[Part], x: int, y: int) -> list[str]:
    out = []
    for i, part in enumerate(parts):
        px = x + i * 130
        out.append(f'<rect x="{px}" y="{y - 10}" width="12" height="12" fill="{part.color}"/>')
        out.append(f'<text x="{px + 16}" y="{y}">{escape(part.name)}</text>')
    return out


def rates_chart(builds: Sequence[str], metrics: Sequence[str], rates: dict[tuple[str, str], Interval]) -> str:
    """Per build, one bar per metric with its interval as a whisker; rates are on a 0–1 axis."""
    left, top, plot_h, group_w, bar_w = 50, 30, 200, 40 + 34 * len(metrics), 26
    width = max(left + group_w * max(1, len(builds)) + 20, left + 130 * len(metrics))
    height = top + plot_h + 50
    body = _legend([Part(m, PALETTE[i % len(PALETTE)]) for i, m in enumerate(metrics)], left, 16)
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        body.append(f'<line x1="{left}" x2="{width - 10}" y1="{y}" y2="{y}" stroke="#ddd"/>')
        body.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{tick:g}</text>')
    for g, build in enumerate(builds):
        gx = left + g * group_w + 20
        for m, metric in enumerate(metrics):
            rate = rates.get((build, metric))
            if rate is None:
                continue
            x = gx + m * (bar_w + 8)
            y = top + plot_h * (1 - rate.value)
            lo_y, hi_y = top + plot_h * (1 - rate.low), top + plot_h * (1 - rate.high)
            mid = x + bar_w / 2
            tip = f"{build} {metric}: {_fmt(rate.value)} [{_fmt(rate.low)}, {_fmt(rate.high)}]"
            body.append(
                f'<g class="rate" data-build="{escape(build)}" data-metric="{escape(metric)}" '
                f'data-value="{rate.value}"><title>{escape(tip)}</title>'
                f'<rect x="{x}" y="{y:.1f}" width="{bar_w}" height="{top + plot_h - y:.1f}" '
                f'fill="{PALETTE[m % len(PALETTE)]}" opacity="0.85"/>'
                f'<line x1="{mid}" x2="{mid}" y1="{lo_y:.1f}" y2="{hi_y:.1f}" stroke="#222" '
                f'stroke-width="1.5"/>'
                f'<line x1="{mid - 6}" x2="{mid + 6}" y1="{lo_y:.1f}" y2="{lo_y:.1f}" stroke="#222"/>'
                f'<line x1="{mid - 6}" x2="{mid + 6}" y1="{hi_y:.1f}" y2="{hi_y:.1f}" stroke="#222"/></g>'
            )
        label_x = gx + (len(metrics) * (bar_w + 8)) / 2
        body.append(
            f'<text x="{label_x}" y="{top + plot_h + 18}" text-anchor="middle">{escape(build)}</text>'
        )
    return _svg(width, height, body, "Rates per build with 95% intervals")


def stacked_bars(
    rows: Sequence[str], parts: Sequence[Part], values: Mapping[str, Sequence[float]], unit: str, title: str
) -> str:
    """One horizontal bar per row, split into parts; `values[row]` lists one number per part."""
    left, top, bar_h, gap, plot_w = 90, 30, 22, 10, 460
    largest = max((sum(v) for v in values.values()), default=0.0) or 1.0
    height = top + len(rows) * (bar_h + gap) + 24
    width = left + plot_w + 90
    body = _legend(parts, 10, 16)
    for r, row in enumerate(rows):
        y = top + r * (bar_h + gap)
        body.append(f'<text x="{left - 6}" y="{y + bar_h * 0.7}" text-anchor="end">{escape(row)}</text>')
        x = float(left)
        row_values = values.get(row, [])
        for part, value in zip(parts, row_values, strict=False):
            w = plot_w * value / largest
            if w > 0:
                tip = f"{row} {part.name}: {_fmt(value)} {unit}"
                body.append(
                    f'<rect class="part" data-row="{escape(row)}" data-part="{escape(part.name)}" '
                    f'data-value="{value}" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                    f'fill="{part.color}"><title>{escape(tip)}</title></rect>'
                )
            x += w
        total = sum(row_values)
        body.append(f'<text x="{x + 6:.1f}" y="{y + bar_h * 0.7}">{_fmt(total)} {escape(unit)}</text>')
    return _svg(width, height, body, title)


def grouped_bars(
    rows: Sequence[str],
    parts: Sequence[Part],
    values: Mapping[str, Sequence[float | None]],
    unit: str,
    title: str,
) -> str:
    """Per row, one horizontal bar per part on a shared axis (missing values leave a gap)."""
    if all(v is None for vs in values.values() for v in vs):
        return _svg(300, 40, [f'<text x="10" y="24">{escape(title)}: not recorded in this run</text>'], title)
    left, top, bar_h, plot_w = 90, 30, 14, 420
    largest = max((v for vs in values.values() for v in vs if v is not None), default=0.0) or 1.0
    group_h = bar_h * len(parts) + 12
    height = top + len(rows) * group_h + 16
    width = left + plot_w + 110
    body = _legend(parts, 10, 16)
    for r, row in enumerate(rows):
        y0 = top + r * group_h
        body.append(f'<text x="{left - 6}" y="{y0 + group_h / 2}" text-anchor="end">{escape(row)}</text>')
        for p, (part, value) in enumerate(zip(parts, values.get(row, []), strict=False)):
            if value is None:
                continue
            y = y0 + p * bar_h
            w = plot_w * value / largest
            body.append(
                f'<rect class="part" data-row="{escape(row)}" data-part="{escape(part.name)}" '
                f'data-value="{value}" '
                f'x="{left}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" fill="{part.color}">'
                f"<title>{escape(f'{row} {part.name}: {_fmt(value)} {unit}')}</title></rect>"
                f'<text x="{left + w + 4:.1f}" y="{y + bar_h - 4}">{_fmt(value)} {escape(unit)}</text>'
            )
    return _svg(width, height, body, title)
