"""``topoc library [--format md] [-o OUT]``: the bundled library's reference (every device,
link type, group and model with its figures and source), the file ``docs/library.md`` is."""

from __future__ import annotations

from ..backends.library_doc import render
from .common import EXIT_OK, write_output


def add_parser(sub) -> None:
    p = sub.add_parser("library", help="list the bundled library's devices, links, groups "
                       "and models with their figures and sources (docs/library.md)")
    p.add_argument("--format", choices=("md",), default="md",
                   help="md: Markdown, as docs/library.md (the only format)")
    p.add_argument("-o", "--output", help="write to this file instead of standard output")
    p.set_defaults(func=run)


def run(args) -> int:
    write_output(render(), args.output)
    return EXIT_OK
