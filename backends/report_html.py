"""``topoc report --format html``: one self-contained page for a strategy, formatted from the
finished values of ``compiler.analysis.page`` (this module computes nothing).

The page leads with the answer: the title names the model and the system, and the first
section (``id="summary"``) holds the step time, exposed communication, bubble, MFU, memory
against HBM, the link that limits each traffic line and the strategy's rank among ``topoc
plan``'s results. Then the checklist, the diagram (pan, zoom and hover by a small script of
our own, inline), the traffic table, the step-time bar, busbw-versus-size curves with the
operating point marked, any extra sections a caller passes, the ranked mappings and the
warnings. Plots are matplotlib SVG sized to fit a 390 px phone; the page loads nothing.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Sequence

from ..compiler.analysis.page import Page
from ..compiler.base.units import BYTES, human, human_size
from ..compiler.training.memory import FITS, MEMORY_MARGIN, TIGHT, fit
from . import report as text_report

DIM_COLORS = {"compute": "#76b900", "bubble": "#bbbbbb", "tp": "#1f77b4", "cp": "#17becf",
              "ep": "#9467bd", "dp": "#ff7f0e", "edp": "#e377c2", "pp": "#d62728"}
CSS = """
* { box-sizing: border-box; }
body { font-family: Helvetica, Arial, sans-serif; margin: 0 auto; padding: 12px; max-width: 1400px;
       color: #222; }
h1 { font-size: 22px; margin: 4px 0 8px; } h2 { font-size: 18px; margin-top: 28px;
       border-bottom: 1px solid #ccc; }
#summary { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 12px; }
#summary h2 { margin-top: 4px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 8px; }
.card { background: white; border: 1px solid #d0d7de; border-radius: 6px; padding: 6px 8px; }
.card b { display: block; font-size: 20px; } .card span { font-size: 12px; color: #555; }
.bad b { color: #b00020; } .good b { color: #116329; } .warn b { color: #9a6700; }
td.warn { background: #fff8c5; color: #9a6700; }
.scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; white-space: nowrap; }
th { background: #f2f2f2; } tr.mine td { background: #fff3c4; font-weight: bold; }
.diagram { position: relative; max-height: 70vh; width: 100%; border: 1px solid #ddd;
           overflow: hidden; touch-action: none; cursor: grab; background: white; }
.diagram > svg { width: 100%; height: 100%; }
.tools { margin: 4px 0; } .tools button { font-size: 14px; min-width: 36px; }
#tip { position: absolute; pointer-events: none; background: #222; color: white; font-size: 12px;
       padding: 4px 6px; border-radius: 4px; white-space: pre; display: none; z-index: 2; }
figure { margin: 0; max-width: 100%; } figure svg { max-width: 100%; height: auto; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
.plots figure { flex: 1 1 320px; max-width: 520px; }
figcaption { font-size: 12px; color: #555; }
ol li { margin: 4px 0; } .note { color: #666; font-size: 12px; }
"""
#: Pan (drag), zoom (wheel, buttons) and hover (a device's or link's figures, from the
#: drawing's tooltips) on the inline diagram. Written for this page; no library.
SCRIPT = """
(function () {
  var box = document.getElementById('diagram'); if (!box) return;
  var svg = box.querySelector('svg'), tip = document.getElementById('tip');
  var vb = svg.viewBox.baseVal, home = [vb.x, vb.y, vb.width, vb.height], drag = null;
  function set(x, y, w, h) { svg.setAttribute('viewBox', x + ' ' + y + ' ' + w + ' ' + h); }
  function zoom(f, cx, cy) {
    var r = svg.getBoundingClientRect();
    var px = vb.x + (cx - r.left) / r.width * vb.width, py = vb.y + (cy - r.top) / r.height * vb.height;
    set(px - (px - vb.x) * f, py - (py - vb.y) * f, vb.width * f, vb.height * f);
  }
  svg.removeAttribute('width'); svg.removeAttribute('height');
  box.addEventListener('wheel', function (e) { e.preventDefault();
    zoom(e.deltaY > 0 ? 1.2 : 1 / 1.2, e.clientX, e.clientY); }, {passive: false});
  box.addEventListener('pointerdown', function (e) { drag = [e.clientX, e.clientY, vb.x, vb.y];
    box.setPointerCapture(e.pointerId); });
  box.addEventListener('pointerup', function () { drag = null; });
  box.addEventListener('pointermove', function (e) {
    var r = svg.getBoundingClientRect();
    if (drag) { var s = Math.max(vb.width / r.width, vb.height / r.height);
      set(drag[2] - (e.clientX - drag[0]) * s, drag[3] - (e.clientY - drag[1]) * s, vb.width, vb.height); }
    var a = e.target.closest && e.target.closest('a');
    var t = a && (a.getAttribute('xlink:title') || a.getAttribute('title'));
    if (t && !drag) { var b = box.getBoundingClientRect(); tip.textContent = t;
      tip.style.left = (e.clientX - b.left + 12) + 'px'; tip.style.top = (e.clientY - b.top + 12) + 'px';
      tip.style.display = 'block'; } else { tip.style.display = 'none'; }
  });
  document.getElementById('zin').onclick = function () { var r = svg.getBoundingClientRect();
    zoom(1 / 1.5, r.left + r.width / 2, r.top + r.height / 2); };
  document.getElementById('zout').onclick = function () { var r = svg.getBoundingClientRect();
    zoom(1.5, r.left + r.width / 2, r.top + r.height / 2); };
  document.getElementById('zfit').onclick = function () { set.apply(null, home); };
})();
"""


class ReportUnavailable(RuntimeError):
    """A piece the page needs is missing (matplotlib, Graphviz)."""


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ReportUnavailable("the HTML report plots with matplotlib: pip install "
                                "'topoc[report]'") from None
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "topoc"      # stable ids: byte-identical pages
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt
    return plt


def _svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    _pyplot().close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


#: The pass a traffic line's overlap window lies in (the overlap column says what hides it).
PASS = {"forward": "forward", "param_sync": "forward", "backward": "backward",
        "wgrad": "backward", "grad_sync": "backward"}


def _pass(f, same) -> str:
    """'forward' or 'backward' for a line among look-alikes ``same``: by its window; a line on
    the critical path beside a backward one is the forward one (Megatron's tensor-parallel
    collectives: forward on the critical path, backward behind the weight-gradient GEMMs)."""
    if f.window in PASS:
        return PASS[f.window]
    if not f.window and any(PASS.get(g.window) == "backward" for g in same):
        return "forward"
    return f.window or "critical path"


def _labels(flows) -> list[str]:
    """Each traffic line's name; look-alike lines (same group and collective) carry the pass
    they belong to (forward, backward), or their place when that is the same too."""
    names = [f"{f.dim} {f.collective}" for f in flows]
    out = []
    for i, f in enumerate(flows):
        if names.count(names[i]) == 1:
            out.append(names[i])
        else:
            same = [j for j, n in enumerate(names) if n == names[i]]
            tags = {j: _pass(flows[j], [flows[k] for k in same]) for j in same}
            tag = tags[i]
            if sum(1 for j in same if tags[j] == tag) > 1:
                tag += f" #{[j for j in same if tags[j] == tag].index(i) + 1}"
            out.append(f"{names[i]} ({tag})")
    return out


def _breakdown(page: Page) -> str | None:
    """A horizontal stacked bar: compute, exposed communication per dimension, bubble."""
    r = page.report
    if r.compute is None:
        return None
    plt = _pyplot()
    parts = [("compute", r.compute)]
    parts += sorted((d, t) for d, t in page.exposed.items() if t > 0)
    parts.append(("bubble", r.idle or 0.0))
    fig, ax = plt.subplots(figsize=(5.2, 1.5))
    left = 0.0
    for name, t in parts:
        ax.barh([0], [t], left=left, color=DIM_COLORS.get(name, "#888888"),
                label=f"{name if name in ('compute', 'bubble') else name + ' comm'} "
                      f"{text_report.seconds(t)}")
        left += t
    ax.set_yticks([])
    ax.set_xlabel("seconds per training step")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.7), ncol=2, frameon=False,
              fontsize=8)
    ax.set_title(f"step {text_report.seconds(r.total)}", fontsize=10)
    return _svg(fig)


def _curve_svg(c) -> str:
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.6, 3.2))
    gbs = [b / 1e9 for b in c.busbw]
    ax.plot(c.sizes, gbs, color=DIM_COLORS.get(c.dim, "#444444"),
            label=f"topoc ({c.collective}, {len(c.ranks)} GPUs)")
    for size in c.operating:
        at = min(range(len(c.sizes)), key=lambda i: abs(c.sizes[i] - size))
        ax.axvline(size, color="#555555", linestyle=":", linewidth=1)
        ax.plot([size], [gbs[at]], marker="o", color="black", zorder=4)
        ax.annotate(f"this strategy: {human_size(size)}", (size, gbs[at]),
                    textcoords="offset points", xytext=(-6, -14), ha="right", fontsize=8)
    if c.published:
        ax.scatter([s for s, _ in c.published], [b for _, b in c.published], color="black",
                   marker="x", zorder=3, label="published (nccl-tests)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = [2**k for k in range(10, 34, 3)]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: human_size(v)))
    ax.tick_params(axis="x", labelsize=7, labelrotation=30)
    ax.set_xlabel("size per rank")
    ax.set_ylabel("busbw (GB/s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(f"{c.group} {c.collective}", fontsize=10)
    return _svg(fig)


def _table(head: Sequence[str], rows: Sequence[Sequence], mine: int | None = None) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join((f'<tr class="mine">' if i == mine else "<tr>")
                   + "".join(_cell(c) for c in row) + "</tr>"
                   for i, row in enumerate(rows))
    return f'<div class="scroll"><table><tr>{cells}</tr>{body}</table></div>'


def _cell(c) -> str:
    """A table cell: a value, or (value, class) for a marked one (amber ``warn``)."""
    if isinstance(c, tuple):
        return f'<td class="{c[1]}">{html.escape(str(c[0]))}</td>'
    return f"<td>{html.escape(str(c))}</td>"


def _memory_card(total: float, hbm: float) -> str:
    """Memory against HBM: green when it fits outside the memory model's uncertainty, amber
    ("tight") inside it either side of HBM (``memory.band``: it may not fit, or may fit though
    predicted over), red only when over by more than the uncertainty."""
    kind = fit(total, hbm, MEMORY_MARGIN)
    head = f"{total / 1e9:.1f} of {hbm / 1e9:.0f} GB"
    if kind == FITS:
        return _card("memory per GPU", f"{head} fits", "good")
    if kind == TIGHT:
        where = f"{total / hbm:.0%} of HBM" if total <= hbm else \
            f"{(total - hbm) / 1e9:.1f} GB over HBM"
        return _card(f"memory per GPU ({where}, within the memory model's "
                     f"{MEMORY_MARGIN:.0%} uncertainty)", f"{head} tight", "warn")
    return _card(f"memory per GPU (over by more than the memory model's {MEMORY_MARGIN:.0%} "
                 "uncertainty)", f"{head} does NOT fit", "bad")


def _card(label: str, value: str, tone: str = "") -> str:
    return (f'<div class="card {tone}"><span>{html.escape(label)}</span>'
            f"<b>{html.escape(value)}</b></div>")


def _summary(page: Page) -> str:
    r = page.report
    s = text_report.seconds
    cards = [_card("step time", s(r.total) if r.total is not None else "no compute given"),
             _card("exposed communication", s(r.comm)),
             _card("pipeline bubble", f"{s(r.idle)} ({r.bubble:.1%})" if r.idle is not None
                   else f"{r.bubble:.1%}")]
    if r.mfu is not None:
        cards.append(_card("MFU", f"{r.mfu:.1%}"))
    if r.memory is not None and r.hbm:
        cards.append(_memory_card(r.memory.total, r.hbm))
    plan = page.plan
    if plan is not None and plan.rows:
        fitting = sum(1 for row in plan.rows if row.fits)
        cards.append(_card("rank among topoc plan's mappings",
                           f"#{plan.rank} of {len(plan.rows):,}" if plan.rank else
                           f"not among {len(plan.rows):,}")
                     + f"<!-- {fitting} fit -->")
    limits = "".join(f"<li><b>{html.escape(name)}</b>: limited by "
                     f"{html.escape(b.cls)}, e.g. <code>{html.escape(b.link)}</code></li>"
                     for b, name in zip(page.bottlenecks, _labels(page.bottlenecks)))
    return (f'<section id="summary"><h2>Summary</h2><div class="cards">{"".join(cards)}</div>'
            + (f"<p>The link that limits each traffic line:</p><ul>{limits}</ul>" if limits
               else "") + "</section>")


def _checklist(page: Page) -> list[str]:
    """The seed's seven questions, answered from the finished values."""
    r = page.report
    p = r.strategy
    t = p.training
    if r.detail is not None:
        one = (f"the model's GEMMs run at {r.detail.efficiency:.0%} of the "
               f"{r.peak / 1e12:.0f} TFLOP/s dense peak (fitted on published runs); MFU "
               f"{r.mfu:.1%}")
    elif r.compute is not None:
        one = f"compute is given as {text_report.seconds(r.compute)} per step and GPU"
    else:
        one = "no compute time or model: the file does not say"
    sizes = ", ".join(f"{d} = {n}" for d, n in p.sizes if n > 1) or "one GPU per group"
    moved = sum(f.bytes * f.count for f in r.flows)
    labels = _labels(r.flows)
    often = "; ".join(f"{name} x {f.count}" for name, f in zip(labels, r.flows)) or "-"
    links = "; ".join(f"{b.dim} {b.collective}: {b.cls}" for b in page.bottlenecks) or "-"
    hidden = "; ".join(f"{name}: {f.overlap}" for name, f in zip(labels, r.flows)) or "-"
    balance = [f.note for f in r.flows if f.note]
    if t is not None and t.model.layers % p.size("pp"):
        balance.append(f"{t.model.layers} layers over {p.size('pp')} stages: uneven, the "
                       "heaviest stage sets the pace")
    if t is not None and t.model.experts:
        balance.append(f"expert load imbalance {t.imbalance:g}")
    return [f"Is the single-GPU work efficient? {one}.",
            f"How is the work split? {sizes}, order {', '.join(p.order)}, {r.gpus} GPUs.",
            f"Bytes communicated per iteration: {human(moved, BYTES)} for each GPU, bytes per "
            f"call times calls over {len(r.flows)} traffic lines.",
            f"How often: {often}.",
            f"Which link limits each line: {links}.",
            f"Can it overlap with compute? {hidden}; exposed in all "
            f"{text_report.seconds(r.comm)}.",
            "Is the load balanced? " + ("; ".join(balance) if balance else
                                        "every group of a kind costs the same here") + "."]


def _plan_table(page: Page) -> str | None:
    plan = page.plan
    if plan is None:
        return None
    if not plan.rows:
        return f'<p class="note">{html.escape(plan.note)}</p>'
    head = ["#", "tp", "cp", "ep", "dp", "pp", "mb", "recompute", "v", "sp", "zero", "step s",
            "compute s", "exposed comm s", "bubble s", "memory GB", "fits", "MFU"]
    shown = list(range(min(10, len(plan.rows))))
    if plan.rank and plan.rank > 10:
        shown.append(plan.rank - 1)
    rows = []
    for i in shown:
        row = plan.rows[i]
        c = row.candidate
        rows.append([i + 1, c.tp, c.cp, c.ep, c.dp, c.pp, c.microbatch, c.recompute,
                     c.interleave, "yes" if c.sequence_parallel else "no", c.zero,
                     f"{row.step_time:.2f}", f"{row.compute_time:.2f}", f"{row.comm_time:.2f}",
                     f"{row.bubble_time:.2f}", f"{row.memory_per_gpu / 1e9:.1f}",
                     (("tight" if row.fits else "tight, over"), "warn") if row.tight else
                     "yes" if row.fits else "no",
                     f"{row.mfu:.1%}"])
    mine = shown.index(plan.rank - 1) if plan.rank else None
    return (f"<p>{plan.considered:,} candidates, {len(plan.rows):,} costed, "
            f"{sum(1 for x in plan.rows if x.fits):,} fit; the ten fastest"
            + (", and this strategy's (highlighted)" if mine is not None else "")
            + ":</p>" + _table(head, rows, mine))


def document(page: Page, diagram: bytes | None,
             extra: Sequence[tuple[str, str, str]] = ()) -> str:
    """The page for ``page`` (``compiler.analysis.page.report_page``); ``diagram`` is the
    system's SVG (None: left out). ``extra`` sections (id, heading, inner HTML), such as a
    Pareto or a scaling plot, go after the curves, before the ranked mappings."""
    r = page.report
    title = page.title
    parts = ["<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
             f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>", _summary(page)]
    parts.append('<section id="checklist"><h2>The checklist</h2><ol>' + "".join(
        f"<li>{html.escape(q)}</li>" for q in _checklist(page)) + "</ol></section>")
    if diagram is not None:
        svg = diagram.decode("utf-8")
        svg = svg[svg.index("<svg"):]
        box = re.search(r'viewBox="[-\d.]+ [-\d.]+ ([\d.]+) ([\d.]+)"', svg)
        shape = f' style="aspect-ratio: {box.group(1)} / {box.group(2)}"' if box else ""
        parts.append('<section id="system"><h2>System</h2><div class="tools">'
                     '<button id="zin" title="zoom in">+</button> '
                     '<button id="zout" title="zoom out">&minus;</button> '
                     '<button id="zfit" title="whole picture">fit</button> '
                     '<span class="note">drag to pan, wheel to zoom, hover a box or line for '
                     'its figures</span></div>'
                     f'<div class="diagram" id="diagram"{shape}>{svg}<div id="tip"></div></div>'
                     "</section>")
    rows = text_report._rows(r)
    for row, name in zip(rows, _labels(r.flows)):
        row[0:2] = [name.split(" ", 1)[0], name.split(" ", 1)[1]]
    parts.append('<section id="traffic"><h2>Traffic per training step</h2>'
                 + _table(text_report.HEAD, rows) + "<ul>"
                 + "".join(f"<li>{html.escape(line)}</li>" for line in text_report._summary(r))
                 + "</ul></section>")
    bar = _breakdown(page)
    if bar:
        parts.append(f'<section id="step"><h2>Step time</h2><figure>{bar}</figure></section>')
    if page.curves:
        figs = "".join(
            f"<figure>{_curve_svg(c)}<figcaption>{html.escape(_caption(c))}</figcaption>"
            "</figure>" for c in page.curves)
        crosses = any(c.published for c in page.curves)
        parts.append('<section id="curves"><h2>Bus bandwidth by message size</h2>'
                     f'<div class="plots">{figs}</div><p class="note">busbw as nccl-tests '
                     "defines it; the dot marks the size this strategy moves per call"
                     + ("; crosses mark published all-reduce measurements on as many GPUs of "
                        "the same model in one NVLink domain (library/calibration.csv)"
                        if crosses else "") + ".</p></section>")
    for sid, heading, body in extra:                  # sections other verbs contribute
        parts.append(f'<section id="{html.escape(sid)}"><h2>{html.escape(heading)}</h2>'
                     f"{body}</section>")
    plan_html = _plan_table(page)
    if plan_html:
        parts.append(f'<section id="plan"><h2>Other strategies (topoc plan)</h2>{plan_html}'
                     "</section>")
    parts.append('<section id="warnings"><h2>Warnings</h2><ul>'
                 + ("".join(f"<li>{html.escape(w)}</li>" for w in r.warnings)
                    or "<li>none</li>") + "</ul></section>")
    if diagram is not None:
        parts.append(f"<script>{SCRIPT}</script>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _caption(c) -> str:
    ranks = ", ".join(map(str, c.ranks[:8])) + (" ..." if len(c.ranks) > 8 else "")
    note = f"{c.dim} {c.collective} on {c.group}: ranks {ranks}"
    if c.published:
        note += f"; {len(c.published)} published point(s): {c.source}"
    return note


