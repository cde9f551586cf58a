"""``topoc fmt FILE... [--check] [--diff] [--stdout]``; FILE '-' reads standard input and
writes the result to standard output."""

from __future__ import annotations

import difflib
import sys

from ..compiler.base.diagnostics import CompileError
from ..compiler.base.text import visible
from ..compiler.lang.fmt import fmt
from .common import EXIT_INPUT, EXIT_OK, EXIT_USAGE, UsageError, read_stdin, read_text, report, write_output


def add_parser(sub) -> None:
    p = sub.add_parser("fmt", help="rewrite .topo files in the canonical layout")
    p.add_argument("files", nargs="+")
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file "
                   "would change")
    p.add_argument("--diff", action="store_true", help="change nothing; print a unified diff "
                   "of what would change (with --check, exit 1 if anything would)")
    p.add_argument("--stdout", action="store_true", help="print the formatted text instead of "
                   "rewriting the files ('-' as FILE reads standard input and does this)")
    p.set_defaults(func=run)


def run(args) -> int:
    changed, failed, unreadable = [], [], 0
    for file in args.files:
        try:
            text = read_stdin() if file == "-" else read_text(file)
        except UsageError as exc:           # one unreadable file: say so, go on with the rest
            print(f"topoc: error: {visible(str(exc))}", file=sys.stderr)
            unreadable += 1
            continue
        name = "<stdin>" if file == "-" else file
        try:
            new = fmt(text, name)
        except CompileError as exc:
            report(exc.diagnostics)
            failed.append(file)
            continue
        if args.diff and new != text:
            sys.stdout.writelines(difflib.unified_diff(
                text.splitlines(keepends=True), new.splitlines(keepends=True),
                f"{name} (original)", f"{name} (formatted)"))
        elif (args.stdout or file == "-") and not args.check:
            sys.stdout.write(new)
        if new != text:
            changed.append(name)
            if not (args.check or args.diff or args.stdout or file == "-"):
                write_output(new, file)
    if not (args.stdout and not args.check):
        verb = "would reformat" if args.check or args.diff else "reformatted"
        for name in changed:
            if name != "<stdin>" or args.check:
                print(f"{verb} {visible(name)}", file=sys.stderr)
    if unreadable:
        return EXIT_USAGE
    if failed or (args.check and changed):
        return EXIT_INPUT
    return EXIT_OK
