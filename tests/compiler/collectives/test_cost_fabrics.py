"""Issue 27: transports, several NICs per GPU, NCCL versions, CUDA graphs, NVLS-tree across
NVL72 racks, CollNet over SHARP, and all-to-all, each checked against what it must change."""

from __future__ import annotations

import attrs
import pytest

import topoc
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.collectives import transports
from topoc.compiler.collectives.cost import CostError, auto_algorithms
from topoc.compiler.collectives.coster import cost, sweep
from topoc.compiler.collectives.versions import GRAPH_SAVES_US, VERSIONS, nccl
from topoc.compiler.ir.groups import RankGroup

from ...conftest import library_file

GiB = 2**30

TWO_NODES = """
use "links.topo"
use "devices.topo"
device Nic : nic {{ rate = 400 Gb/s {attr} }}
group Node {{
  gpu : H100
  nic : Nic
  gpu <-> nic : pcie5
}}
group Pair {{
  node[2] : Node
  sw : QM9700
  node[k].nic <-> sw : {link}
}}
system pair : Pair
"""


def pair(transport: str = "", link: str = "ndr"):
    attr = f'transport = "{transport}"' if transport else ""
    return topoc.compile(TWO_NODES.format(attr=attr, link=link),
                         library_file("links.topo").parent / "pair.topo")


def test_transport_is_a_nic_attribute_with_a_clear_diagnostic():
    assert pair("efa", "eth400").device("pair.node0.nic").model.attr("transport") == "efa"
    with pytest.raises(CompileError) as caught:
        pair("tcpxoo")
    text = str(caught.value.diagnostics[0])
    assert "E200" in text and "transport 'tcpxoo'" in text and "tcpxo" in text


def test_a_transport_adds_its_cost_per_operation_and_reaches_its_fraction():
    group = RankGroup("both", (0, 1))
    ib = cost(pair(), group, "allreduce", 8)
    efa = cost(pair("efa", "eth400"), group, "allreduce", 8)
    assert efa.algorithm == ib.algorithm and efa.protocol == "LL"
    assert efa.time - ib.time == pytest.approx(transports.TRANSPORTS["efa"].op_us * 1e-6, abs=1e-9)
    big_ib = cost(pair(), group, "allreduce", 8 * GiB, "ring")
    big_efa = cost(pair("efa", "eth400"), group, "allreduce", 8 * GiB, "ring")
    t = transports.TRANSPORTS["efa"]
    ratio = t.efficiency / transports.TRANSPORTS["ib"].efficiency
    # at 8 GiB each 1 MiB message (NCCL_BUFFSIZE 8 MiB / 8 steps) also pays the plugin's
    # per-message work on top of its wire time at a channel's half of the 400G NIC
    wire = (t.buffsize / 8) / (400e9 / 8 * t.efficiency / 2)
    ratio *= wire / (wire + t.msg_us * 1e-6)
    assert big_efa.busbw / big_ib.busbw == pytest.approx(ratio, rel=0.02)


def test_a_gpu_drives_all_of_its_nics():
    """p5: four 100G EFA devices under each GPU's PCIe switch, pooled as aws-ofi-nccl does."""
    p5 = topoc.load(library_file("aws_p5.topo"), {"nodes": 2})
    loc = p5.locality
    assert len(loc.nics(0)) == 4 and len(set(loc.nics(0)) & set(loc.nics(1))) == 0
    assert loc.nic_pool(loc.nics(0)[2]) == loc.nics(0)
    pairs = RankGroup("rail", (0, 8))
    got = cost(p5, pairs, "sendrecv", GiB)
    efa = transports.TRANSPORTS["efa"]
    one_nic = 100e9 / 8 * efa.efficiency * efa.p2p_efficiency
    assert got.busbw == pytest.approx(4 * one_nic, rel=0.02)


