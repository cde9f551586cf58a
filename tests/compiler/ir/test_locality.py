"""Locality: islands and each island's ranks, rail NICs, and caches that die with the system."""

from __future__ import annotations

import gc
import weakref

import topoc

from ...conftest import library_file


def test_islands_list_their_ranks_and_gpus_take_their_rail():
    system = topoc.load(library_file("h100_cluster.topo"), {"nodes": 4})
    loc = system.locality
    assert loc.island_ranks == [list(range(i * 8, i * 8 + 8)) for i in range(4)]
    assert all(loc.island[r] == r // 8 for r in range(32))
    # DGX H100: one NIC per GPU, so GPU i of every node takes NIC i (rail i).
    assert [loc.nic(r).rsplit(".", 1)[1] for r in range(8, 16)] == \
        [loc.nic(r).rsplit(".", 1)[1] for r in range(0, 8)]
    assert len({loc.nic(r) for r in range(8)}) == 8


def test_a_compiled_system_is_freed_when_dropped():
    # Caches live on the system (graph, locality and its memo), never in module globals, so a
    # long-running user compiling system after system does not keep them all.
    system = topoc.load(library_file("dgx_h100.topo"))
    system.graph, system.locality.nic(0), system.locality.socket(0)
    ref = weakref.ref(system)
    del system
    gc.collect()
    assert ref() is None
