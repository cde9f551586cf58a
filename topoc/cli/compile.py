"""``topoc compile FILE [--format summary|json] [-o OUT]``: compile and summarise."""

from __future__ import annotations

import sys

from ..backends import REGISTRY
from .common import add_failure_options, EXIT_OK, add_common, load, write_output


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
    write_output(REGISTRY[args.format](system), args.output)
    return EXIT_OK
