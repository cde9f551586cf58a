"""``topoc report FILE --parallel NAME [--format text|markdown|html]``: a strategy's step."""

from __future__ import annotations

from ..backends import render as r
from ..backends import blast_table, infer_plot, report, report_html, scaling_plot
from ..backends.heat import heat_map
from ..compiler.analysis.blast import blast
from ..compiler.analysis.strategy import analyse
from ..compiler.ir.system import System
from ..compiler.analysis.infer import serving_view
from ..compiler.analysis.plan import PlanUsageError
from ..compiler.analysis.scaling import scaling
from ..compiler.analysis.page import published_rows, report_page
from ..compiler.training.memory import sharding
from .common import (add_failure_options, EXIT_OK, UsageError, add_common, load, scaling_range, strategy_name,
                     write_output)


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="analyse a parallel strategy's training step")
    p.add_argument("file")
    p.add_argument("--parallel", metavar="NAME", help="the strategy (needed when several)")
    p.add_argument("--format", choices=["text", "markdown", "html"], default="text",
                   help="html: one self-contained page with the diagram and plots")
    p.add_argument("--scaling", metavar="LO..HI", help="html: add the scaling section (topoc "
                   "plan --scaling for the strategy's model and batch from LO to HI GPUs)")
    p.add_argument("--blast", action="store_true", help="html: add the blast radius section "
                   "(topoc blast's ranked failure domains for the strategy, coloured by impact)")
    add_common(p)
    add_failure_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    system = load(args)
    name = strategy_name(system, args.file, args.parallel)
    span = scaling_range(args.scaling, len(system.gpus)) if args.scaling else None
    if span and args.format != "html":
        raise UsageError("--scaling draws a section of the HTML report: add --format html "
                         "(or run topoc plan --scaling for a table)")
    if args.blast and args.format != "html":
        raise UsageError("--blast draws a section of the HTML report: add --format html "
                         "(or run topoc blast for a table)")
    if args.format == "html":
        write_output(_html_report(system, name, span, args.blast), args.output)
    else:
        write_output(report.render(analyse(system, name), system.name, args.format), args.output)
    return EXIT_OK


def _html_report(system: System, name: str, span: tuple[int, int] | None = None,
                 with_blast: bool = False) -> str:
    """The self-contained page: the diagram (GPUs coloured by tp group), plots, tables; with
    ``span`` (LO, HI) also the scaling section, with ``with_blast`` the blast radius."""
    try:
        found = blast(system, name, BLAST_SIZE) if with_blast else None
        # with the blast radius the diagram is its heat map, else the tp groups
        opts = r.Options(parallel=name, color="tp", heat=heat_map(found) if found else (),
                         view=r.page_view(system))
        svg, _ = r.render(system, "svg", opts)
        page = report_page(system, name, published_rows())
        extra = _serving(system, page) + (_scaling(system, page, span) if span else ()) \
            + (_blast(found, name) if with_blast else ())
        return report_html.document(page, svg, extra)
    except (r.DotMissing, r.TooLarge, report_html.ReportUnavailable) as exc:
        raise UsageError(str(exc)) from None


def _serving(system: System, page) -> tuple[tuple[str, str, str], ...]:
    """The serving section (``topoc infer``'s Pareto front) for a strategy that names a model."""
    r = page.report
    heading = "Serving (topoc infer)"
    view = serving_view(system, getattr(r.strategy.training, "model", None), r.gpus)
    html = infer_plot.section(view, report_html._pyplot, report_html._svg)
    if not html:
        return ()
    return (("serving", heading, html),)


#: The blast radius section's reference all-reduce, as ``topoc blast``'s default.
BLAST_SIZE = 2**30


def _blast(found, name: str) -> tuple[tuple[str, str, str], ...]:
    """The blast radius section: ``topoc blast FILE --parallel NAME``'s ranked classes."""
    return (("blast", f"Blast radius (topoc blast --parallel {name})",
             blast_table.html_section(found, BLAST_SIZE, name)),)


def _scaling(system: System, page, span: tuple[int, int]) -> tuple[tuple[str, str, str], ...]:
    """The scaling section (``topoc plan --scaling``) for the strategy's model and training
    options; a usage error for a strategy that names no model."""
    t = page.report.strategy.training
    if t is None:
        raise UsageError("--scaling needs a strategy that names a model (model = ... in its "
                         "parallel block)")
    try:
        # the block's sharding is fixed as plan's --fsdp, --distributed-optimizer, --zero fix it
        zero = sharding(t)
        curve = scaling(system, t.model, t, *span, fixed={"zero": zero} if zero else None)
    except PlanUsageError as exc:
        raise UsageError(str(exc)) from None
    return (("scaling", f"Scaling (topoc plan --scaling {span[0]}..{span[1]})",
             scaling_plot.section(curve)),)
