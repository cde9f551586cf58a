"""Units convert exactly and mixing dimensions is refused."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topoc.compiler.base.units import BYTES, RATE, SECONDS, Quantity, human, known_units, unit_scale


def test_bits_and_bytes_convert_exactly():
    assert Quantity.parse("400", "Gb/s") == Quantity.parse("50", "GB/s")
    assert Quantity.parse("1", "KiB").value == 1024
    assert Quantity.parse("1", "KB").value == 1000
    assert Quantity.parse("8", "b").value == 1
    assert Quantity.parse("0.5", "us") == Quantity(Fraction(1, 2_000_000), SECONDS)


def test_dimensions():
    assert unit_scale("GB")[1] == BYTES
    assert unit_scale("TB/s")[1] == RATE
    assert unit_scale("ms")[1] == SECONDS
    assert unit_scale("parsec") is None
    with pytest.raises(ValueError):
        Quantity.parse("1", "furlong")


@given(st.sampled_from(known_units()), st.integers(min_value=0, max_value=10**6))
def test_every_unit_round_trips_through_base_units(unit, n):
    q = Quantity.parse(str(n), unit)
    factor, dim = unit_scale(unit)
    assert q.value == n * factor and q.dim == dim


def test_human_units():
    assert human(1.8e12, RATE) == "1.8 TB/s"
    assert human(13.392e12, BYTES) == "13.392 TB"
    assert human(2**30, BYTES, binary=True) == "1 GiB"
    assert human(5e-6, SECONDS) == "5 us"


@pytest.mark.parametrize("word", ["EB", "EiB", "Eb/s", "ZB", "GBps", "ps", "sec", "min", "h"])
def test_words_that_read_as_units_the_language_lacks(word):
    from topoc.compiler.base.units import unknown_unit
    assert unknown_unit(word)


@pytest.mark.parametrize("word", ["GB", "GiB/s", "Gb/s", "ms", "s", "x", "dp", "nvlink", "sm"])
def test_known_units_and_names_are_not_unknown_units(word):
    from topoc.compiler.base.units import unknown_unit
    assert not unknown_unit(word)


@pytest.mark.parametrize("n, text", [
    (8, "8 B"), (1000, "1 kB"), (2**20, "1 MiB"), (64 * 2**20, "64 MiB"), (2 * 10**9, "2 GB"),
    (1536 * 2**20, "1536 MiB"), (17225026 * 1024, "16.427 GiB"), (123457, "120.563 KiB"),
    (2.0**30, "1 GiB"), (0.5, "0.5 B"), (2**40, "1 TiB")])
def test_one_size_formatter_writes_a_human_unit(n, text):
    """Sizes were written in the largest exact unit, '17225026 KiB' (issue 40): now exact
    only within four digits, else binary units to three decimals."""
    from topoc.compiler.base.units import human_size
    assert human_size(n) == text
