"""The fabric view's fast paths agree with the plain ones they replace: the text key its
cables sort by orders and ties names as ``natural`` does, and ``wiring`` without a dump
numbers ports as the general loop does."""

from __future__ import annotations

import random

import topoc
from topoc.compiler.analysis import fabric as fab_mod
from topoc.compiler.ir.locality import natural

from ...conftest import library_file

#: Letters, separators, ASCII digits, a non-ASCII digit (``\d`` takes it, ``int`` reads it)
#: and characters below and above '0', so text parts end where digits and other text begin.
ALPHABET = "ab/_-.0123456789\u0663z\x01 "


def test_text_key_orders_and_ties_as_natural():
    rng = random.Random(44)
    for _ in range(20000):
        x, y = ("".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 9)))
                for _ in range(2))
        kx, ky = fab_mod._natural_text(x), fab_mod._natural_text(y)
        assert (natural(x) < natural(y)) == (kx < ky), (x, y)
        assert (natural(x) == natural(y)) == (kx == ky), (x, y)


def test_wiring_without_a_dump_numbers_ports_as_with_an_empty_one():
    """``ports=None`` (the fast loop) against ``ports={}`` (the general one, which numbers
    every cable from each end's lowest free port: the same numbers when nothing is given)."""
    fab = fab_mod.fabric(topoc.load(library_file("h100_fourtier.topo"), defines={"nodes": 96}))
    assert fab_mod.wiring(fab) == fab_mod.wiring(fab, {})
    assert len(fab_mod.wiring(fab)) == sum(c.count for c in fab.cables)


def test_text_keys_of_many_names_are_each_names_key():
    """``_natural_texts`` (the names joined and split once) against ``_natural_text`` one
    name at a time, with U+0001 (the joint) and NUL (no text keys) in some."""
    rng = random.Random(45)
    for _ in range(5000):
        names = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 9)))
                 for _ in range(rng.randint(0, 6))]
        assert fab_mod._natural_texts(names) == list(map(fab_mod._natural_text, names))
    assert fab_mod._natural_texts(["a1", "b\x002"]) is None
