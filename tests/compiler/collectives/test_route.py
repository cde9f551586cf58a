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


def _reference_hops(router, nic):
    """The fabric hops from ``nic`` to every device, as the router's unbounded search had it."""
    from topoc.compiler.ir.system import SCALEOUT_CLASSES
    found, frontier = {nic: 0}, [nic]
    while frontier:
        nxt = []
        for u in frontier:
            for v, edges in router.graph[u].items():
                if v not in found and any(d["cls"] in SCALEOUT_CLASSES for d in edges.values()):
                    found[v] = found[u] + 1
                    if router.kind[v] not in ("gpu", "cpu"):
                        nxt.append(v)
        frontier = nxt
    return found


@pytest.mark.parametrize("name, defines", [("nvl72_cluster.topo", {"racks": 3}),
                                           ("nvl72_fourtier.topo", {"racks": 33}),
                                           ("h100_cluster.topo", {"nodes": 4})])
def test_no_route_answers_and_proxy_hops_equal_the_unbounded_searches(name, defines):
    """A fabric search between NICs of different rail planes says 'no route' from the
    components (``reach_labels``) as the full search did after walking the plane; the PXN
    probe's bounded pass gives every island NIC it needs the hops the whole-fabric pass gave."""
    from topoc.compiler.collectives.paths import NoRoute, RailRouter
    system = topoc.load(library_file(name), defines)
    loc = system.locality
    fast, slow = RailRouter(system), RailRouter(system)
    slow.fabric._reach = [0] * len(system.devices)      # every pair searched
    nics = sorted({loc.nic(r) for r in range(len(system.gpus))})
    picked = nics[:6] + nics[-6:]
    refused = 0
    for a, b in itertools.permutations(picked, 2):
        try:
            want = slow.fabric.path(a, b)
        except NoRoute:
            want = None
        try:
            got = fast.fabric.path(a, b)
        except NoRoute:
            got = None
            refused += 1
        assert got == want
    assert (refused > 0) == name.startswith("nvl72")
    last = loc.island_ranks[-1]
    for nic in picked:
        island = loc.island[last[0]]
        bounded = fast._fabric_hops(nic, island, last)
        full = _reference_hops(fast, nic)
        for r in last:
            own = loc.nic(r)
            assert bounded.get(own) == full.get(own)
    # transfers across islands route as before, PXN crossings included
    step = len(system.gpus) // 24
    for src, dst in zip(range(0, len(system.gpus), step), range(77, len(system.gpus), step)):
        a, b = system.gpus[src].id, system.gpus[dst].id
        assert fast.path(a, b) == slow.path(a, b)


