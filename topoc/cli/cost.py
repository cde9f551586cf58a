"""``topoc cost FILE (--parallel P [--group KIND] | --ranks LIST | --group world) ...``:
predicted collective times, algbw and busbw over a size sweep."""

from __future__ import annotations

from ..backends import cost_table
from ..compiler.collectives.cost import CostError, sweep
from ..compiler.collectives.orders import COSTED_ALGORITHMS
from ..compiler.collectives.tuning import PROTOCOLS
from ..compiler.ir.system import COLLECTIVES, System
from .common import (EXIT_OK, UsageError, add_common, add_group_options, fail, load, parse_sizes,
                     selected_group, strategy_name, write_output)

DEFAULT_SIZES = "8B..8GiB"


def add_parser(sub) -> None:
    p = sub.add_parser("cost", help="predict collective times, algbw and busbw (a sweep)")
    p.add_argument("file")
    add_group_options(p, "the strategy; alone: cost its traffic", "tp:0, dp:3, ... or world")
    p.add_argument("--collective", choices=list(COLLECTIVES),
                   help="default allreduce (with --parallel alone: the traffic's own)")
    p.add_argument("--sizes", metavar="SIZES", help=f"{DEFAULT_SIZES} (doubling; the default) "
                   "or a list 32KiB,1MiB; nccl-tests' 1G, 64M, 8K mean GiB, MiB, KiB")
    p.add_argument("--algorithm", default="auto", choices=["auto", *COSTED_ALGORITHMS],
                   help="default: the fastest of NCCL's; nvlstree is NVLS in each island and a "
                   "tree between; hierarchical is topoc's own")
    p.add_argument("--protocol", choices=list(PROTOCOLS),
                   help="default: the fastest, as NCCL picks")
    p.add_argument("--format", choices=list(cost_table.FORMATS), default="table")
    add_common(p)
    p.set_defaults(func=run)


def run(args) -> int:
    sizes = parse_sizes(args.sizes) if args.sizes else None     # before the slow part
    system = load(args)
    strategy_only = args.parallel and not args.group and not args.ranks
    if strategy_only:
        strategy_name(system, args.file, args.parallel)
    else:
        group = selected_group(system, args)
    try:
        if strategy_only:
            rows = _strategy_rows(system, args, sizes)
        else:
            rows = sweep(system, group, args.collective or "allreduce",
                         sizes or parse_sizes(DEFAULT_SIZES), args.algorithm, args.protocol)
    except (CostError, KeyError) as exc:
        return fail(args.file, exc.args[0] if isinstance(exc, KeyError) else exc)
    title = f"topoc cost {args.file}: predicted times (NCCL-style model, docs/cost.md)"
    write_output(cost_table.render(rows, args.format, title), args.output)
    return EXIT_OK


def _strategy_rows(system: System, args, sizes):
    """--parallel NAME alone: one row per distinct traffic line (a model's forward and backward
    collectives of one size are one row), on the first group of its kind."""
    strategy = system.parallel(args.parallel)
    if not strategy.flows:
        raise UsageError(f"{args.file}: parallel block '{args.parallel}' has no traffic; name a "
                         "--group")
    rows = []
    seen = set()
    for flow in strategy.flows:
        if args.collective and flow.collective != args.collective or \
                (flow.dim, flow.collective, flow.bytes) in seen:
            continue
        seen.add((flow.dim, flow.collective, flow.bytes))
        group = selected_group(system, args, flow.dim)
        if len(group.ranks) > 1:
            rows += sweep(system, group, flow.collective, sizes or [flow.bytes], args.algorithm,
                          args.protocol)
    return rows
