"""Schedules: every collective x algorithm replays correctly on the library systems, orders are
topology-aware, routes follow the preferences, impossible requests are refused."""

from __future__ import annotations

import pytest

import topoc
from topoc.backends.schedule_json import document
from topoc.compiler.collectives import algorithms as alg
from topoc.compiler.ir.groups import GroupError, parse_rank_list, select_group
from topoc.compiler.collectives.replay import check_links, replay
from topoc.compiler.collectives.paths import Router
from topoc.compiler.collectives.route import route
from topoc.compiler.collectives.schedule import SUPPORTED, ScheduleError, schedule

from ...conftest import library_file

SYSTEMS = {
    "dgx_h100": ("dgx_h100.topo", None, "0..7"),
    "nvl72": ("gb200_nvl72.topo", None, "0..15"),
    "pcie": ("pcie_server.topo", None, "0..7"),
    "racks": ("nvl72_cluster.topo", {"racks": 2}, "0..3,72..75"),
    "nodes": ("h100_cluster.topo", {"nodes": 32}, "0..15"),
}


@pytest.fixture(scope="module", params=sorted(SYSTEMS))
def system_and_group(request):
    name, defines, ranks = SYSTEMS[request.param]
    system = topoc.load(library_file(name), defines)
    return request.param, system, select_group(system, ranks_text=ranks)


def endpoints(system):
    return {link.id: (link.src, link.dst) for link in system.links}


@pytest.mark.parametrize("collective,algorithm",
                         [(c, a) for c, algs in SUPPORTED.items() for a in algs])
def test_every_collective_replays(system_and_group, collective, algorithm):
    name, system, group = system_and_group
    try:
        sched = schedule(system, group, collective, algorithm, 3 * 2**20 + 7)
    except ScheduleError as exc:
        # Only NVLS may be refused here: these groups span domains or switches cannot reduce.
        assert algorithm == "nvls" and name in ("pcie", "racks", "nodes"), exc
        return
    doc = document(system, sched)
    assert replay(doc) == []
    assert check_links(doc, endpoints(system)) == []
    assert all(t["bytes"] == sched.slot_bytes(t["src_chunk"]) for r in doc["rounds"] for t in r)
    assert sum(sched.slot_bytes(c) for c in range(sched.chunks)) == sched.bytes
    assert sched.transfer_count() == sum(len(r) for r in doc["rounds"])


def test_ring_on_dgx_uses_nvlink_only():
    system = topoc.load(library_file("dgx_h100.topo"))
    sched = schedule(system, select_group(system, ranks_text="0..7"), "allreduce", "ring")
    cls = {link.id: link.cls for link in system.links}
    for steps in route(system, sched):
        for t in steps:
            assert [cls[lid] for lid in t.links] == ["nvlink", "nvlink"]


def test_pcie_server_ring_crosses_sockets_twice():
    system = topoc.load(library_file("pcie_server.topo"))
    # A scrambled rank order must not scramble the ring.
    group = select_group(system, ranks_text="5,0,7,2,4,1,6,3")
    sched = schedule(system, group, "allgather", "ring", channels=1)
    cls = {link.id: link.cls for link in system.links}
    crossings = [t for t in route(system, sched)[0]
                 if any(cls[lid] == "inter_socket" for lid in t.links)]
    assert len(crossings) == 2
    # Pairs under one PCIe switch go peer-to-peer, never through a CPU.
    for t in route(system, sched)[0]:
        a, b = (system.gpus[group.ranks[p]].id for p in (t.src, t.dst))
        if system.locality.pcie_switch(group.ranks[t.src]) == \
                system.locality.pcie_switch(group.ranks[t.dst]):
            assert all(cls[lid] == "pcie" for lid in t.links) and len(t.links) == 2, (a, b)


def test_rings_cross_nodes_on_their_rails():
    system = topoc.load(library_file("h100_cluster.topo"), {"nodes": 64})
    group = select_group(system, ranks_text="0..31")
    sched = schedule(system, group, "allreduce", "ring", channels=4)
    cls = {link.id: link.cls for link in system.links}
    ends = endpoints(system)
    hops = 0
    for t in route(system, sched)[0]:
        ib = [lid for lid in t.links if cls[lid] == "infiniband"]
        if ib:
            hops += 1
            # NET -> GPU -> NET on one rail: NIC -> the rail's leaf -> NIC, no spine.
            assert len(ib) == 2
            a, b = (system.gpus[group.ranks[p]].id for p in (t.src, t.dst))
            nics = [x for lid in ib for x in ends[lid] if ".nic" in x]
            assert {n.rsplit("nic", 1)[1] for n in nics} == {a.rsplit("gpu", 1)[1]}
    assert hops == 4 * 4   # 4 nodes, one hop out of each per channel


