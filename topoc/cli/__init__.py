"""The ``topoc`` command line (docs/contracts.md): one module per verb, each with
``add_parser(sub)`` and ``run(args) -> int``; what they share is in ``common``.

Exit codes, the same for every verb: 0 success; 1 the input has errors, findings at the failing
level, or the file cannot serve the request; 2 usage or I/O (``common`` says which is which).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ..compiler.base.diagnostics import CompileError
from ..compiler.base.text import visible
from ..compiler.base.version import VERSION
from .common import EXIT_INPUT, EXIT_OK, EXIT_USAGE, UsageError, parse_size, report as print_diagnostics

__all__ = ["EXIT_INPUT", "EXIT_OK", "EXIT_USAGE", "build_parser", "main", "parse_size"]

#: Ctrl-C: quietly, as a shell expects (128 + 2); topoc.launch, the entry point, exits so too.
EXIT_INTERRUPTED = 130

#: The verbs in the order ``topoc --help`` lists them, each with its module of this package.
VERBS = (("compile", "compile"), ("lint", "lint"), ("export", "export"), ("import", "imports"),
         ("diff", "diff"), ("fmt", "fmt"), ("render", "render"), ("schedule", "schedule"),
         ("cost", "cost"), ("report", "report"), ("plan", "plan"), ("infer", "infer"),
         ("blast", "blast"), ("reliability", "reliability"), ("library", "library"),
         ("lsp", "lsp"))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argparse tree of every verb, or of the verb ``only`` alone: a call that names its
    verb first imports that verb's module and no other (each verb's imports are a fraction of
    a second, paid by every call when all were imported)."""
    ap = argparse.ArgumentParser(prog="topoc", description="Compile, check and draw GPU system "
                                 "topologies written in the .topo language.")
    ap.add_argument("--version", action="version", version=f"topoc {VERSION}")
    sub = ap.add_subparsers(dest="verb", metavar="VERB")
    for verb, module in VERBS:
        if only is None or verb == only:
            importlib.import_module(f"{__name__}.{module}").add_parser(sub)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of raising SystemExit for errors."""
    argv = sys.argv[1:] if argv is None else list(argv)
    ap = build_parser(argv[0] if argv and argv[0] in dict(VERBS) else None)
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        ap.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return args.func(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED             # Ctrl-C: quietly, as a shell expects (128 + 2)
    except CompileError as exc:
        print_diagnostics(exc.diagnostics)
        return EXIT_INPUT
    except UsageError as exc:
        print(f"topoc: error: {visible(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except OSError as exc:                  # an I/O error no verb foresaw: a message, exit 2
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"topoc: error: {visible(where + str(exc.strerror or exc))}", file=sys.stderr)
        return EXIT_USAGE
    except RecursionError:
        print("topoc: error: input nested too deeply", file=sys.stderr)
        return EXIT_INPUT
    except MemoryError:
        # The last resort behind the limits checked before the work (E292's memory estimate,
        # docs/scale.md): the work's objects are freed as the exception unwinds, so there is
        # memory to say so; outputs are written whole or not at all, so -o is untouched.
        print("topoc: error: out of memory: this input needs more memory than the machine "
              "gives this process (docs/scale.md, Limits)", file=sys.stderr)
        return EXIT_INPUT
