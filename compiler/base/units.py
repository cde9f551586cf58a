"""Quantities with dimensions: bytes, bits, seconds and their quotients, converted exactly.

A dimension is a pair of exponents (bytes, seconds): ``GB`` is (1, 0), ``us`` is (0, 1), ``Gb/s``
is (1, -1). Bits are bytes divided by eight, so ``400 Gb/s`` and ``50 GB/s`` are the same value.
Values are exact fractions until they reach the IR.
"""

from __future__ import annotations

import math
import numbers
import re
from fractions import Fraction

import attrs

from .limits import LIMITS

Dim = tuple[int, int]

NUMBER: Dim = (0, 0)
BYTES: Dim = (1, 0)
SECONDS: Dim = (0, 1)
RATE: Dim = (1, -1)

DIM_NAMES = {NUMBER: "a plain number", BYTES: "bytes", SECONDS: "a time", RATE: "a bandwidth"}

_DECIMAL = {"": 1, "K": 10**3, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}
_TIME = {"ns": Fraction(1, 10**9), "us": Fraction(1, 10**6), "µs": Fraction(1, 10**6),
         "ms": Fraction(1, 10**3), "s": Fraction(1)}


def _amounts() -> dict[str, Fraction]:
    table: dict[str, Fraction] = {}
    for prefix, factor in {**_DECIMAL, **_BINARY}.items():
        table[prefix + "B"] = Fraction(factor)
        table[prefix + "b"] = Fraction(factor, 8)
    return table


_AMOUNTS = _amounts()


def unit_scale(unit: str) -> tuple[Fraction, Dim] | None:
    """The factor to SI base units (bytes, seconds) and the dimension of ``unit``, or None."""
    if unit in _TIME:
        return _TIME[unit], SECONDS
    if unit in _AMOUNTS:
        return _AMOUNTS[unit], BYTES
    if unit.endswith("/s") and unit[:-2] in _AMOUNTS:
        return _AMOUNTS[unit[:-2]], RATE
    return None


def known_units() -> list[str]:
    """Every unit spelling the language accepts (for docs and suggestions)."""
    return sorted([*_TIME, *_AMOUNTS, *(u + "/s" for u in _AMOUNTS)])


#: The units the language accepts, as an unknown unit's message lists them.
ACCEPTED = ("bytes B KB MB GB TB PB or KiB MiB GiB TiB PiB, bits b Kb Mb Gb Tb Pb, a bandwidth "
            "any of them with /s (GB/s, Gb/s), a time ns us µs ms s")
#: A word that reads as a unit of bytes, bits, a bandwidth or a time: a prefix of up to two
#: letters and B or b (EB, ZiB), the same per second (EB/s, GBps), or a time (ps, sec, min).
_UNITISH = re.compile(r"[A-Za-z]{0,2}[Bb](?:/s|ps)?|[a-zµ]?s|secs?|seconds?|mins?|minutes?|h|"
                      r"hours?")


def unknown_unit(word: str) -> bool:
    """Whether ``word``, written right after a number, reads as a unit the language has not
    got ("1 EB", "10 GBps", "5 sec"): the parser would take it for the next name."""
    return unit_scale(word) is None and _UNITISH.fullmatch(word) is not None


@attrs.frozen
class Quantity:
    """An exact value in base units (bytes, seconds, bytes/s) with its dimension."""

    value: Fraction
    dim: Dim

    @classmethod
    def parse(cls, number: str, unit: str | None) -> Quantity:
        """Build from literal text, e.g. ``("400", "Gb/s")``; raises ValueError on a bad unit
        or a literal out of range (see ``literal``)."""
        return cls.of(literal(number), unit)

    @classmethod
    def of(cls, value: Fraction, unit: str | None) -> Quantity:
        """Build from an already checked value and its unit text."""
        if unit is None:
            return cls(value, NUMBER)
        scale = unit_scale(unit)
        if scale is None:
            raise ValueError(f"unknown unit '{unit}'")
        return cls(value * scale[0], scale[1])

    def as_number(self) -> int | float:
        """The value as an int when integral, else a float (for the IR and JSON)."""
        return exact(self.value)


_LITERAL = re.compile(r"^(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$")


class LiteralRange(ValueError):
    """A number literal too long, too large or too small to be a figure of a real system."""


