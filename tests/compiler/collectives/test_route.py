"""The router: its one- and two-hop shortcut agrees with the full least-cost search."""

import itertools

import pytest

import topoc
from topoc.compiler.collectives.paths import Router

from ...conftest import library_file

LIB = "library/nvidia"


@pytest.mark.parametrize("name", ["dgx_h100", "gb200_nvl72", "pcie_server", "dgx_a100"])
def test_shortcut_matches_dijkstra(name):
    system = topoc.load(f"{LIB}/{name}.topo")
    fast, slow = Router(system), Router(system)
    slow._short = lambda *args: None          # force the full search
    ids = [g.id for g in system.gpus][:12] + [d.id for d in system.devices
                                              if d.kind in ("nic", "switch")][:4]
    checked = 0
    for (a, b), bucket in itertools.product(itertools.permutations(ids, 2), (0, 5)):
        assert fast.path(a, b, bucket) == slow.path(a, b, bucket)
        checked += 1
    assert checked > 100


def test_schedule_routes_cross_islands_on_the_rails_the_cost_model_charges():
    """Every inter-island transfer of a routed ring leaves through the sender's own NIC and
    enters through the receiver's, as the cost model's loads count it; on an odd island count
    the one crossing that cannot keep its rail goes over PXN (NVLink, then a NIC on the
    receiver's rail), never through a GPU-to-GPU fabric detour."""
    from topoc.compiler.collectives.loads import Resources
    from topoc.compiler.ir.groups import select_group
    from topoc.compiler.collectives.route import route
    from topoc.compiler.collectives.schedule import schedule
    for name, defines, ranks in (("h100_cluster.topo", {"nodes": 2}, "0..15"),
                                 ("nvl72_cluster.topo", {"racks": 3}, "0..7,72..79,144..151")):
        system = topoc.load(library_file(name), defines)
        loc = system.locality
        group = select_group(system, ranks_text=ranks)
        sched = schedule(system, group, "allgather", "ring", 2**20, channels=4)
        res = Resources(system, 90)
        pxn = 0
        for rnd in route(system, sched):
            for t in rnd:
                a, b = group.ranks[t.src], group.ranks[t.dst]
                if loc.island[a] == loc.island[b]:
                    continue
                assert tuple(t.links) == res.router.path(sched.devices[t.src],
                                                         sched.devices[t.dst], t.src_chunk)
                ends = {lk for lk in t.links if "nic" in lk}
                mine, theirs = loc.nic(a), loc.nic(b)
                assert any(theirs in lk for lk in ends)
                if not any(mine in lk for lk in ends):
                    pxn += 1
                    assert "nvlink" in t.links[0], t.links      # PXN: NVLink to the proxy first
        assert (pxn > 0) == (name.startswith("nvl72"))


def test_a_gpu_whose_nic_is_gone_crosses_nvlink_to_a_peer_next_to_a_working_nic():
    """PXN: with NICs 2 and 3 excluded (NCCL_IB_HCA=mlx5_0,mlx5_1) GPU 4 of a 4-NIC HGX A100
    reaches the network through GPU 0 or 1 over NVLink, never through the CPUs."""
    from pathlib import Path

    from topoc.compiler.collectives.paths import RailRouter
    from topoc.compiler.ir.degrade import apply

    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "degraded" / "hgx_a100_4nic.topo"
    healthy = topoc.load(fixture)
    system = apply(healthy, ["pair.node*.nic[23]"]).system
    path = RailRouter(system).path("pair.node0.gpu4", "pair.node1.gpu4")
    assert not any("cpu" in link for link in path)
    assert "nvlink3" in path[0] and any("nic0" in link or "nic1" in link for link in path)
    # the healthy system keeps each GPU on its own switch's NIC, no NVLink hop
    direct = RailRouter(healthy).path("pair.node0.gpu4", "pair.node1.gpu4")
    assert direct[0] == "pair.node0.gpu4<->pair.node0.pcie2:pcie4"
