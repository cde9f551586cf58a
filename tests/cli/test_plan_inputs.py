"""``topoc plan`` as a new user meets it (issue 23 audit): what it prints for differences that
are negative, and the diagnostics for inputs that cannot mean anything."""

from __future__ import annotations

from topoc.backends.report import seconds


def test_a_negative_duration_keeps_its_unit():
    """--compare prints this strategy's term minus #1's; the best may have the larger bubble."""
    assert seconds(-0.2991192) == "-299.1 ms"
    assert seconds(-10.9) == "-10.90 s"
    assert seconds(-7.1e-5) == "-71.0 us"
    assert seconds(0.2991192) == "299.1 ms"