def test_gpudirect_uses_the_local_nic():
    system = topoc.load(library_file("h100_cluster.topo"))
    router = Router(system)
    path = router.path("cluster.node0.gpu3", "cluster.node1.gpu3")
    assert path[0] == "cluster.node0.gpu3<->cluster.node0.pcie3:pcie5"
    assert "cluster.node0.nic3<->cluster.node0.pcie3:pcie5" in path


def test_nvls_has_the_switches_as_agents():
    system = topoc.load(library_file("gb200_nvl72.topo"))
    sched = schedule(system, select_group(system), "allreduce", "nvls", 2**30)
    assert len(sched.agents) == 18 and all(".chip" in a for a in sched.agents)
    doc = document(system, sched)
    assert len(doc["rounds"]) == 2 and replay(doc) == []


def test_auto_takes_the_fastest_prediction():
    """Among what the schedule stage can plan; NVLS-tree is priced by topoc cost only. Across
    NVL72 racks NCCL's choice credits the tree with a third of its bandwidth (algos/tree.py),
    so there the ring it runs may be slower than the tree topoc predicts."""
    from topoc.compiler.collectives import algos
    from topoc.compiler.collectives.cost import auto_algorithms
    from topoc.compiler.collectives.coster import cost
    from topoc.compiler.collectives.schedule import SUPPORTED
    dgx = topoc.load(library_file("dgx_h100.topo"))
    a100 = topoc.load(library_file("dgx_a100.topo"))
    racks = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 2})
    for system in (dgx, a100, racks):
        world = select_group(system)
        for size in (4096, 2**20, 2**30):
            picked = schedule(system, world, "allreduce", nbytes=size).algorithm
            times = {a: cost(system, world, "allreduce", size, a).time
                     for a in auto_algorithms(system, world, "allreduce", SUPPORTED["allreduce"])}
            credits = {a: algos.get(a).credit(system, world.ranks) for a in times}
            if times[picked] != min(times.values()):
                assert credits["tree"] < 1.0 and picked == "ring", (size, times)
            assert "hierarchical" not in times
    assert schedule(dgx, select_group(dgx), "allreduce").algorithm == "nvls"
    assert schedule(a100, select_group(a100), "allreduce", nbytes=2**30).algorithm == "ring"
    # NCCL runs rings across NVL72 racks (docs/cost.md), and so does auto
    assert schedule(racks, select_group(racks), "allreduce").algorithm == "ring"


def test_auto_falls_back_to_rules_when_the_cost_model_refuses(monkeypatch):
    from topoc.compiler.collectives import cost, schedule as stage
    def refuse(*args, **kwargs):
        raise cost.CostError("no")
    monkeypatch.setattr(stage, "sweep", refuse)
    a100 = topoc.load(library_file("dgx_a100.topo"))     # one node: NCCL builds no tree
    assert schedule(a100, select_group(a100), "allreduce", nbytes=4096).algorithm == "ring"
    assert schedule(a100, select_group(a100), "allreduce", nbytes=2**30).algorithm == "ring"
    nodes = topoc.load(library_file("a100_cluster.topo"), {"nodes": 2})
    assert schedule(nodes, select_group(nodes), "allreduce", nbytes=4096).algorithm == "tree"
    racks = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 2})
    assert schedule(racks, select_group(racks), "allreduce").algorithm != "hierarchical"
    dgx = topoc.load(library_file("dgx_h100.topo"))
    assert schedule(dgx, select_group(dgx), "allgather").algorithm == "nvls"


def test_double_binary_tree_matches_nccl():
    # ncclGetBtree on 14 ranks (the picture in NCCL's trees.cc): 0 -> 8, 8 -> 4, 12; 12 -> 10, 13
    parent = alg.btree(14)
    assert parent[8] == 0 and parent[4] == 8 and parent[12] == 8
    assert parent[10] == 12 and parent[13] == 12 and parent[1] == 2 and parent[3] == 2
    first, second = alg.double_btree(14)
    assert second == [-1 if first[13 - r] < 0 else 13 - first[13 - r] for r in range(14)]
    _, odd = alg.double_btree(7)
    assert odd[1] == -1                         # shifted: rank 1 is the second root
    for n in range(1, 40):
        for tree in alg.double_btree(n):
            assert sorted(alg.depths(tree)).count(0) == 1      # one root, connected