def _fabric_pairs(system, count: int = 60):
    """Pairs of NICs the scale-out fabric joins, spread over the system (a few from each
    rail plane, first and last included), each with two ECMP buckets."""
    from topoc.compiler.ir.locality import reach_labels
    from topoc.compiler.ir.system import SCALEOUT_CLASSES, device_indices
    label, index = reach_labels(system, SCALEOUT_CLASSES), device_indices(system)
    planes: dict[int, list[str]] = {}
    for d in system.devices:
        if d.kind == "nic":
            planes.setdefault(int(label[index[d.id]]), []).append(d.id)
    pairs = []
    for nics in planes.values():
        step = max(1, len(nics) // 6)
        picked = nics[::step][:6] + nics[-2:]
        pairs += [(a, b) for a, b in itertools.permutations(picked, 2) if a != b][:count // 4]
    return [(a, b, bucket) for a, b in pairs[:count] for bucket in (0, 5)]


@pytest.mark.parametrize("name, defines", [("nvl72_fourtier.topo", {"racks": 33}),
                                           ("nvl72_superpod.topo", {}),
                                           ("h100_superpod.topo", {}),
                                           ("a100_superpod.topo", {}),
                                           ("h100_roce_cluster.topo", {}),
                                           ("h100_cluster.topo", {})])
def test_layered_fabric_paths_equal_the_least_cost_search(name, defines):
    """Between two NICs of a layered fabric the router climbs the two up-cones instead of
    searching (``layers``): the path is the one the bidirectional search finds, and the cones
    answer most pairs themselves (a refusal falls back to the search)."""
    from topoc.compiler.collectives.paths import NoRoute
    from topoc.compiler.ir.system import SCALEOUT_CLASSES
    system = topoc.load(library_file(name), defines)
    fast, slow = Router(system, SCALEOUT_CLASSES), Router(system, SCALEOUT_CLASSES)
    assert fast._layered() is not None
    slow._cones = None                                   # the search alone
    answered = [0]
    cones = fast._cones = fast._layered()
    climb = cones.path

    def counted(*args):
        found = climb(*args)
        answered[0] += found is not None
        return found
    cones.path = counted
    routed = 0
    for a, b, bucket in _fabric_pairs(system):
        try:
            want = slow.path(a, b, bucket)
        except NoRoute:
            want = None
        try:
            got = fast.path(a, b, bucket)
        except NoRoute:
            got = None
        assert got == want, (a, b, bucket)
        routed += want is not None and len(want) > 2
    assert routed > 20 and answered[0] >= routed * 0.9


def _fabric(extra: str) -> topoc.System:
    """Two hosts of two NICs under two leaves and a spine, plus ``extra`` links (a NIC of two
    ports, ``bridge``, is there to be cabled)."""
    return topoc.loads(f'''use "nvidia/links.topo"
use "nvidia/devices.topo"
device Dual : nic {{ rate = 400 Gb/s  ports.pcie = 1  ports.infiniband = 2  vendor = "nvidia" }}
group H {{ cpu : Grace  nic[2] : CX7  nic[*] <-> cpu : pcie5 }}
group C {{ host a : H "a"  host b : H "b"  bridge : Dual  leaf[2] : QM9700  spine : QM9700
  a.nic[n] <-> leaf[n] : ndr  b.nic[n] <-> leaf[n] : ndr  leaf[*] <-> spine : ndr
  {extra} }}
system c : C
''')


def test_fabrics_the_cones_cannot_answer_are_searched():
    """A link between two leaves (one level) makes the fabric not layered: no cones. A NIC
    cabled to both leaves joins them under the spine, so a path of as many hops may run
    below the level where the cones meet: the cones refuse and the search answers; either
    way the path is the least-cost search's."""
    from topoc.compiler.collectives.layers import layered
    from topoc.compiler.ir.system import SCALEOUT_CLASSES
    flat = _fabric("leaf[0] <-> leaf[1] : ndr")
    assert layered(flat) is None
    assert Router(flat, SCALEOUT_CLASSES)._layered() is None
    bridged = _fabric("bridge <-> leaf[*] : ndr")
    assert layered(bridged) is not None
    fast, slow = Router(bridged, SCALEOUT_CLASSES), Router(bridged, SCALEOUT_CLASSES)
    slow._cones = None
    cones = fast._layered()
    weight = lambda u, v, edges: 6.0                      # noqa: E731 (every hop alike)
    assert cones.path("c.a.nic0", "c.b.nic1", weight, 6.0) is None   # refused: the bridge
    plain = Router(_fabric(""), SCALEOUT_CLASSES)._layered()
    assert plain.path("c.a.nic0", "c.b.nic1", weight, 6.0) == \
        ["c.a.nic0", "c.leaf0", "c.spine", "c.leaf1", "c.b.nic1"]
    ends = ["c.a.nic0", "c.a.nic1", "c.b.nic0", "c.b.nic1"]
    for bucket in range(8):
        for a, b in itertools.permutations(ends, 2):
            assert fast.path(a, b, bucket) == slow.path(a, b, bucket)


@pytest.mark.parametrize("name", ["gb200_nvl72", "pcie_server", "aws_p5", "dgx1_v100"])
def test_a_class_limited_search_walks_only_its_classes_and_finds_the_same_paths(name):
    """A router limited to some link classes searches a view of the neighbours those classes
    join (``_ClassView``): the same paths as over the whole adjacency, where the others
    weighed None."""
    from topoc.compiler.collectives.paths import NoRoute
    from topoc.compiler.ir.system import SCALEOUT_CLASSES
    system = topoc.load(f"{LIB}/{name}.topo")
    ids = [g.id for g in system.gpus][:8] + [d.id for d in system.devices
                                             if d.kind in ("nic", "cpu")][:8]
    checked = 0
    for classes in (("pcie", "nvlink_c2c", "inter_socket"), ("nvlink", "nvlink_c2c"),
                    SCALEOUT_CLASSES):
        fast, slow = Router(system, classes), Router(system, classes)
        assert fast._view is not fast.graph
        slow._view = slow.graph                              # the whole adjacency
        fast._cones = slow._cones = None                     # the search, both sides
        for (a, b), bucket in itertools.product(itertools.permutations(ids, 2), (0, 3)):
            found = []
            for router in (fast, slow):
                try:
                    found.append(router.path(a, b, bucket))
                except NoRoute:
                    found.append(None)
            assert found[0] == found[1], (a, b, bucket)
            checked += found[0] is not None
    assert checked > 100
