"""blast's routes (compiler/analysis/blast.py): each degraded system starts from the healthy
system's surviving least-cost paths, which must give what a fresh search gives."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.analysis.blast import _reference, blast
from topoc.compiler.ir.degrade import Faults, degrade

from ...conftest import library_file


@pytest.mark.parametrize("name,defines", [("h100_cluster.topo", {"nodes": 4}),
                                          ("gb200_nvl72.topo", None)])
def test_seeded_routes_give_what_a_fresh_search_gives(name, defines):
    found = blast(topoc.load(library_file(name), defines))
    for d in found:
        fresh = topoc.load(library_file(name), defines)     # no route of any other system
        after = degrade(fresh, Faults((d.example,))).system
        time_after, connected = _reference(after, 2**30)
        assert (d.time_after, d.connected) == (time_after, connected), d.example
