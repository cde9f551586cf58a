"""The one way generated .topo text takes data: strings, host patterns, comments and
identifiers written so that no input can end them early and become code.

Importers read dumps other people control (a node description anyone with an HCA can set, a
hostname, a file name); whatever those hold, ``parse(string(s))`` reads back ``s`` exactly, a
``comment(s)`` stays one comment line, and ``ident(s)`` is one NAME token that is not a keyword.
"""

from __future__ import annotations

import re

from ..base.text import escape_char, visible
from .fastlines import KEYWORDS
_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]")


def string(text: str) -> str:
    """``text`` as a .topo string literal: quotes and backslashes escaped, every unprintable
    character (newline, NUL, ESC, U+2028...) written as ``\\n``, ``\\xHH``, ``\\uHHHH``."""
    out = []
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif c.isprintable():
            out.append(c)
        else:
            out.append(escape_char(c))
    return '"' + "".join(out) + '"'


def pattern(name: str) -> str:
    """A literal hostname as a host statement's pattern string: braces doubled, so a ``{`` in
    the name is never read as a field."""
    return string(name.replace("{", "{{").replace("}", "}}"))


def comment(text: str) -> str:
    """``text`` as the body of one ``#`` comment line: newlines, other controls and Unicode
    line separators escaped, so it cannot end the comment."""
    return visible(text)


def ident(text: str, prefix: str = "n_") -> str:
    """``text`` as one identifier: other characters become ``_``; a leading digit or an empty
    result gets ``prefix``; a keyword gets a trailing ``_``."""
    name = _NOT_IDENT.sub("_", text)
    if not name or name[0].isdigit():
        name = prefix + name
    return name + "_" if name in KEYWORDS else name
