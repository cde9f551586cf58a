"""The cost model: contention, protocols, nccl-tests' bandwidth factors, algorithm choice,
sampled orders for large groups, and its refusals."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.collectives import cost as cost_model
from topoc.compiler.collectives import algos
from topoc.compiler.collectives.algos import hierarchical, nvls
from topoc.compiler.collectives.versions import nccl as nccl_profile
from topoc.compiler.collectives.cost import BUS_FACTOR, CostError, auto_algorithms
from topoc.compiler.collectives.coster import cost, sweep
from topoc.compiler.ir.groups import RankGroup

from ...conftest import library_file

GiB, MiB, KiB = 2**30, 2**20, 2**10


def node_pair(nics: int, uplinks: int = 2) -> topoc.System:
    """Two 2-GPU nodes (NVLink between the GPUs), ``nics`` NICs each on the GPUs' PCIe switch,
    one leaf switch per node, ``uplinks`` NDR links between the leaves."""
    return topoc.loads(f'''
use "nvidia/links.topo"
use "nvidia/devices.topo"
group Node {{
  gpu[2] : H100
  cpu : Xeon8480C
  pcie : PEX89104
  nic[{nics}] : CX7
  gpu[0] <-> gpu[1] : nvlink4 x 18
  gpu[*] <-> pcie : pcie5
  nic[*] <-> pcie : pcie5
  pcie <-> cpu : pcie5
}}
group Pair {{
  node[2] : Node
  leaf[2] : QM9700
  node[i].nic[*] <-> leaf[i] : ndr
  leaf[0] <-> leaf[1] : ndr x {uplinks}
}}
system pair : Pair
''')


WORLD4 = RankGroup("world", (0, 1, 2, 3))


def test_rings_sharing_one_nic_pay_for_it():
    one, two = node_pair(nics=1), node_pair(nics=2)
    shared = cost(one, WORLD4, "allreduce", GiB, "ring")
    spread = cost(two, WORLD4, "allreduce", GiB, "ring")
    assert shared.bottleneck == spread.bottleneck == "infiniband"
    # Both channels cross the node boundary through the one NIC: half the bandwidth.
    assert shared.busbw == pytest.approx(spread.busbw / 2, rel=0.02)


def test_a_thin_uplink_is_the_bottleneck():
    thin = cost(node_pair(nics=2, uplinks=1), WORLD4, "allreduce", GiB, "ring")
    wide = cost(node_pair(nics=2, uplinks=2), WORLD4, "allreduce", GiB, "ring")
    assert thin.bottleneck_link.startswith("pair.leaf0<->pair.leaf1")
    assert not wide.bottleneck_link.startswith("pair.leaf0<->pair.leaf1")
    assert thin.busbw == pytest.approx(wide.busbw / 2, rel=0.02)


def test_scaleout_ceiling_is_what_ndr_reaches():
    # One 400G NIC per GPU, two per node: busbw = 2 NICs x 48 GB/s (46-49 GB/s in practice).
    got = cost(node_pair(nics=2), WORLD4, "allreduce", 8 * GiB, "ring")
    assert 2 * 46e9 <= got.busbw <= 2 * 49e9


@pytest.mark.parametrize("collective", sorted(BUS_FACTOR))
def test_busbw_is_algbw_times_the_nccl_tests_factor(collective):
    system = topoc.load(library_file("dgx_h100.topo"))
    n = 8
    got = cost(system, RankGroup("ranks", tuple(range(n))), collective, 64 * MiB)
    expected = {"allreduce": 2 * (n - 1) / n, "reducescatter": (n - 1) / n,
                "allgather": (n - 1) / n, "alltoall": (n - 1) / n, "broadcast": 1.0,
                "reduce": 1.0, "sendrecv": 1.0}[collective]
    assert got.algbw == pytest.approx(got.size / got.time)
    assert got.busbw == pytest.approx(got.algbw * expected)


def test_protocols_follow_the_size():
    system = topoc.load(library_file("dgx_a100.topo"))
    rows = sweep(system, RankGroup("ranks", tuple(range(8))), "allreduce",
                 [8, 32 * KiB, 4 * MiB, GiB], "ring", nccl="2.18")
    assert [r.protocol for r in rows] == ["LL", "LL", "LL128", "Simple"]


def test_auto_is_the_fastest_candidate_and_time_grows_with_size(monkeypatch):
    """auto runs what NCCL's model picks; with only what that model knows (NVLS's pipeline
    fill left out, tuning.NVLS_FILL_LOOPS) that is the fastest candidate. With the fill an
    NVLS call NCCL picks may cost more than a ring would (docs/cost.md); times still grow."""
    system = topoc.load(library_file("dgx_h100.topo"))
    group = RankGroup("ranks", tuple(range(8)))
    sizes = [2**k for k in range(3, 34, 2)]
    times = [r.time for r in sweep(system, group, "allreduce", sizes)]
    assert times == sorted(times)
    monkeypatch.setattr(nvls, "NVLS_FILL_LOOPS", 0)
    auto = sweep(system, group, "allreduce", sizes)
    for algo in auto_algorithms(system, group, "allreduce"):
        for a, b in zip(auto, sweep(system, group, "allreduce", sizes, algo)):
            assert a.time <= b.time


def test_latency_and_bandwidth_regimes():
    """T = alpha + D/B: tiny messages are all start-up, huge ones all bandwidth."""
    system = topoc.load(library_file("dgx_h100.topo"))
    group = RankGroup("ranks", tuple(range(8)))
    tiny, huge = sweep(system, group, "allreduce", [8, 8 * GiB])
    assert tiny.latency / tiny.time > 0.99
    assert huge.latency / huge.time < 0.01


def test_sampled_orders_match_the_whole_group(monkeypatch):
    system = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 8})
    world = RankGroup("world", tuple(range(len(system.gpus))))
    sampled = [cost(system, world, "allreduce", GiB, a) for a in ("ring", "hierarchical")]
    monkeypatch.setattr(cost_model, "SAMPLE_ISLANDS", 100)
    monkeypatch.setattr(hierarchical, "SAMPLE_ISLANDS", 100)
    whole = [cost(system, world, "allreduce", GiB, a) for a in ("ring", "hierarchical")]
    for s, w in zip(sampled, whole):
        assert s.time == pytest.approx(w.time, rel=0.01)


BIG_ISLANDS = """
use "links.topo"
use "devices.topo"
group Big {
  gpu[130] : H100
  sw : CX7Switch
  nic : CX7
  gpu[*] <-> sw : pcie5
  nic <-> sw : pcie5
}
group Two {
  node[2] : Big
  leaf : QM9700
  node[*].nic <-> leaf : ndr
}
system two : Two
"""


def test_refusals():
    a100 = topoc.load(library_file("dgx_a100.topo"))
    with pytest.raises(CostError, match="NVLS"):
        cost(a100, RankGroup("ranks", tuple(range(8))), "allreduce", GiB, "nvls")
    with pytest.raises(CostError, match="no 'tree'"):
        cost(a100, RankGroup("ranks", tuple(range(8))), "alltoall", GiB, "tree")
    big = topoc.compile(BIG_ISLANDS, library_file("links.topo").parent / "big.topo")
    with pytest.raises(CostError, match="up to 256 ranks in two islands"):
        cost(big, RankGroup("world", tuple(range(260))), "alltoall", GiB)

    tray = topoc.load(library_file("gb200_tray.topo"))   # two Superchips, no NVSwitch: apart
    with pytest.raises(CostError, match="no path from .*not all linked"):
        cost(tray, RankGroup("world", tuple(range(4))), "allreduce", GiB)


def test_one_rank_costs_a_launch():
    system = topoc.load(library_file("dgx_h100.topo"))
    got = cost(system, RankGroup("ranks", (3,)), "allreduce", GiB)
    assert got.time == pytest.approx(nccl_profile().launch_us * 1e-6) and got.busbw == 0


def test_alltoall_across_nodes_gets_one_nic():
    """All-to-all cannot aggregate NICs (nccl-tests issue 267): each GPU's remote traffic
    leaves through its own NIC."""
    system = topoc.load(library_file("h100_cluster.topo"), {"nodes": 4})
    group = RankGroup("ranks", (0, 8, 16, 24))          # GPU 0 of each node: one rail
    got = cost(system, group, "alltoall", GiB)
    assert got.bottleneck == "infiniband"
    assert 40e9 <= got.busbw <= 49e9


def _switched(lane: str, latency: str) -> topoc.System:
    """Eight B200s on two NVLink switch chips, 9 lanes to each, links as declared."""
    return topoc.loads(f'''use "nvidia/devices.topo"
link nv : nvlink {{ bandwidth = {lane}  latency = {latency} }}
group Box {{
  gpu[8] : B200
  sw[2] : NVSwitch5
  gpu[*] <-> sw[*] : nv x 9
}}
system box : Box
''')


def test_declared_lane_bandwidth_drives_the_cost():
    """NCCL's per-architecture figure is an efficiency on the declared lane, not a ceiling:
    a 100 GB/s-per-lane part costs faster than a B200's 50 GB/s lanes."""
    group = RankGroup("ranks", tuple(range(8)))
    b200 = cost(_switched("50 GB/s", "0.6 us"), group, "allreduce", GiB, "ring")
    faster = cost(_switched("100 GB/s", "0.6 us"), group, "allreduce", GiB, "ring")
    assert faster.busbw > 1.9 * b200.busbw
    assert b200.busbw == pytest.approx(18 * 40.1e9, rel=0.05)   # NCCL's 40.1 GB/s a lane


