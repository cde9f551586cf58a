"""``topoc report FILE --parallel NAME [--format text|markdown|html]``: a strategy's step."""

from __future__ import annotations

from ..backends import render as r
from ..backends import infer_plot, report, report_html
from ..compiler.analysis.strategy import analyse
from ..compiler.ir.system import System
from ..compiler.analysis.infer import serving_view
from ..compiler.analysis.page import published_rows, report_page
from .common import EXIT_OK, UsageError, add_common, load, strategy_name, write_output


def add_parser(sub) -> None:
    p = sub.add_parser("report", help="analyse a parallel strategy's training step")
    p.add_argument("file")
    p.add_argument("--parallel", metavar="NAME", help="the strategy (needed when several)")
    p.add_argument("--format", choices=["text", "markdown", "html"], default="text",
                   help="html: one self-contained page with the diagram and plots")
    add_common(p)
    p.set_defaults(func=run)


def run(args) -> int:
    system = load(args)
    name = strategy_name(system, args.file, args.parallel)
    if args.format == "html":
        write_output(_html_report(system, name), args.output)
    else:
        write_output(report.render(analyse(system, name), system.name, args.format), args.output)
    return EXIT_OK


def _html_report(system: System, name: str) -> str:
    """The self-contained page: the diagram (GPUs coloured by tp group), plots, tables."""
    try:
        svg, _ = r.render(system, "svg", r.Options(parallel=name, color="tp"))
        page = report_page(system, name, published_rows())
        return report_html.document(page, svg, _serving(system, page))
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
