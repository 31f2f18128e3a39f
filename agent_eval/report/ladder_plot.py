"""The ladder plot: a metric against bits per weight, a line per method (RTN, GPTQ: vLLM; GGUF: llama.cpp).

Hand-written SVG like plots.py. The reference is a dashed line with its band; each rung is marked by its
verdict (● NON-INFERIOR, ✕ REGRESSION, ○ INCONCLUSIVE); rounded rungs (bf16 speed) are drawn hollow-edged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from agent_eval.report.plots import _svg
from agent_eval.scoring.build_score import Rate
from agent_eval.scoring.ladder import Ladder, LadderRung
from agent_eval.scoring.regression import METRIC_WORDS
from agent_eval.scoring.scorecard import Scorecard
from agent_eval.scoring.stats import Verdict

# One line per method; GGUF rungs are llama.cpp's, the others vLLM's: the GGUF line is the other engine.
LINES = {"rtn": "#3b6fb6", "gptq": "#e08a2c", "awq": "#8062a8", "gguf": "#2a9d8f"}
VERDICT_COLORS = {
    Verdict.NON_INFERIOR: "#4c9a5b",
    Verdict.REGRESSION: "#b54a4a",
    Verdict.INCONCLUSIVE: "#777",
}
LEFT, TOP, PLOT_W, PLOT_H = 50, 34, 440, 200


def _x(bits: float, low: float, high: float) -> float:
    span = math.log2(high) - math.log2(low) or 1.0
    return LEFT + PLOT_W * (math.log2(bits) - math.log2(low)) / span


def _y(rate: float) -> float:
    return TOP + PLOT_H * (1 - rate)


def _rate(rung: LadderRung, metric: str) -> Rate:
    return rung.navigation if metric == "navigation" else rung.success


def _axes(low: float, high: float, ticks: Sequence[float]) -> list[str]:
    body = []
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = _y(tick)
        body.append(f'<line x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{y}" y2="{y}" stroke="#ddd"/>')
        body.append(f'<text x="{LEFT - 6}" y="{y + 4}" text-anchor="end">{tick:g}</text>')
    for bits in ticks:
        x = _x(bits, low, high)
        body.append(f'<text x="{x:.1f}" y="{TOP + PLOT_H + 16}" text-anchor="middle">{bits:g}</text>')
    body.append(
        f'<text x="{LEFT + PLOT_W / 2}" y="{TOP + PLOT_H + 32}" text-anchor="middle">bits per weight</text>'
    )
    return body


def _line(rungs: Sequence[LadderRung], metric: str, color: str, low: float, high: float) -> list[str]:
    points = [(r.bits_per_weight or 16.0, _rate(r, metric)) for r in rungs]
    # Two rungs may share a width (int5 and int4 g32 are both 5.0 bits): order by width, then rate.
    points = sorted(
        ((b, r) for b, r in points if r.rate is not None and r.low is not None and r.high is not None),
        key=lambda point: (point[0], point[1].rate or 0.0),
    )
    if not points:
        return []
    upper = [f"{_x(b, low, high):.1f},{_y(r.high or 0):.1f}" for b, r in points]
    lower = [f"{_x(b, low, high):.1f},{_y(r.low or 0):.1f}" for b, r in reversed(points)]
    middle = [f"{_x(b, low, high):.1f},{_y(r.rate or 0):.1f}" for b, r in points]
    return [
        f'<polygon points="{" ".join(upper + lower)}" fill="{color}" opacity="0.15"/>',
        f'<polyline points="{" ".join(middle)}" fill="none" stroke="{color}" stroke-width="2"/>',
    ]


def _mark(rung: LadderRung, metric: str, low: float, high: float) -> str:
    rate = _rate(rung, metric)
    delta = rung.navigation_delta if metric == "navigation" else rung.success_delta
    if rate.rate is None or delta is None:
        return ""
    x, y = _x(rung.bits_per_weight or 16.0, low, high), _y(rate.rate)
    color = VERDICT_COLORS[delta.verdict]
    tip = f"{rung.build} ({rung.label}): {rate.rate:.2f}, Δ {delta.delta:+.2f}, {delta.verdict.value}"
    if delta.verdict is Verdict.REGRESSION:
        shape = (
            f'<path d="M{x - 5:.1f},{y - 5:.1f}L{x + 5:.1f},{y + 5:.1f}M{x - 5:.1f},{y + 5:.1f}'
            f'L{x + 5:.1f},{y - 5:.1f}" stroke="{color}" stroke-width="2.5"/>'
        )
    else:
        fill = color if delta.verdict is Verdict.NON_INFERIOR else "white"
        dash = ' stroke-dasharray="2,1"' if rung.served == "bf16" else ""
        shape = (
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{fill}" stroke="{color}" stroke-width="2"{dash}/>'
        )
    return (
        f'<g class="rung" data-build="{escape(rung.build)}" data-metric="{metric}" '
        f'data-verdict="{delta.verdict.value}"><title>{escape(tip)}</title>{shape}</g>'
    )


def ladder_chart(ladder: Ladder, metric: str) -> str:
    """One metric of the ladder against bits per weight (log scale), with the reference as a dashed band."""
    bits = [r.bits_per_weight for r in ladder.rungs if r.bits_per_weight]
    low, high = min(bits, default=2.0), max(bits, default=16.0)
    low, high = min(low, 2.0), max(high, 16.0)
    ticks = sorted({2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 16.0} | {b for b in bits if b >= low})
    body = _axes(low, high, [t for t in ticks if low <= t <= high and (t.is_integer() or t in bits)])
    reference = next((r for r in ladder.rungs if r.navigation_delta is None), None)
    ref_rate = _rate(reference, metric) if reference else None
    if ref_rate is not None and ref_rate.rate is not None:
        lo, hi = _y(ref_rate.high or 0), _y(ref_rate.low or 0)
        body.append(
            f'<rect x="{LEFT}" y="{lo:.1f}" width="{PLOT_W}" height="{hi - lo:.1f}" '
            'fill="#999" opacity="0.15"/>'
        )
        y = _y(ref_rate.rate)
        body.append(
            f'<line x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#555" stroke-dasharray="5,4"/>'
        )
    for method, color in LINES.items():
        rungs = [r for r in ladder.rungs if r.method == method]
        body += _line(rungs, metric, color, low, high)
    body += [_mark(r, metric, low, high) for r in ladder.rungs]
    legend = [("reference", "#555")] + [
        (m.upper(), c) for m, c in LINES.items() if any(r.method == m for r in ladder.rungs)
    ]
    for i, (name, color) in enumerate(legend):
        x = LEFT + i * 110
        body.append(
            f'<rect x="{x}" y="8" width="12" height="12" fill="{color}"/>'
            f'<text x="{x + 16}" y="18">{name}</text>'
        )
    title = f"{METRIC_WORDS[metric]} against bits per weight"
    return _svg(LEFT + PLOT_W + 20, TOP + PLOT_H + 42, body, title)


def ladder_figures(card: Scorecard) -> list[tuple[str, str, str]]:
    """(key, svg, caption) of the ladder plots, one per metric; none without a ladder."""
    if card.ladder is None:
        return []
    caption = (
        "{} against bits per weight: RTN and GPTQ (vLLM) and GGUF (llama.cpp) lines with Wilson 95% bands; "
        "dashed: the reference. "
        "● non-inferior, ✕ regression, ○ inconclusive; dotted edge: rounded rung served in bf16. "
        + card.ladder.sentence
    )
    return [
        (f"ladder-{m}", ladder_chart(card.ladder, m), caption.format(METRIC_WORDS[m].capitalize()))
        for m in ("navigation", "success")
    ]