def test_impossible_requests():
    pcie = topoc.load(library_file("pcie_server.topo"))
    with pytest.raises(ScheduleError, match="NVLS needs"):
        schedule(pcie, select_group(pcie), "allreduce", "nvls")
    with pytest.raises(ScheduleError, match="at least 2"):
        schedule(pcie, select_group(pcie, ranks_text="3"), "alltoall")
    with pytest.raises(ScheduleError, match="no 'tree'"):
        schedule(pcie, select_group(pcie), "allgather", "tree")
    with pytest.raises(ScheduleError, match="multiple"):
        schedule(pcie, select_group(pcie), "alltoall", "direct", chunks=12)
    with pytest.raises(GroupError, match="outside the world"):
        parse_rank_list("0..8", 8)
    with pytest.raises(GroupError, match="twice"):
        parse_rank_list("1,1", 8)
    assert parse_rank_list("0..2,7", 8) == (0, 1, 2, 7)


def test_parallel_groups_by_kind():
    system = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 2})
    tp = select_group(system, "tp:1")
    assert tp.ranks == tuple(range(8, 16)) and tp.name == "tp:1"
    dp = select_group(system, "dp:0")
    assert dp.ranks == (0, 72)
    with pytest.raises(GroupError, match="groups 0..71"):
        select_group(system, "dp:72")


def test_compact_schedules_scale():
    # A world ring on a 16-rack NVL72 cluster (1,152 ranks) is an order, not its steps.
    system = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 16})
    sched = schedule(system, select_group(system), "allreduce", "ring", channels=2)
    assert len(sched.rings) == 2 and sorted(sched.rings[0]) == list(range(1152))


def test_materialising_a_huge_schedule_is_refused_up_front():
    # 4,096 ranks: a 2-channel ring all-reduce is 67 M transfers; its orders stay cheap.
    system = topoc.load(library_file("h100_superpod.topo"))
    sched = schedule(system, select_group(system), "allreduce", "ring")
    assert sched.transfer_count() == 2 * 2 * 4096 * 4095
    with pytest.raises(ScheduleError, match="67,092,480 transfers; topoc lists at most"):
        sched.rounds()
    # One rank's steps are generated directly: 2 channels x 2(n-1) rounds x send and receive.
    mine = sched.rounds(position=100)
    assert len(mine) == 2 * 4095
    assert sum(map(len, mine)) == 2 * 2 * 4095 * 2
    assert all(100 in (st[0], st[1]) for r in mine for st in r)


@pytest.mark.parametrize("collective,algorithm",
                         [(c, a) for c, algs in SUPPORTED.items() for a in algs])
def test_one_positions_rounds_are_the_whole_schedules_filtered(collective, algorithm):
    system = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 2})
    ranks = "0..5,72..77" if algorithm != "nvls" else "0..11"
    try:
        sched = schedule(system, select_group(system, ranks_text=ranks), collective, algorithm,
                         2**20, root=3 if collective in ("broadcast", "reduce") else 0)
    except ScheduleError:
        assert algorithm == "nvls"
        return
    whole = sched.rounds()
    for p in range(sched.n):
        assert sched.rounds(p) == [[st for st in r if p in (st[0], st[1])] for r in whole]


def test_replay_catches_defects():
    system = topoc.load(library_file("dgx_h100.topo"))
    doc = document(system, schedule(system, select_group(system, ranks_text="0..3"),
                                    "allreduce", "ring"))
    doc["rounds"][0].append(dict(doc["rounds"][0][0]))       # the same reduce twice
    assert any("twice" in p for p in replay(doc))
    doc = document(system, schedule(system, select_group(system, ranks_text="0..3"),
                                    "allreduce", "ring"))
    doc["rounds"].pop()                                       # a round missing
    assert any("missing" in p for p in replay(doc))


@pytest.mark.parametrize("collective,algorithm",
                         [(c, a) for c, algs in SUPPORTED.items() for a in algs])
def test_json_text_is_the_document(system_and_group, collective, algorithm):
    """``schedule_json.render`` formats each transfer from its routed fields: its text is the
    document as ``json.dumps`` writes it (a transfer a line), for every rank's view too."""
    import json

    from topoc.backends.schedule_json import render
    name, system, group = system_and_group
    try:
        sched = schedule(system, group, collective, algorithm, 3 * 2**20 + 7)
    except ScheduleError:
        return
    for rank in (None, group.ranks[-1]):
        doc = document(system, sched, rank)
        rounds = doc.pop("rounds")
        want = (json.dumps(doc, indent=1)[:-2] + ',\n "rounds": [\n'
                + ",\n".join("  [" + ",\n   ".join(json.dumps(t) for t in r) + "]"
                             for r in rounds) + "\n ]\n}\n")
        assert render(system, sched, rank) == want
