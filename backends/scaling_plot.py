"""The scaling curve of ``topoc plan --scaling`` as an inline SVG: throughput against GPUs
(log-log) for strong and weak scaling with the ideal line, for the HTML report. ``topoc report
--format html --scaling LO..HI`` calls ``section(curve)`` with a finished
``compiler.analysis.scaling.Curve`` and passes the result to the page as an extra section;
nothing is computed here but the drawing and the table."""

from __future__ import annotations

import html
import math

WIDTH, HEIGHT, PAD = 480, 300, 48
COLOURS = {"strong": "#1f77b4", "weak": "#d62728", "ideal": "#999999"}


def _scale(values, lo_px, hi_px):
    lo, hi = math.log(min(values)), math.log(max(values))
    span = (hi - lo) or 1.0
    return lambda v: lo_px + (math.log(v) - lo) / span * (hi_px - lo_px)


def _tokens(t: float) -> str:
    """12193 -> '12.2K', 1.5e6 -> '1.5M': a y-axis label."""
    for unit, size in (("M", 1e6), ("K", 1e3)):
        if t >= size:
            return f"{t / size:.3g}{unit}"
    return f"{t:.3g}"


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
    # the axes: the plot's left and bottom edges, a tick at each labelled value
    out.append(f'<line class="axis" x1="{PAD}" y1="{PAD - 8}" x2="{PAD}" y2="{HEIGHT - PAD}" '
               'stroke="#333" stroke-width="1.5"/>')
    out.append(f'<line class="axis" x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD + 8}" '
               f'y2="{HEIGHT - PAD}" stroke="#333" stroke-width="1.5"/>')
    for g in sorted(set(xs)):
        out.append(f'<line x1="{x(g):.1f}" y1="{HEIGHT - PAD}" x2="{x(g):.1f}" '
                   f'y2="{HEIGHT - PAD + 4}" stroke="#333"/>')
    for t in sorted({min(ys), max(ys)}):
        out.append(f'<line x1="{PAD - 4}" y1="{y(t):.1f}" x2="{PAD}" y2="{y(t):.1f}" '
                   'stroke="#333"/>')
    # strong and weak often coincide (always at the first count): strong is drawn wide
    # underneath, weak narrow and dashed on top, so both colours show along the whole curve
    for name, series, width, dash in (("ideal", sorted(set(ideal)), 1.5, "4 3"),
                                      ("strong", pts["strong"], 5, ""),
                                      ("weak", pts["weak"], 2, "6 3")):
        if len(series) < 1:
            continue
        path = " ".join(f"{x(g):.1f},{y(t):.1f}" for g, t in series)
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<polyline fill="none" stroke="{COLOURS[name]}" stroke-width="{width}"'
                   f'{dashes} points="{path}"><title>{name}</title></polyline>')
    for name, series, r in (("strong", pts["strong"], 5), ("weak", pts["weak"], 2.5)):
        for g, t in series:         # a mark per count: a single count draws no line
            out.append(f'<circle cx="{x(g):.1f}" cy="{y(t):.1f}" r="{r}" '
                       f'fill="{COLOURS[name]}"><title>{name}, {g} GPUs: {t:,.0f} tokens/s'
                       '</title></circle>')
    for t in sorted({min(ys), max(ys)}):        # the y axis: its ends, in tokens/s
        out.append(f'<text x="{PAD - 4}" y="{y(t) + 4:.1f}" text-anchor="end" '
                   f'font-size="11">{_tokens(t)}</text>')
    out.append(f'<text x="12" y="{HEIGHT / 2}" font-size="11" text-anchor="middle" '
               f'transform="rotate(-90 12 {HEIGHT / 2})">tokens/s (log)</text>')
    out.append(f'<text x="{WIDTH - 8}" y="{HEIGHT - 8}" font-size="11" text-anchor="end">'
               'GPUs (log)</text>')
    for g in sorted(set(xs)):
        out.append(f'<text x="{x(g):.1f}" y="{HEIGHT - PAD + 16}" text-anchor="middle" '
                   f'font-size="11">{g}</text>')
    for i, name in enumerate(("strong", "weak", "ideal")):
        out.append(f'<text x="{PAD + 90 * i}" y="{HEIGHT - 8}" font-size="11" '
                   f'fill="{COLOURS[name]}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def section(curve) -> str:
    """The report's scaling section: the plot, where adding GPUs stops paying, and the best
    strategy per GPU count and mode."""
    plot = svg(curve)
    if not plot:
        return (f"<p class=\"note\">No mapping of {html.escape(curve.model)} runs or fits at "
                "any of these GPU counts.</p>")
    knees = []
    for mode in ("strong", "weak"):
        k = curve.knee(mode)
        knees.append(f"{mode} scaling " + (f"stops paying at {k} GPUs" if k else
                                           "pays up to the last count"))
    rows = []
    notes: dict[str, int] = {}          # why a mode has no row, one footnote per reason
    for p in curve.points:
        for mode in ("strong", "weak"):
            r = getattr(p, mode)
            eff = curve.efficiency(mode, p)
            why = p.why(mode)
            mark = f" [{notes.setdefault(why, len(notes) + 1)}]" if r is None and why else ""
            cells = [str(p.gpus), mode, r.candidate.key if r else "-" + mark,
                     f"{r.step_time:.3g} s" if r else "-",
                     f"{r.tokens_per_s:,.0f}" if r else "-",
                     f"{eff:.0%}" if eff is not None else "-"]
            rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("GPUs", "mode", "best strategy", "step",
                                              "tokens/s", "efficiency"))
    return (f"<figure>{plot}</figure><p>{html.escape('; '.join(knees))} (efficiency under "
            f"50 % or throughput no longer growing; strong at batch {curve.batch}).</p>"
            # in a scroll box like every table of the page: wider than a phone's screen
            f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>"
            + "".join(f"<p class=\"note\">[{n}] {html.escape(why)}</p>"
                      for why, n in notes.items()))
