"""The ``topoc`` command's first instruction: ``run`` imports the command line only inside its
``try``, so a Ctrl-C at any moment, even while half a second of imports runs, exits 130 without
a traceback (``topoc/__init__.py`` imports nothing of the compiler until it is used)."""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130          # topoc.cli.EXIT_INTERRUPTED: imported from there it would not be light


def run() -> None:
    """Console-script entry point (``topoc``, ``python -m topoc``)."""
    try:
        from .cli import main
        code = main()
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    _exit(code)


def _exit(code: int) -> None:
    """Exit with ``code`` without tearing the interpreter down: the exit handlers run and the
    standard streams are flushed as at a normal exit, but the millions of objects a large
    system is made of are left to the operating system (freeing them one by one, and the
    collector's last pass over them, took seconds at 8,192 NVL72 racks). A stream that cannot
    be flushed (a closed pipe) exits as ``sys.exit`` would have."""
    import atexit
    import os

    try:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:           # noqa: BLE001 - let the normal exit report or absorb it
        sys.exit(code)
    os._exit(code)
