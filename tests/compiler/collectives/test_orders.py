"""Orders: islands sorted naturally, rings that keep their rails, trees whose channels spread
over the islands' GPUs and NICs; and what they mean for multi-node costs."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.collectives.coster import cost
from topoc.compiler.collectives.orders import (_entries, islands, net_channels, ring_orders,
                                               sample_islands, tree_parents)
from topoc.compiler.ir.groups import RankGroup
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


def test_rings_spread_their_crossings_over_the_nics_a_job_is_left_with():
    """NICs 2 and 3 of a 4-NIC HGX A100 pair excluded, the job on GPUs 0, 2, 4, 6 of each node:
    NCCL puts two of its four channels on each NIC left; the rings' crossings do the same each
    way (by the order alone, GPUs 4 and 6 would both send through NIC 0)."""
    from pathlib import Path

    from topoc.compiler.collectives.paths import RailRouter
    from topoc.compiler.ir.degrade import apply

    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "degraded" / "hgx_a100_4nic.topo"
    system = apply(topoc.load(fixture), ["pair.node*.nic[23]"]).system
    ranks = (0, 2, 4, 6, 8, 10, 12, 14)
    channels = net_channels(system, ranks)
    assert channels == 4
    router, sends = RailRouter(system), {}
    for ring in ring_orders(system, ranks, channels):
        order = [ranks[p] for p in ring]
        for a, b in zip(order, order[1:] + order[:1]):
            if (a < 8) != (b < 8):
                path = router.path(system.gpus[a].id, system.gpus[b].id)
                out = next(link.split("<->")[0] for link in path if link.endswith(":hdr"))
                sends[out] = sends.get(out, 0) + 1
    assert sends == {"pair.node0.nic0": 2, "pair.node0.nic1": 2, "pair.node1.nic0": 2,
                     "pair.node1.nic1": 2}
    # the healthy pair keeps the default entries (channel c from local index c)
    healthy = topoc.load(fixture)
    parts = islands(healthy, ranks)
    assert _entries(healthy, ranks, parts, 8) == list(range(8))
    group = RankGroup("ranks", ranks)
    assert cost(system, group, "allreduce", 1 << 30, "ring").busbw > 40e9   # two NICs' worth


def test_a_switchless_nvlink_mesh_rings_over_its_nvlinks_only():
    """DGX-1's hybrid cube mesh: GPU 3 and 4 share no NVLink, so the locality order (0..7)
    would cross the CPUs twice per ring; NCCL's search finds NVLink-only rings, one per link
    of a GPU, and so must the model: every hop a direct NVLink, the links evenly used, and
    the all-reduce limited by NVLink, not the socket link."""
    system = topoc.load(library_file("dgx1_v100.topo"))
    ranks = list(range(8))
    linked = {frozenset((l.src, l.dst)) for l in system.links if l.cls == "nvlink"}
    gpu = [g.id for g in system.gpus]
    rings = ring_orders(system, ranks, 6)
    assert len(set(rings)) > 1                        # channels take different cycles
    for ring in rings:
        assert sorted(ring) == ranks
        for a, b in zip(ring, ring[1:] + ring[:1]):
            assert frozenset((gpu[a], gpu[b])) in linked
    big = cost(system, select_group(system), "allreduce", 1 << 30, "ring")
    assert "nvlink" in str(big.bottleneck)
    assert big.busbw > 100e9                          # six links of 25 GB/s; over the CPUs: 6


def test_a_complete_or_switched_island_keeps_locality_order():
    system = topoc.load(library_file("dgx_h100.topo"))
    assert ring_orders(system, list(range(8)), 2)[0] == tuple(range(8))


@pytest.mark.parametrize("name, defines", [("nvl72_cluster.topo", {"racks": 60}),
                                           ("h100_superpod.topo", {"nodes": 512})])
def test_large_groups_sort_and_split_in_numpy_as_rank_by_rank(name, defines, monkeypatch):
    """A group of NUMPY_GROUP ranks or more is sorted by the integer keys in numpy and split by
    island in numpy: the same parts, in the same order, as the per-rank keys and the
    dictionary pass give."""
    import random

    from topoc.compiler.collectives import orders
    system = topoc.load(library_file(name), defines)
    n = len(system.gpus)
    groups = [tuple(range(n)), tuple(range(1, n, 2)), tuple(range(n - 1, -1, -1))]
    rng = random.Random(7)
    groups.append(tuple(rng.sample(range(n), 2100)))
    fast = [orders.islands(system, g) for g in groups]
    monkeypatch.setattr(orders, "NUMPY_GROUP", 10**9)
    system.locality.memo.pop("orders.islands")
    loc = system.locality
    for g, got in zip(groups, fast):
        assert len(g) >= 2048
        positions = sorted(range(len(g)), key=lambda p: loc.key(g[p]))
        out: dict[int, list[int]] = {}
        for p in positions:
            out.setdefault(loc.island[g[p]], []).append(p)
        assert got == list(out.values())
        assert orders.islands(system, g) == got