def test_declared_latency_drives_the_cost():
    group = RankGroup("ranks", tuple(range(8)))
    slow = cost(_switched("50 GB/s", "600 ms"), group, "allreduce", KiB, "ring")
    none = cost(_switched("50 GB/s", "0 us"), group, "allreduce", KiB, "ring")
    ref = cost(_switched("50 GB/s", "0.6 us"), group, "allreduce", KiB, "ring")
    assert slow.time > 1.0 > none.time                 # 14 steps over two 600 ms links
    assert none.time == pytest.approx(ref.time)         # NCCL's figure holds the reference


def test_host_staged_pairs_cost_two_copies_and_the_report_names_them():
    """On a two-socket PCIe server, GPUs under one PCIe switch talk peer to peer; GPUs on
    different sockets copy through host memory, which the model charges twice."""
    from topoc.compiler.analysis.strategy import analyse
    server = topoc.load(library_file("pcie_server.topo"))
    p2p = cost(server, RankGroup("ranks", (0, 1)), "sendrecv", GiB)
    staged = cost(server, RankGroup("ranks", (0, 7)), "sendrecv", GiB)
    assert server.locality.staged(0, 7) and not server.locality.staged(0, 1)
    assert staged.time > 1.5 * p2p.time
    text = library_file("pcie_server.topo").read_text().split("system ")[0]
    mine = topoc.loads(text.replace('use "links.topo"', 'use "nvidia/links.topo"')
                       .replace('use "devices.topo"', 'use "nvidia/devices.topo"')
                       + "system server : PCIeServer\nparallel p on server { dp = 8  traffic "
                       "{ dp allreduce 1 GB } }\n")
    flow = analyse(mine, "p").flows[0]
    assert "stage through host memory" in flow.note and "server.gpu0" in flow.note


