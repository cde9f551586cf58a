"""Text from untrusted places made safe to show: control characters as visible escapes.

A ``.topo`` file, a dump or a hostname can hold ESC, BEL, CR, NUL, Unicode line separators or
bidirectional overrides; echoed raw, they retitle or clear the terminal of whoever reads the
message, or start a new line in a file another tool loads. Everything topoc prints from its
input goes through ``visible`` (``keep="\n\t"`` for a multi-line message).
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def escape_char(c: str) -> str:
    """One character as an escape: ``\\n``, ``\\t``, ``\\r``, ``\\xHH``, ``\\uHHHH`` or
    ``\\UHHHHHHHH`` (the forms a .topo string reads back, docs/language.md)."""
    if c in _NAMED:
        return _NAMED[c]
    n = ord(c)
    if n < 0x100:
        return f"\\x{n:02x}"
    if n < 0x10000:
        return f"\\u{n:04x}"
    return f"\\U{n:08x}"


def visible(text: str, keep: str = "") -> str:
    """``text`` with every unprintable character (controls, line and paragraph separators,
    format characters such as bidi overrides) escaped, except those in ``keep``."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else escape_char(c) for c in text)

