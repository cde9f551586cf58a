"""``topoc report --format html``: one self-contained page for a strategy: the diagram (inline
SVG), the seed's checklist answered, the traffic table, a step-time breakdown bar, busbw-vs-size
curves per group with the published measurements where they exist, and, for a model, the
ranked table of ``topoc plan``. Plots are matplotlib SVG; the page loads nothing from outside.
"""

from __future__ import annotations

import html
import io

from ..compiler.collectives.cost import CostError, sweep
from ..compiler.ir.system import System
from ..compiler.ir.groups import RankGroup, rank_groups
from ..compiler.analysis.strategy import StepReport, analyse, exposed_by_dim
from . import infer_plot
from . import report as text_report
from ..compiler.base.units import BYTES, human
from ..library import size_bytes

SIZES = [2**k for k in range(10, 34)]          # 1 KiB .. 8 GiB, as nccl-tests sweeps
#: The page runs topoc plan's search only below this many candidates (seconds, not minutes).
PLAN_LIMIT = 50_000
DIM_COLORS = {"compute": "#76b900", "bubble": "#bbbbbb", "tp": "#1f77b4", "cp": "#17becf",
              "ep": "#9467bd", "dp": "#ff7f0e", "edp": "#e377c2", "pp": "#d62728"}
CSS = """
body { font-family: Helvetica, Arial, sans-serif; margin: 24px auto; max-width: 1500px;
       color: #222; }
h1 { font-size: 24px; } h2 { font-size: 19px; margin-top: 32px; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
th { background: #f2f2f2; }
.diagram { overflow: auto; max-height: 900px; border: 1px solid #ddd; }
.diagram svg { max-width: 100%; height: auto; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
.plots figure { margin: 0; } figcaption { font-size: 12px; color: #555; }
ol li { margin: 4px 0; } .note { color: #666; font-size: 12px; }
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


def _breakdown(r: StepReport) -> str | None:
    """A horizontal stacked bar: compute, exposed communication per dimension, bubble."""
    if r.compute is None:
        return None
    plt = _pyplot()
    parts = [("compute", r.compute)]
    parts += sorted((d, t) for d, t in exposed_by_dim(r.flows, r.compute).items() if t > 0)
    parts.append(("bubble", r.idle or 0.0))
    fig, ax = plt.subplots(figsize=(9, 1.6))
    left = 0.0
    for name, t in parts:
        ax.barh([0], [t], left=left, color=DIM_COLORS.get(name, "#888888"),
                label=f"{name if name in ('compute', 'bubble') else name + ' comm'} "
                      f"{text_report.seconds(t)}")
        left += t
    ax.set_yticks([])
    ax.set_xlabel("seconds per training step")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.6), ncol=len(parts), frameon=False,
              fontsize=8)
    ax.set_title(f"step {text_report.seconds(r.total)}", fontsize=10)
    return _svg(fig)


def _curves(system: System, r: StepReport, published: list[dict]) -> list[tuple[str, str]]:
    """One busbw-vs-size plot per distinct (group kind, collective): the cost model's sweep,
    and the published all-reduce points measured on as many GPUs of the same model inside one
    NVLink island (``published`` rows carry ``gpu_model``)."""
    plt = _pyplot()
    loc = system.locality
    seen: dict[tuple[str, str], RankGroup] = {}
    for f in r.flows:
        if f.group_size > 1 and (f.dim, f.collective) not in seen:
            ranks = rank_groups(r.strategy, f.dim)[0]
            seen[f.dim, f.collective] = RankGroup(f"{f.dim}:0", tuple(ranks))
    out = []
    for (dim, coll), group in sorted(seen.items()):
        try:
            costs = sweep(system, group, coll, SIZES)
        except CostError:
            continue
        fig, ax = plt.subplots(figsize=(5.2, 3.4))
        ax.plot([c.size for c in costs], [c.busbw / 1e9 for c in costs], color=DIM_COLORS[dim],
                label=f"topoc ({coll}, {len(group.ranks)} GPUs)")
        models = {system.gpus[i].model.name for i in group.ranks}
        one_island = len({loc.island[i] for i in group.ranks}) == 1
        points = [row for row in published if coll == "allreduce" and one_island and
                  models == {row["gpu_model"]} and int(row["gpus"]) == len(group.ranks)]
        if points:
            ax.scatter([size_bytes(p["size"]) for p in points],
                       [float(p["busbw"]) for p in points], color="black", marker="x", zorder=3,
                       label="published (nccl-tests)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("size per rank (bytes)")
        ax.set_ylabel("busbw (GB/s)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        ax.set_title(f"{dim}:0 {coll}", fontsize=10)
        note = f"{dim} {coll} on {group.name}: ranks {_ranks(group.ranks)}"
        if points:
            note += f"; {len(points)} published point(s): {points[0]['source']}"
        out.append((_svg(fig), note))
    return out


def _ranks(ranks) -> str:
    return ", ".join(map(str, ranks[:8])) + (" ..." if len(ranks) > 8 else "")


def _table(head: list[str], rows: list[list[str]]) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"


def _checklist(system: System, r: StepReport) -> list[str]:
    """The seed's seven questions, answered from the report."""
    p = r.strategy
    t = p.training
    flows = [f for f in r.flows if f.cost]
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
    often = "; ".join(f"{f.dim} {f.collective} x {f.count}" for f in r.flows) or "-"
    links = "; ".join(f"{f.dim}: {', '.join(f.classes)}" for f in flows) or "-"
    hidden = "; ".join(f"{f.dim} {f.collective}: {f.overlap}" for f in r.flows) or "-"
    balance = [f.note for f in r.flows if f.note]
    if t is not None and t.model.layers % p.size("pp"):
        balance.append(f"{t.model.layers} layers over {p.size('pp')} stages: uneven, the "
                       "heaviest stage sets the pace")
    if t is not None and t.model.experts:
        balance.append(f"expert load imbalance {t.imbalance:g}")
    return [f"Is the single-GPU work efficient? {one}.",
            f"How is the work split? {sizes}, order {', '.join(p.order)}, "
            f"{r.gpus} GPUs.",
            f"Bytes communicated per iteration: {human(moved, BYTES)} for each GPU, bytes per "
            f"call times calls over {len(r.flows)} traffic lines.",
            f"How often: {often}.",
            f"Which links: {links}.",
            f"Can it overlap with compute? {hidden}; exposed in all "
            f"{text_report.seconds(r.comm)}.",
            "Is the load balanced? " + ("; ".join(balance) if balance else
                                        "every group of a kind costs the same here") + "."]


