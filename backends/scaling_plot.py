"""The scaling curve of ``topoc plan --scaling`` as an inline SVG: throughput against GPUs
(log-log) for strong and weak scaling with the ideal line, for the HTML report. The report
calls ``svg(curve)`` with a finished ``compiler.analysis.scaling.Curve``; nothing is computed
here but the drawing."""

from __future__ import annotations

import html
import math

WIDTH, HEIGHT, PAD = 480, 300, 48
COLOURS = {"strong": "#1f77b4", "weak": "#d62728", "ideal": "#999999"}


def _scale(values, lo_px, hi_px):
    lo, hi = math.log(min(values)), math.log(max(values))
    span = (hi - lo) or 1.0
    return lambda v: lo_px + (math.log(v) - lo) / span * (hi_px - lo_px)


def svg(curve) -> str:
    """An SVG of tokens/s per GPU count; empty when no point has a row."""
    pts = {m: [(p.gpus, getattr(p, m).tokens_per_s) for p in curve.points if getattr(p, m)]
           for m in ("strong", "weak")}
    every = pts["strong"] + pts["weak"]
    if not every:
        return ""
    first = (pts["strong"] or pts["weak"])[0]
    ideal = [(g, first[1] * g / first[0]) for g, _ in every]
    xs = [g for g, _ in every]
    ys = [t for _, t in every + ideal]
    x = _scale(xs, PAD, WIDTH - PAD)
    y = _scale(ys, HEIGHT - PAD, PAD)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="scaling of '
           f'{html.escape(curve.model)}">',
           f'<text x="{WIDTH / 2}" y="16" text-anchor="middle" font-size="13">'
           f'{html.escape(curve.model)}: tokens/s against GPUs</text>']
    for name, series in (("ideal", sorted(set(ideal))), ("strong", pts["strong"]),
                         ("weak", pts["weak"])):
        if len(series) < 1:
            continue
        path = " ".join(f"{x(g):.1f},{y(t):.1f}" for g, t in series)
        dash = ' stroke-dasharray="4 3"' if name == "ideal" else ""
        out.append(f'<polyline fill="none" stroke="{COLOURS[name]}" stroke-width="2"{dash} '
                   f'points="{path}"><title>{name}</title></polyline>')
    for g in sorted(set(xs)):
        out.append(f'<text x="{x(g):.1f}" y="{HEIGHT - PAD + 16}" text-anchor="middle" '
                   f'font-size="11">{g}</text>')
    for i, name in enumerate(("strong", "weak", "ideal")):
        out.append(f'<text x="{PAD + 90 * i}" y="{HEIGHT - 8}" font-size="11" '
                   f'fill="{COLOURS[name]}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
