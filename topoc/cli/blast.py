"""``topoc blast FILE [--parallel P] [--size S] [--top K] [--format text|json] [-o OUT]``:
every failure domain the file implies, ranked by what its failure costs."""

from __future__ import annotations

from ..backends import blast_table
from ..compiler.analysis.blast import blast
from .common import (EXIT_OK, add_common, add_failure_options, count, load, parse_size,
                     strategy_name, write_output)


def add_parser(sub) -> None:
    p = sub.add_parser("blast", help="what each failure domain (GPU, NIC, host, switch, rack) "
                                     "costs when it fails, ranked")
    p.add_argument("file")
    p.add_argument("--parallel", metavar="NAME",
                   help="also the step time of this strategy before and after each failure")
    p.add_argument("--size", default="1GiB", metavar="SIZE",
                   help="the reference world all-reduce (default 1GiB)")
    p.add_argument("--top", type=count(1, 10**6), default=0, metavar="K",
                   help="only the K domain classes of most impact")
    p.add_argument("--format", choices=["text", "json"], default="text")
    add_common(p)
    add_failure_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    system = load(args)
    name = strategy_name(system, args.file, args.parallel, needed=False) \
        if args.parallel else None
    size = parse_size(args.size)
    found = blast(system, name, size, args.top)
    fmt = blast_table.document if args.format == "json" else blast_table.table
    write_output(fmt(system.name, len(system.gpus), size, name, found), args.output)
    return EXIT_OK