def test_versions_change_the_launch_and_graphs_lower_it():
    dgx = topoc.load(library_file("dgx_h100.topo"))
    world = RankGroup("world", tuple(range(8)))
    old, new = cost(dgx, world, "allreduce", 8, nccl="2.18"), cost(dgx, world, "allreduce", 8)
    assert new.time < old.time - 5e-6
    graph = cost(dgx, world, "allreduce", 8, graph=True)
    assert new.time - graph.time == pytest.approx(GRAPH_SAVES_US * 1e-6)
    assert nccl("2.27") is VERSIONS["2.27"] and nccl("2.27.7").release == (2, 27, 7)
    assert attrs.evolve(nccl("2.22"), release=(2, 21)) == VERSIONS["2.21"]
    with pytest.raises(CostError, match="older than"):
        cost(dgx, world, "allreduce", 8, nccl="2.9")


def test_nccl_2_18_charges_nvls_tree_no_plugin_latency():
    """NCCL 2.18's tuning.cc charges NVLS-tree baseLat + 2 (nodes - 1) x hwLat[NET][NVLS_TREE]
    and none of the latency the net plugin declares (aws-ofi-nccl: 75 us on p5), which every
    tree and ring network step carries; from 2.19 NVLS-tree's steps carry it too. So on two p5
    nodes NCCL 2.18 runs NVLS-tree at every size, 2.19 and later trees for small messages."""
    p5 = topoc.load(library_file("aws_p5.topo"), {"nodes": 2})
    world = RankGroup("world", tuple(range(16)))
    for size in (8, 64 * 1024, 64 * 2**20):
        assert cost(p5, world, "allreduce", size, nccl="2.18").algorithm == "nvlstree"
    assert cost(p5, world, "allreduce", 8, nccl="2.19").algorithm == "tree"
    assert cost(p5, world, "allreduce", 8).algorithm == "tree"
    # the charge itself: 23 + 2 x 19 us on two nodes in 2.18; linear in the node count
    p5x4 = topoc.load(library_file("aws_p5.topo"), {"nodes": 4})
    world4 = RankGroup("world", tuple(range(32)))
    lat = {m: cost(s, g, "allreduce", 8, algorithm="nvlstree", nccl="2.18").latency
           for m, s, g in ((2, p5, world), (4, p5x4, world4))}
    assert lat[4] - lat[2] == pytest.approx(4 * 19e-6)


#: What NCCL runs per collective (tuning.cc: broadcast and reduce rings only; reduce-scatter and
#: all-gather ring, NVLS, PAT; all-reduce all but PAT; all-to-all and send/recv its p2p path).
NCCL_HAS = {"allreduce": {"ring", "tree", "nvls", "nvlstree", "collnetchain"},
            "reducescatter": {"ring", "nvls", "pat"}, "allgather": {"ring", "nvls", "pat"},
            "broadcast": {"ring"}, "reduce": {"ring"}, "alltoall": {"direct"},
            "sendrecv": {"direct"}}
SIMPLE_ONLY = {"nvls", "nvlstree", "pat", "collnetchain"}


@pytest.mark.parametrize("name, defines", [
    ("dgx_h100.topo", {}), ("dgx_a100.topo", {}), ("hgx_b200.topo", {}),
    ("pcie_server.topo", {}), ("h100_cluster.topo", {"nodes": 2}),
    ("aws_p5.topo", {"nodes": 4}), ("aws_p4de.topo", {"nodes": 2}),
    ("gcp_a3_mega.topo", {"nodes": 2}), ("h100_sharp_cluster.topo", {"nodes": 4}),
    ("nvl72_cluster.topo", {"racks": 2})])
def test_auto_only_names_what_nccl_has(name, defines):
    """Per collective, the algorithm and protocol ``auto`` names are ones NCCL runs there:
    trees and CollNet only across nodes, NVLS in one NVLink domain, Simple only for NVLS,
    NVLS-tree, PAT and CollNet, no LL128 by default where the node's graph is not NVLink."""
    system = topoc.load(library_file(name), defines)
    world = RankGroup("world", tuple(range(len(system.gpus))))
    islands = len({system.locality.island[r] for r in world.ranks})
    one_domain = system.locality.nvlink_agents(world.ranks) is not None
    nvlink = any(link.cls == "nvlink" for link in system.links_of(system.gpus[0].id))
    for collective in ("allreduce", "allgather", "reducescatter", "broadcast", "reduce",
                       "alltoall"):
        if collective == "alltoall" and len(system.gpus) > 64:
            continue
        assert set(auto_algorithms(system, world, collective)) <= NCCL_HAS[collective]
        for row in sweep(system, world, collective, [8, 2**20, 64 * 2**20, GiB]):
            assert row.algorithm in NCCL_HAS[collective], (collective, row)
            if row.algorithm in ("tree", "nvlstree", "collnetchain"):
                assert islands > 1, row
            if row.algorithm == "nvls":
                assert one_domain, row
            if row.algorithm in SIMPLE_ONLY:
                assert row.protocol == "Simple", row
            if not nvlink:
                assert row.protocol != "LL128", row


