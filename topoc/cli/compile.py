"""``topoc compile FILE [--format summary|json] [-o OUT]``: compile and summarise."""

from __future__ import annotations

import sys

from ..backends import REGISTRY, json_system
from .common import EXIT_OK, add_common, add_failure_options, load, write_output, write_stream


def add_parser(sub) -> None:
    p = sub.add_parser("compile", help="compile a .topo file and summarise it")
    p.add_argument("file")
    p.add_argument("--format", choices=list(REGISTRY), default="summary")
    add_common(p)
    add_failure_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    system = load(args)
    for diag in system.notes:               # W120: the file shadows a library declaration
        print(diag.render(), file=sys.stderr)
    for _, diag in system.skipped:          # W507: a -D size the example block does not fit
        print(diag.render(), file=sys.stderr)
    if args.format == "json":
        # written as it is made: the document of 8,192 NVL72 racks is 4.8 GB of text
        write_stream(json_system.chunks(system), args.output)
    else:
        write_output(REGISTRY[args.format](system), args.output)
    return EXIT_OK
