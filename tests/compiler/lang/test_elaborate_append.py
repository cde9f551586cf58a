"""Instantiation without merge keys (when no two links can coincide) builds the same links, in
the same order, as the keyed path; a group that wires inside a member's element still merges."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.lang import elaborate

from ...conftest import LIBRARY

FILES = sorted(p for p in LIBRARY.rglob("*.topo") if "\nsystem " in p.read_text())
H = 'use "nvidia/links.topo"\nuse "nvidia/devices.topo"\n'


def _links(system):
    return [(lk.id, lk.src, lk.dst, lk.type, lk.lanes, lk.duplex, lk.span) for lk in system.links]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_appending_equals_keyed_instantiation(path, monkeypatch):
    fast = topoc.load(path)
    monkeypatch.setattr(elaborate, "_may_merge", lambda templates: True)
    keyed = topoc.load(path)
    assert _links(fast) == _links(keyed)
    assert [d.id for d in fast.devices] == [d.id for d in keyed.devices]


@pytest.mark.parametrize("text, lanes", [
    # the parent wires the pair its member already wired: one link of two lanes
    (H + "group P { a : H100  b : H100  a <-> b : nvlink4 }\n"
         "group W { p[2] : P  p[1].a <-> p[1].b : nvlink4 }\nsystem s : W\n", [1, 2]),
    # one group wiring the same pair twice
    (H + "group P { a : H100  b : H100  a <-> b : nvlink4  b <-> a : nvlink4 }\n"
         "system s : P\n", [2]),
])
def test_coinciding_links_still_merge(text, lanes):
    system = topoc.loads(text)
    assert sorted(lk.lanes for lk in system.links) == lanes
    assert elaborate._may_merge([]) is False
