"""``topoc fmt FILE... [--check] [--diff] [--stdout]``; FILE '-' reads standard input and
writes the result to standard output."""

from __future__ import annotations

import difflib
import os
import stat
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


def _regular(file: str) -> None:
    """UsageError unless ``file`` is a regular file (a symbolic link to one is fine): a FIFO
    would block the read forever, a device is nothing to format."""
    try:
        st = os.stat(file)
    except OSError:
        return                              # read_text says why, as for any unreadable file
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a pipe or device)"
        raise UsageError(f"{file}: {kind}; fmt formats files (use '-' for standard input)")


def _rewrite(file: str, text: str) -> None:
    """Write the formatted text back: atomically (a new file renamed over it) unless the file
    has other hard links, which a rename would break: then in place, so every link sees it."""
    try:
        st = os.stat(file)
    except OSError:
        st = None
    if st is None or st.st_nlink < 2 or not stat.S_ISREG(st.st_mode):
        write_output(text, file)
        return
    if not st.st_mode & 0o222:
        raise UsageError(f"cannot write {file}: the file is read-only (make it writable first)")
    try:
        with open(file, "r+b") as f:
            f.write(text.encode("utf-8"))
            f.truncate()
    except OSError as exc:
        raise UsageError(f"cannot write {file}: {exc.strerror or exc}") from None


def run(args) -> int:
    changed, failed, unreadable = [], [], 0
    for file in args.files:
        try:
            if file != "-":
                _regular(file)
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
                _rewrite(file, new)
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