def test_pat_is_weighed_only_with_one_gpu_per_node():
    cluster = topoc.load(library_file("h100_cluster.topo"), {"nodes": 4})
    spread = RankGroup("ranks", (0, 8, 16, 24))            # one GPU on each of 4 nodes
    packed = RankGroup("ranks", tuple(range(8)))
    assert "pat" in auto_algorithms(cluster, spread, "allgather")
    assert "pat" not in auto_algorithms(cluster, packed, "allgather")
    assert "pat" not in auto_algorithms(cluster, spread, "allreduce")    # NCCL: not for all-reduce
    pat = cost(cluster, spread, "reducescatter", GiB, "pat")
    ring = cost(cluster, spread, "reducescatter", GiB, "ring")
    # tuning.cc: busBw *= .75; 8 + log2i(4) x 14 / 3.5 + 4 x 2.8 us, against the ring's six
    # network steps at 14 us each
    assert pat.busbw == pytest.approx(0.75 * ring.busbw, rel=0.01) and pat.latency < ring.latency
    record = cost_model.profile(cluster, spread, "reducescatter", "pat")
    assert algos.get("pat").latency(record, "reducescatter", 4, 2) == pytest.approx(
        8 + 2 * 14 / 3.5 + 4 * 2.8 + 2 * record.net_declared / 3.5)
    with pytest.raises(CostError, match="one GPU per node"):
        cost(cluster, packed, "allgather", GiB, "pat")


def test_a_named_protocol_skips_the_algorithms_without_it():
    cluster = topoc.load(library_file("h100_cluster.topo"), {"nodes": 4})
    spread = RankGroup("ranks", (0, 8, 16, 24))            # PAT is a candidate: Simple only
    rows = sweep(cluster, spread, "allgather", [MiB], protocol="LL")
    assert [(r.algorithm, r.protocol) for r in rows] == [("ring", "LL")]
    dgx = topoc.load(library_file("dgx_h100.topo"))        # all-to-all: direct has no LL128
    with pytest.raises(CostError, match="no algorithm runs alltoall with the LL128"):
        sweep(dgx, RankGroup("world", tuple(range(8))), "alltoall", [MiB], protocol="LL128")
