"""``topoc lsp``: the language server on stdio (diagnostics, hover, definition, completion,
formatting)."""

from __future__ import annotations

import sys

from .common import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("lsp", help="run the .topo language server on stdio (for editors)")
    p.set_defaults(func=run)


def run(args) -> int:
    from .. import lsp      # pygls is an extra: imported only when the server runs
    try:
        server = lsp.build_server()
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None
    from ..lsp_io import serve
    try:
        return serve(server, sys.stdin.buffer, sys.stdout.buffer)
    finally:
        server.shutdown()