def _plan_table(system: System, r: StepReport) -> str | None:
    t = r.strategy.training
    if t is None:
        return None
    from ..compiler.analysis.plan import PlanUsageError, enumerate_candidates, plan
    if len(enumerate_candidates(t.model, r.gpus, t.batch, {})) > PLAN_LIMIT:
        return (f"<p class=\"note\">{r.gpus} GPUs give more than {PLAN_LIMIT:,} candidate "
                f"mappings: run <code>topoc plan FILE --model {t.model.name} --batch "
                f"{t.batch}</code> with some dimensions fixed.</p>")
    try:
        result = plan(system, t.model, t, gpus=r.gpus, jobs=1)
    except PlanUsageError as exc:
        return f"<p class=\"note\">{html.escape(str(exc))}</p>"
    head = ["#", "tp", "cp", "ep", "dp", "pp", "mb", "recompute", "v", "sp", "step s",
            "compute s", "exposed comm s", "bubble s", "memory GB", "fits", "MFU"]
    rows = []
    for i, row in enumerate(result.rows[:10]):
        c = row.candidate
        rows.append([i + 1, c.tp, c.cp, c.ep, c.dp, c.pp, c.microbatch, c.recompute,
                     c.interleave, "yes" if c.sequence_parallel else "no",
                     f"{row.step_time:.2f}", f"{row.compute_time:.2f}", f"{row.comm_time:.2f}",
                     f"{row.bubble_time:.2f}", f"{row.memory_per_gpu / 1e9:.1f}",
                     "yes" if row.fits else "no", f"{row.mfu:.1%}"])
    return (f"<p>{result.considered:,} candidates, {len(result.rows):,} costed, "
            f"{sum(1 for x in result.rows if x.fits):,} fit; the ten fastest:</p>"
            + _table(head, rows))


def document(system: System, name: str, diagram: bytes | None,
             published: list[dict] = ()) -> str:
    """The page for strategy ``name``; ``diagram`` is the system's SVG (None: left out);
    ``published`` are calibration rows with the ``gpu_model`` they were measured on."""
    r = analyse(system, name)
    title = text_report._title(r, system.name)
    rows = text_report._rows(r)
    parts = [f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
             f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    if diagram is not None:
        svg = diagram.decode("utf-8")
        svg = svg[svg.index("<svg"):]
        parts.append(f"<h2>System</h2><div class=\"diagram\">{svg}</div>")
    parts.append("<h2>The checklist</h2><ol>" + "".join(
        f"<li>{html.escape(q)}</li>" for q in _checklist(system, r)) + "</ol>")
    parts.append("<h2>Traffic per training step</h2>" + _table(text_report.HEAD, rows))
    parts.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>"
                                  for line in text_report._summary(r)) + "</ul>")
    bar = _breakdown(r)
    if bar:
        parts.append(f"<h2>Step time</h2><figure>{bar}</figure>")
    curves = _curves(system, r, list(published))
    if curves:
        figs = "".join(f"<figure>{svg}<figcaption>{html.escape(note)}</figcaption></figure>"
                       for svg, note in curves)
        parts.append(f"<h2>Bus bandwidth by message size</h2><div class=\"plots\">{figs}</div>"
                     "<p class=\"note\">busbw as nccl-tests defines it; crosses mark published "
                     "all-reduce measurements on as many GPUs of the same model in one NVLink "
                     "domain (library/calibration.csv).</p>")
    plan_html = _plan_table(system, r)
    if plan_html:
        parts.append(f"<h2>Other strategies (topoc plan)</h2>{plan_html}")
    serving = infer_plot.section(system, getattr(r.strategy.training, "model", None), r.gpus,
                                 _pyplot, _svg)
    if serving:
        parts.append(serving)
    parts.append("<h2>Warnings</h2><ul>" + ("".join(f"<li>{html.escape(w)}</li>"
                                                   for w in r.warnings) or "<li>none</li>")
                 + "</ul>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
