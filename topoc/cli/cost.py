"""``topoc cost FILE (--parallel P [--group KIND] | --ranks LIST | --group world) ...``:
predicted collective times, algbw and busbw over a size sweep."""

from __future__ import annotations

import sys

from ..backends import cost_table
from ..compiler.collectives import algos
from ..compiler.collectives.cost import CostError
from ..compiler.collectives.coster import sweep
from ..compiler.collectives.tuning import PROTOCOLS
from ..compiler.collectives.transports import UnknownPlugin, plugin_release
from ..compiler.collectives.versions import LATEST, UnknownVersion, nccl as nccl_profile
from ..compiler.ir.system import COLLECTIVES, System
from .common import (add_failure_options, EXIT_OK, UsageError, add_common, add_group_options, fail, load, parse_sizes,
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
    p.add_argument("--algorithm", default="auto", choices=["auto", "fastest", *algos.REGISTRY],
                   help="auto (the default): what NCCL would run, its tuner plugin's pick "
                   "included; fastest: the least predicted time among NCCL's algorithms; or "
                   "one by name (nvlstree is NVLS in each island and a tree between; "
                   "hierarchical is topoc's own); docs/cost.md")
    p.add_argument("--protocol", choices=list(PROTOCOLS),
                   help="default: the fastest, as NCCL picks")
    p.add_argument("--nccl", metavar="VERSION", default=LATEST,
                   help=f"the NCCL release whose algorithms, tables and launch cost apply: 2.10 "
                   f"and later, e.g. 2.17, 2.21, 2.23, 2.27 (default {LATEST}, the latest "
                   f"profile; before 2.18 with 2.18's tables and a note)")
    p.add_argument("--net-plugin", metavar="VERSION",
                   help="the net plugin's release (aws-ofi-nccl on EFA: 1.7 and later, e.g. "
                   "1.7.3): its NCCL settings and whether its tuner runs (default: the latest)")
    p.add_argument("--cuda-graph", action="store_true",
                   help="cost CUDA-graph launches (nccl-tests -G): a smaller fixed cost per call")
    p.add_argument("--format", choices=list(cost_table.FORMATS), default="table")
    add_common(p)
    add_failure_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    sizes = parse_sizes(args.sizes) if args.sizes else None     # before the slow part
    try:
        nccl_profile(args.nccl)
    except UnknownVersion as exc:
        raise UsageError(f"--nccl: {exc}") from None
    if args.net_plugin:
        try:
            plugin_release(args.net_plugin)
        except UnknownPlugin as exc:
            raise UsageError(f"--net-plugin: {exc}") from None
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
                         sizes or parse_sizes(DEFAULT_SIZES), args.algorithm, args.protocol,
                         nccl=args.nccl, graph=args.cuda_graph,
                         plugin=args.net_plugin)
    except (CostError, KeyError) as exc:
        return fail(args.file, exc.args[0] if isinstance(exc, KeyError) else exc)
    plugin = f", aws-ofi-nccl {args.net_plugin}" if args.net_plugin else ""
    title = (f"topoc cost {args.file}: predicted times (NCCL {nccl_profile(args.nccl).version} "
             f"model{plugin}{', CUDA graphs' if args.cuda_graph else ''}, docs/cost.md)")
    note = nccl_profile(args.nccl).note
    if note and args.format != "table":
        print(f"topoc cost: note: {note}", file=sys.stderr)
    write_output(cost_table.render(rows, args.format, title, [note] if note else []),
                 args.output)
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
                          args.protocol, nccl=args.nccl, graph=args.cuda_graph,
                         plugin=args.net_plugin)
    return rows