def literal(text: str) -> Fraction:
    """The exact value of a number literal, checked for size *before* it is built.

    ``1e99999999`` would otherwise make Python build a 100-million-digit integer (tens of
    seconds); the magnitude is read from the digits and the exponent alone. Limits: at most
    ``number_digits`` characters, a value below 10^25 and, unless zero, at least 10^-30.
    """
    text = text.replace("_", "").strip()
    if len(text) > LIMITS.number_digits:
        raise LiteralRange(f"number literal longer than {LIMITS.number_digits} characters")
    m = _LITERAL.match(text)
    if not m or not (m.group(1) or m.group(2)):
        raise LiteralRange(f"'{text}' is not a number")
    whole, frac, exp = m.group(1).lstrip("0"), m.group(2) or "", m.group(3) or "0"
    if len(exp.lstrip("+-")) > 6:
        raise LiteralRange(f"number literal '{text}' is out of range (exponent {exp})")
    if whole:
        magnitude = len(whole) - 1 + int(exp)
    elif frac.strip("0"):
        magnitude = -(len(frac) - len(frac.lstrip("0")) + 1) + int(exp)
    else:
        return Fraction(0)
    if magnitude > LIMITS.number_magnitude:
        raise LiteralRange(f"number literal '{text}' is out of range: about 1e{magnitude}, "
                           f"the limit is below 1e{LIMITS.number_magnitude + 1}")
    if magnitude < -LIMITS.number_fraction:
        raise LiteralRange(f"number literal '{text}' is out of range: about 1e{magnitude}, "
                           f"the limit is 1e-{LIMITS.number_fraction}")
    return Fraction(text)


def exact(value: Fraction | int | float) -> int | float:
    """An int when the value is integral, else a float: stable, readable JSON numbers."""
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    value = Fraction(value)
    return int(value) if value.denominator == 1 else float(value)


def describe(dim: Dim) -> str:
    """A human name for a dimension ('a bandwidth', 'bytes', ...)."""
    return DIM_NAMES.get(dim, f"bytes^{dim[0]} s^{dim[1]}")


def human(value: float, dim: Dim, binary: bool = False) -> str:
    """Format a base-unit value for people: 1.8e12 bytes/s -> '1.8 TB/s'."""
    if dim == SECONDS:
        for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
            if abs(value) >= scale or unit == "ns":
                return f"{_trim(value / scale)} {unit}"
    suffix = "/s" if dim == RATE else ""
    if dim in (BYTES, RATE):
        steps = (("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)) if binary \
            else (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("K", 1e3))
        for prefix, scale in steps:
            if abs(value) >= scale:
                return f"{_trim(value / scale)} {prefix}B{suffix}"
        return f"{_trim(value)} B{suffix}"
    return _trim(value)


#: Units a size is written in when it is a whole number of them, largest first.
_EXACT_SIZES = (("TiB", 2**40), ("TB", 10**12), ("GiB", 2**30), ("GB", 10**9), ("MiB", 2**20),
                ("MB", 10**6), ("KiB", 2**10), ("kB", 10**3))


def human_size(n: float) -> str:
    """Bytes for people, the one formatter of message and table sizes: the largest unit that
    holds the size exactly in at most four digits ('1 MiB', '2 GB', '1536 MiB', '512 B'),
    else binary units to three decimals ('16.427 GiB', not '17225026 KiB')."""
    if float(n).is_integer():
        n = int(n)
        for unit, scale in _EXACT_SIZES:
            if n >= scale and n % scale == 0 and n // scale < 10_000:
                return f"{n // scale} {unit}"
        if n < 10_000:
            return f"{n} B"
    return human(n, BYTES, binary=True)


def _trim(x: float) -> str:
    text = f"{x:.3f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


#: Bytes in one collective: 1 PiB, far past any real buffer (the CLI's --size and the API's
#: ``nbytes`` both stop here).
MAX_MESSAGE = 2**50


def byte_count(value, what: str = "the size") -> int:
    """``value`` as a whole number of bytes in 1..``MAX_MESSAGE``: TypeError for what is no
    number (a string, None, a bool), ValueError for NaN, infinity, a fraction or a value out
    of range, each naming ``what``. The planners loop over sizes, so an infinite one never
    returned."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number of bytes, not {type(value).__name__}")
    if not isinstance(value, numbers.Integral):
        f = float(value)
        if not math.isfinite(f):
            raise ValueError(f"{what} must be a finite number of bytes, not {f}")
        if f != math.floor(f):
            raise ValueError(f"{what} must be a whole number of bytes, not {f:g}")
        value = int(f)
    if not 1 <= value <= MAX_MESSAGE:
        raise ValueError(f"{what} must be 1 to {MAX_MESSAGE:,} bytes (1 PiB), not {value:,}")
    return int(value)
