"""The ``topoc`` command line (design.md section 3).

Exit codes: 0 success, 1 the input has errors, 2 a usage or I/O error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import topoc

from .backends import REGISTRY
from .compiler.diagnostics import CompileError, Diagnostic, render_all, suggest

EXIT_OK, EXIT_INPUT, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A bad command line or an unreadable/unwritable file: exit code 2."""


def _color(stream) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


def report(diagnostics: Sequence[Diagnostic], stream=None) -> None:
    """Print diagnostics as text (colour only on a terminal, never with NO_COLOR)."""
    stream = stream or sys.stderr
    text = render_all(diagnostics)
    if _color(stream):
        text = text.replace(" error: ", " \x1b[1;31merror\x1b[0m: ") \
                   .replace(" warning: ", " \x1b[1;33mwarning\x1b[0m: ")
    print(text, file=stream)


def write_output(text: str | bytes, out: str | None) -> None:
    """Write to stdout ('-' or None) or atomically to a file: temp file, then rename."""
    if out in (None, "-"):
        if isinstance(text, bytes):
            sys.stdout.buffer.write(text)
        else:
            sys.stdout.write(text)
        return
    target = Path(out)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"cannot write {out}: folder {folder} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text if isinstance(text, bytes) else text.encode("utf-8"))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)   # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def parse_defines(items: Sequence[str]) -> dict[str, int]:
    """``-D racks=20`` pairs as a dict; values are whole numbers."""
    out: dict[str, int] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier():
            raise UsageError(f"-D {item}: expected NAME=VALUE, as in -D racks=20")
        try:
            out[name.strip()] = int(value.strip().replace("_", ""))
        except ValueError:
            raise UsageError(f"-D {item}: '{value}' is not a whole number") from None
    return out


def _load(args) -> topoc.System:
    try:
        return topoc.load(args.file, parse_defines(args.define), args.import_root or ())
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {args.file}: {exc}") from None


def cmd_compile(args) -> int:
    """topoc compile FILE [--format summary|json] [-o OUT]."""
    system = _load(args)
    write_output(REGISTRY[args.format](system), args.output)
    return EXIT_OK


def cmd_lint(args) -> int:
    """topoc lint FILE... : errors for now; the rule catalogue adds warnings."""
    defines = parse_defines(args.define)
    found: list[Diagnostic] = []
    for file in args.files:
        try:
            found += topoc.check(file, defines, args.import_root or ())
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {file}: {exc}") from None
    if args.format == "json":
        doc = {"schema": "topoc.lint/1", "diagnostics": [
            {"path": d.span.path, "line": d.span.line, "col": d.span.col, "code": d.code,
             "severity": d.severity, "message": d.message} for d in found]}
        write_output(json.dumps(doc, indent=1) + "\n", args.output)
    elif found:
        report(found, sys.stdout if args.output in (None, "-") else None)
    failing = any(d.severity == "error" for d in found)
    return EXIT_INPUT if failing else EXIT_OK


def cmd_render(args) -> int:
    """topoc render FILE -o OUT.{svg,png,pdf,dot} [--view V] [--parallel P --color D]."""
    from .backends import render as r
    fmt = Path(args.output).suffix.lstrip(".").lower() if args.output != "-" else "dot"
    if fmt not in ("dot", "gv", "svg", "png", "pdf"):
        raise UsageError(f"cannot tell the format of '{args.output}': use a .svg, .png, .pdf or "
                         ".dot file")
    system = _load(args)
    if args.parallel:
        names = [p.name for p in system.parallels]
        if args.parallel not in names:
            raise UsageError(f"no parallel block '{args.parallel}' in {args.file}"
                             + suggest(args.parallel, names)
                             + (f" (it has {', '.join(names)})" if names else ""))
    elif args.color:
        raise UsageError("--color needs --parallel NAME")
    opts = r.Options(args.view, args.parallel, args.color or "tp", tuple(args.highlight or ()))
    try:
        data, view = r.render(system, "dot" if fmt == "gv" else fmt, opts)
    except r.DotMissing as exc:
        raise UsageError(str(exc)) from None
    if args.view is None:
        print(f"topoc: render: drew the {view} view ({len(system.devices)} devices, "
              f"{len(system.links)} links); --view {'|'.join(r.VIEWS)} picks another",
              file=sys.stderr)
    write_output(data, args.output)
    return EXIT_OK


def _common(p: argparse.ArgumentParser, output_required: bool = False) -> None:
    p.add_argument("-D", "--define", action="append", metavar="NAME=VALUE",
                   help="override a parameter of the file's system, e.g. -D racks=20")
    p.add_argument("--import-root", action="append", metavar="DIR",
                   help="also allow imports from DIR (besides the file's folder and the library)")
    p.add_argument("-o", "--output", metavar="PATH", required=output_required,
                   help="write here (atomically); '-' is stdout")


def build_parser() -> argparse.ArgumentParser:
    """The argparse tree of every verb."""
    ap = argparse.ArgumentParser(prog="topoc", description="Compile, check and draw GPU system "
                                 "topologies written in the .topo language.")
    ap.add_argument("--version", action="version", version=f"topoc {topoc.__version__}")
    sub = ap.add_subparsers(dest="verb", metavar="VERB")
    p = sub.add_parser("compile", help="compile a .topo file and summarise it")
    p.add_argument("file")
    p.add_argument("--format", choices=["summary", "json"], default="summary")
    _common(p)
    p.set_defaults(func=cmd_compile)
    p = sub.add_parser("lint", help="check .topo files and report problems")
    p.add_argument("files", nargs="+")
    p.add_argument("--format", choices=["text", "json"], default="text")
    _common(p)
    p.set_defaults(func=cmd_lint)
    p = sub.add_parser("render", help="draw the system with Graphviz")
    p.add_argument("file")
    p.add_argument("--view", choices=["physical", "logical", "racks"],
                   help="default: the most detailed view that stays legible")
    p.add_argument("--parallel", metavar="NAME", help="colour GPUs by the groups of this strategy")
    p.add_argument("--color", choices=["tp", "cp", "ep", "dp", "pp"], help="which groups (tp)")
    p.add_argument("--highlight", action="append", metavar="ID|CLASS",
                   help="emphasise a device (or everything under an id) or a link class")
    _common(p, output_required=True)
    p.set_defaults(func=cmd_render)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of raising SystemExit for errors."""
    ap = build_parser()
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        ap.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.func(args)
    except CompileError as exc:
        report(exc.diagnostics)
        return EXIT_INPUT
    except UsageError as exc:
        print(f"topoc: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except RecursionError:
        print("topoc: error: input nested too deeply", file=sys.stderr)
        return EXIT_INPUT


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
