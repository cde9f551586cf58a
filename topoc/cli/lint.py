"""``topoc lint FILE... [--format F] [--select CODES] [--ignore CODES] [--strict]``."""

from __future__ import annotations

import sys
from pathlib import Path

from ..backends import lint_report
from ..compiler.base.diagnostics import Diagnostic
from ..compiler.base.version import VERSION
from ..compiler.lint.lint import ConfigError, check_codes, find_config, lint_file
from .common import (EXIT_INPUT, EXIT_OK, UsageError, add_common, cache_notes, color, paint,
                     parse_defines, write_output)

FORMATS = {"text": lint_report.text, "json": lint_report.as_json, "github": lint_report.github,
           "sarif": lambda found: lint_report.sarif(found, VERSION)}


def add_parser(sub) -> None:
    p = sub.add_parser("lint", help="check .topo files and report problems")
    p.add_argument("files", nargs="+")
    p.add_argument("--format", choices=list(FORMATS), default="text")
    p.add_argument("--select", metavar="CODES", help="only these codes or prefixes: W4,W501")
    p.add_argument("--ignore", metavar="CODES", help="skip these codes or prefixes")
    p.add_argument("--strict", action="store_true", help="warnings fail the run too")
    add_common(p)
    p.set_defaults(func=run)


def run(args) -> int:
    select = [c.strip() for c in (args.select or "").split(",") if c.strip()]
    ignore = [c.strip() for c in (args.ignore or "").split(",") if c.strip()]
    defines = parse_defines(args.define)
    found: list[Diagnostic] = []
    strict = args.strict
    try:
        check_codes(select, "--select")
        check_codes(ignore, "--ignore")
        for file in args.files:
            config = find_config(Path(file).resolve()).merged(select, ignore, args.strict)
            strict = strict or config.strict
            # an unreadable file is its own finding (E105): every other file is still linted
            # and every format is still written, so CI keeps all results
            notes: list[str] = []
            found += lint_file(file, config, defines, args.import_root or (),
                               cache=not args.no_cache, notes=notes)
            cache_notes(notes)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    out = FORMATS[args.format](found)
    if out or args.format != "text":
        to_terminal = args.output in (None, "-") and color(sys.stdout)
        write_output(paint(out) if args.format == "text" and to_terminal else out, args.output)
    failing = {"error", "warning"} if strict else {"error"}
    return EXIT_INPUT if any(d.severity in failing for d in found) else EXIT_OK
