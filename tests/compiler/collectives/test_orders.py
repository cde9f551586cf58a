"""Orders: islands sorted naturally, rings that keep their rails, trees whose channels spread
over the islands' GPUs and NICs; and what they mean for multi-node costs."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.collectives.coster import cost
from topoc.compiler.collectives.orders import net_channels, ring_orders, sample_islands, tree_parents
from topoc.compiler.ir.groups import select_group

from ...conftest import library_file


def test_nvl72_rings_run_in_tray_order():
    rack = topoc.load(library_file("gb200_nvl72.topo"))
    assert ring_orders(rack, tuple(range(72)), 1)[0] == tuple(range(72))


@pytest.mark.parametrize("racks", [2, 3, 4, 5])
def test_crossings_keep_their_rail_except_one_wrap_on_odd_counts(racks):
    system = topoc.load(library_file("nvl72_cluster.topo"), {"racks": racks})
    loc = system.locality
    ranks = tuple(range(len(system.gpus)))
    rail = {r: loc.nic(r).rsplit(".", 1)[1] for r in ranks}
    for ring in ring_orders(system, ranks, 4):
        off = sum(rail[a] != rail[b] for a, b in zip(ring, ring[1:] + ring[:1])
                  if loc.island[a] != loc.island[b])
        assert off == racks % 2


def test_tree_channels_head_islands_at_different_gpus():
    system = topoc.load(library_file("h100_cluster.topo"), {"nodes": 4})
    ranks = tuple(range(32))
    loc = system.locality
    trees = tree_parents(system, ranks, 0, 8)
    assert len(trees) == 16                                 # two trees per channel
    heads = [next(p for p in range(8) if t[p] < 0 or loc.island[t[p]] != 0)
             for t in trees[::2]]
    assert sorted(heads) == list(range(8))                  # node 0 headed at every GPU once
    nics = {loc.nic(p) for t in trees for p in range(32)
            if t[p] >= 0 and loc.island[t[p]] != loc.island[p]}
    assert len(nics) == 32                                  # every NIC carries tree traffic


def test_multi_node_costs_are_bounded_by_net_channels():
    """Rings across nodes: channels (two per NIC, at most 16) times half a NIC each; trees no
    longer push every node's traffic through one GPU and NIC."""
    h100 = topoc.load(library_file("h100_cluster.topo"), {"nodes": 4})
    world = select_group(h100)
    assert net_channels(h100, world.ranks) == 16
    ring = cost(h100, world, "allreduce", 8 * 2**30, "ring").busbw
    tree = cost(h100, world, "allreduce", 8 * 2**30, "tree").busbw
    assert 300e9 < ring <= 16 * 24e9 * 1.001
    assert tree > 0.75 * ring
    nvl = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 4})
    assert cost(nvl, select_group(nvl), "allreduce", 8 * 2**30, "ring").busbw <= 16 * 24e9 * 1.001


def test_sampling_keeps_parity():
    system = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 5})
    islands = {system.locality.island[r] for r in sample_islands(system, range(360), 4)}
    assert len(islands) == 3