def test_nvls_tree_across_two_nvl72_racks_not_more():
    two = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 2})
    world = RankGroup("world", tuple(range(144)))
    got = cost(two, world, "allreduce", 16 * GiB, nccl="2.26")
    assert got.algorithm == "nvlstree" and got.busbw > 700e9      # 810 GB/s measured
    three = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 3})
    assert "nvlstree" not in auto_algorithms(three, RankGroup("w", tuple(range(216))),
                                             "allreduce")


def test_collnet_only_where_the_fabric_declares_sharp():
    sharp = topoc.load(library_file("h100_sharp_cluster.topo"), {"nodes": 4})
    plain = topoc.load(library_file("h100_cluster.topo"), {"nodes": 4})
    world = RankGroup("world", tuple(range(32)))
    assert "collnetchain" in auto_algorithms(sharp, world, "allreduce")
    assert "collnetchain" not in auto_algorithms(plain, world, "allreduce")
    with pytest.raises(CostError, match="sharp = true"):
        cost(plain, world, "allreduce", GiB, "collnetchain")


def test_all_to_all_peers_are_concurrent_and_counted_on_two_islands():
    """m nodes of pooled 4 x 100G NICs: each GPU sends (m-1)/m of its buffer over its NICs,
    every peer at once, so the per-step latency does not grow with the peers; but each peer
    on another node costs the GPU's proxy the plugin's per-message work once."""
    for nodes in (4, 8):
        p5 = topoc.load(library_file("aws_p5.topo"), {"nodes": nodes})
        n = 8 * nodes
        got = cost(p5, RankGroup("world", tuple(range(n))), "alltoall", 2 * GiB)
        t = transports.TRANSPORTS["efa"]
        nic = 4 * 100e9 / 8 * t.efficiency * t.p2p_efficiency
        expected = nic * nodes / (nodes - 1) * (n - 1) / n
        assert got.busbw == pytest.approx(expected, rel=0.03)
    small = [cost(topoc.load(library_file("aws_p5.topo"), {"nodes": k}),
                  RankGroup("w", tuple(range(8 * k))), "alltoall", 8).time for k in (2, 8)]
    work = transports.TRANSPORTS["efa"].msg_us * 1e-6
    assert small[1] - small[0] == pytest.approx((56 - 8) * work, rel=0.01)


def test_nvls_tree_network_part_is_not_charged_nvls_efficiency():
    """tuning.cc bounds NVLS-tree by min(intraBw x nvlsEfficiency, interBw, ...): the trees
    between nodes run at the links' rate. 4 p5en nodes: the bound is the network part's."""
    from topoc.compiler.collectives.cost import profile
    from topoc.compiler.collectives.algos import bus_gbs
    from topoc.compiler.collectives.tuning import BUS_FACTOR, NVLS_EFFICIENCY
    p5en = topoc.load(library_file("aws_p5en.topo"), {"nodes": 4})
    world = RankGroup("world", tuple(range(32)))
    p = profile(p5en, world, "allreduce", "nvlstree")
    assert p.net_seconds_per_byte and p.seconds_per_byte
    net = BUS_FACTOR["allreduce"](32) / p.net_seconds_per_byte / 1e9
    got = bus_gbs(p, "allreduce", 32, 4 * GiB, 2)
    assert got == pytest.approx(net)          # not net x NVLS_EFFICIENCY, as before
    assert NVLS_EFFICIENCY[2] < 0.9
    ring = cost(p5en, world, "allreduce", 4 * GiB, "ring")
    assert 0.85 < cost(p5en, world, "allreduce", 4 * GiB, "nvlstree").busbw / ring.busbw < 1.05
