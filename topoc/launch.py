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
    sys.exit(code)
