"""Which declared name an unknown one is closest to, and whether that is other hardware.

Pure functions over names, below ``resolve`` (which hints a device's unknown parent with them)
and ``hints`` (every other unknown name, with the library's knowledge on top).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..base.diagnostics import closest

#: Where the library's names, kinds and figures are listed (generated, backends.library_doc).
LIBRARY_DOC = "docs/library.md"
POINTER = f" (library names and figures: {LIBRARY_DOC})"

_TOKENS = re.compile(r"[A-Za-z]+|\d+")


def numbered(name: str, kinds: Iterable[str]) -> list[str]:
    """The names that are ``name`` and a number (``NVSwitch`` -> NVSwitch2, NVSwitch3, ...):
    a generation to choose, which a suggestion of one of them would choose silently."""
    low = name.lower()
    return sorted(n for n in kinds if n.lower().startswith(low) and n[len(name):].isdigit())


def different_hardware(typed: str, offered: str) -> bool:
    """Whether ``offered`` names other hardware than ``typed`` means: the same shape of letters
    and numbers with another number (``DGXH200``/``DGXH100``, ``QX900``/``QX800``) or
    another family letter (``B200``/``H200``), not a misspelling (``nvlnk4``/``nvlink4``)."""
    a, b = _TOKENS.findall(typed.lower()), _TOKENS.findall(offered.lower())
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        if x.isdigit() != y.isdigit():
            return False
        if x.isdigit():
            return True     # H20 and H200 are both GPUs: a number is never taken for a typo
        if x.isalpha() and len(x) <= 2 and len(y) <= 2:
            return True
    return False


def model_spelling(name: str, pool: Iterable[str]) -> str | None:
    """The model of ``pool`` a name means: the CLI's spelling ('llama3-8b' is 'llama3_8b',
    'llama3.1-405b' 'llama31_405b'), else the closest name; None when nothing is close."""
    pool = set(pool)
    spelt = name.strip().lower().replace("-", "_")
    return next((c for c in (spelt.replace(".", "_"), spelt.replace(".", "")) if c in pool),
                None) or closest(name, pool)
