"""Locality: islands and each island's ranks, rail NICs, and caches that die with the system."""

from __future__ import annotations

import gc
import weakref

import pytest

import topoc

from ...conftest import LIBRARY, library_file

FILES = sorted(p for p in LIBRARY.rglob("*.topo") if "\nsystem " in p.read_text())


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


def _search_each_gpu(loc, system):
    """socket, nearest NICs, own NIC and its socket per rank as the per-GPU searches give them
    (the way Locality answered before it searched once per host shape)."""
    out = ([], [], [], [])
    for r, g in enumerate(system.gpus):
        cpus, nics = loc._nearest(g.id, "cpu"), loc._nearest(g.id, "nic")
        out[0].append(cpus[0] if cpus else "")
        out[1].append(nics)
        if not nics:
            out[2].append("")
            out[3].append("")
            continue
        sharing = [q for q in loc.island_ranks[loc.island[r]]
                   if loc._nearest(system.gpus[q].id, "nic") == nics]
        own = nics[sharing.index(r) % len(nics)]
        out[2].append(own)
        theirs = loc._nearest(own, "cpu")
        out[3].append(theirs[0] if theirs else "")
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_searches_once_per_host_shape_equal_searches_per_gpu(path):
    system = topoc.load(path)
    loc = system.locality
    assert tuple(loc.gpu_hosts) == _search_each_gpu(loc, system)


def test_host_shapes_with_a_remote_nic_and_names_that_sort_differently():
    # two-socket nodes whose NIC hangs off the other socket (W403), ten of them, so that
    # node10 sorts before node2: each copy sorts its own names
    text = """
link pcie4 : pcie { bandwidth = 32 GB/s latency = 1 us }
link upi : inter_socket { bandwidth = 40 GB/s latency = 1 us }
device G : gpu { hbm = 80 GB hbm_bandwidth = 2 TB/s }
device C : cpu { memory = 512 GB }
device N : nic { rate = 400 Gb/s }
group Node {
  cpu[2] : C
  gpu[2] : G
  nic[2] : N
  gpu[i] <-> cpu[0] : pcie4
  nic[i] <-> cpu[1] : pcie4
  cpu[0] <-> cpu[1] : upi
}
group Row { node[12] : Node }
system row : Row
"""
    system = topoc.compile(text, "row.topo")
    loc = system.locality
    assert tuple(loc.gpu_hosts) == _search_each_gpu(loc, system)
    assert loc.gpu_hosts[0][4] == "row.node2.cpu0"
    assert loc.gpu_hosts[3][4] == "row.node2.cpu1"
    assert [loc.nic(r) for r in (4, 5)] == ["row.node2.nic0", "row.node2.nic1"]
    from topoc.compiler.lint.rules import RULES
    found = list(RULES["W403"].check(system, {}))
    assert [f.code for f in found] == ["W403"] * 12         # one per node's pair of sockets
    assert "row.node0.gpu0 -> row.node0.nic0 (and 1 more) (GPU on row.node0.cpu0, NIC on " \
        "row.node0.cpu1)" in found[0].message


def test_copies_whose_ids_sort_unlike_the_first_are_answered_copy_by_copy(monkeypatch):
    # each GPU's host part holds its own node's NIC and the next node's: node9's pair sorts
    # nica first, node10's nicb first ("row.n10" < "row.n9"), so one offset cannot answer
    # every copy and the shape is answered copy by copy
    text = """
link pcie4 : pcie { bandwidth = 32 GB/s latency = 1 us }
device G : gpu { hbm = 80 GB hbm_bandwidth = 2 TB/s }
device N : nic { rate = 400 Gb/s }
group Node {
  gpu : G
  nica : N
  nicb : N
  gpu <-> nica : pcie4
}
group Row {
  n[12] : Node
  n[k + 0].gpu <-> n[k + 1].nicb : pcie4
}
system row : Row
"""
    from topoc.compiler.ir.locality import Locality
    system = topoc.compile(text, "row.topo")
    loc = system.locality
    answers = []
    at_once = Locality._shape_at_once

    def spy(self, *args):
        answers.append(at_once(self, *args))
        return answers[-1]
    monkeypatch.setattr(Locality, "_shape_at_once", spy)
    assert tuple(loc.gpu_hosts) == _search_each_gpu(loc, system)
    assert False in answers
    assert loc.gpu_hosts[1][9] == ("row.n10.nicb", "row.n9.nica")
    assert loc.gpu_hosts[1][0] == ("row.n0.nica", "row.n1.nicb")


@pytest.mark.parametrize("path", FILES[::3], ids=lambda p: p.name)
def test_the_copy_by_copy_answers_equal_the_answers_at_once(path, monkeypatch):
    from topoc.compiler.ir.locality import Locality
    system = topoc.load(path)
    at_once = tuple(system.locality.gpu_hosts)
    monkeypatch.setattr(Locality, "_shape_at_once", lambda *_a: False)
    again = topoc.load(path)
    assert tuple(again.locality.gpu_hosts) == at_once
    assert again.locality.nic_index.tolist() == system.locality.nic_index.tolist()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_integer_order_keys_sort_as_the_locality_keys(path):
    system = topoc.load(path)
    loc = system.locality
    ranks = range(len(system.gpus))
    assert sorted(ranks, key=lambda r: loc.order_keys[r]) == sorted(ranks, key=loc.key)


#: Three NVLink pairs in a box: gpu0's pair reaches PCIe switch sw0 only through gpu1, gpu2's
#: pair hangs off sw0 too, gpu4's pair off sw1; both switches off the one CPU.
BOX = """
link nvl : nvlink { bandwidth = 25 GB/s latency = 1 us }
link pcie4 : pcie { bandwidth = 32 GB/s latency = 1 us }
device G : gpu { hbm = 80 GB hbm_bandwidth = 2 TB/s }
device C : cpu { memory = 512 GB }
device S : pcie_switch { }
group Box {
  cpu : C
  sw[2] : S
  gpu[6] : G
  gpu[0] <-> gpu[1] : nvl
  gpu[2] <-> gpu[3] : nvl
  gpu[4] <-> gpu[5] : nvl
  gpu[1] <-> sw[0] : pcie4
  gpu[2] <-> sw[0] : pcie4
  gpu[4] <-> sw[1] : pcie4
  sw[i] <-> cpu : pcie4
}
system box : Box
"""


def test_an_island_holds_an_nvlink_pair_whose_first_gpu_has_no_host_link():
    # islands start from the NVLink domains and join the host links on them: gpu0's domain
    # {gpu0, gpu1} must be one island with every GPU of the box (the labels once spread to
    # the links' ends, not their roots, and left gpu0 an island of its own)
    loc = topoc.compile(BOX, "box.topo").locality
    assert loc.island == [0] * 6 and loc.island_ranks == [list(range(6))]


def _p2p_sets_by_links(system):
    """The peer-to-peer sets as the string-keyed union-find over the links left them: NVLink
    joins, and PCIe links with no CPU at either end."""
    from topoc.compiler.ir.locality import UnionFind
    sets, kind = UnionFind(), {d.id: d.kind for d in system.devices}
    for link in system.links:
        if link.cls == "nvlink" or (link.cls == "pcie" and "cpu" not in
                                    (kind[link.src], kind[link.dst])):
            sets.union(link.src, link.dst)
    parts: dict[str, set] = {}
    for d in system.devices:
        parts.setdefault(sets.find(d.id), set()).add(d.id)
    return sorted(map(sorted, parts.values()))


def _p2p_sets(system):
    p2p, parts = system.locality.p2p, {}
    for d in system.devices:
        parts.setdefault(p2p.find(d.id), set()).add(d.id)
    return sorted(map(sorted, parts.values()))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_p2p_sets_equal_a_union_find_over_the_links(path):
    system = topoc.load(path)
    assert _p2p_sets(system) == _p2p_sets_by_links(system)


def test_p2p_sets_join_domains_under_pcie_switches_and_never_through_a_cpu():
    # gpu0's and gpu2's pairs meet under sw0; gpu4's pair reaches them only through the
    # CPU's root complex
    system = topoc.compile(BOX, "box.topo")
    gpus = [g.id for g in system.gpus]
    assert [p for p in _p2p_sets(system) if any(g in p for g in gpus)] == \
        [["box.gpu0", "box.gpu1", "box.gpu2", "box.gpu3", "box.sw0"],
         ["box.gpu4", "box.gpu5", "box.sw1"]]
    assert _p2p_sets(system) == _p2p_sets_by_links(system)
    loc = system.locality
    assert not loc.staged(0, 3) and loc.staged(0, 4) and loc.staged(3, 5)


#: library files too large for a whole-graph comparison at their default size
_SMALL = {"h100_fourtier": {"nodes": 8}, "nvl72_cluster": {"racks": 2},
          "nvl72_fourtier": {"racks": 2}, "nvl72_superpod": {"racks": 2},
          "h100_superpod": {"nodes": 8}}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_reach_labels_are_the_components_of_the_links_of_those_classes(path):
    """Two devices share a label exactly when networkx finds them in one component of the
    graph of those links (every link, the scale-out ones, the host ones)."""
    import networkx as nx

    from topoc.compiler.ir.locality import reach_labels
    from topoc.compiler.ir.system import SCALEOUT_CLASSES
    system = topoc.load(path, _SMALL.get(path.stem, {}))
    graph = system.graph
    for classes in (None, SCALEOUT_CLASSES, ("pcie", "nvlink_c2c", "inter_socket")):
        label = reach_labels(system, classes).tolist()
        sub = nx.Graph()
        sub.add_nodes_from(d.id for d in system.devices)
        sub.add_edges_from((u, v) for u, v, d in graph.edges(data=True)
                           if classes is None or d["cls"] in classes)
        index = {d.id: i for i, d in enumerate(system.devices)}
        expected = sorted(sorted(index[x] for x in c) for c in nx.connected_components(sub))
        got: dict[int, list[int]] = {}
        for i, x in enumerate(label):
            got.setdefault(x, []).append(i)
        assert sorted(got.values()) == expected
        assert all(x == min(members) for x, members in got.items())


#: Twelve GPUs, each between two CPUs whose names sort the other way round from copy to copy
#: (row.c2 before row.c14, row.c12 before row.c0 is false: "row.c0" < "row.c12"), so one host
#: shape whose copies disagree on which socket name is least.
FLIPPED = """
link pcie4 : pcie { bandwidth = 32 GB/s latency = 1 us }
device G : gpu { hbm = 80 GB hbm_bandwidth = 2 TB/s }
device C : cpu { memory = 512 GB }
group Row {
  g[12] : G
  c[24] : C
  g[i] <-> c[i] : pcie4
  g[i] <-> c[i + 12] : pcie4
}
system row : Row
"""


def test_copies_that_order_their_names_differently_are_each_sorted():
    import numpy as np

    from topoc.compiler.ir.locality import host_shapes
    system = topoc.compile(FLIPPED, "row.topo")
    loc = system.locality
    assert tuple(loc.gpu_hosts) == _search_each_gpu(loc, system)
    assert loc.gpu_hosts[0][0] == "row.c0" and loc.gpu_hosts[0][2] == "row.c14"
    # the shape's copies disagree, so the offsets of its representative are not used
    ids = np.array([d.id for d in system.devices], dtype=object)
    (members, edges, copies), = host_shapes(loc)
    plan = [(0, [12, 24], [])]
    n = len(system.gpus)

    def at_once(firsts) -> bool:
        socket, own, nic_socket = (np.full(n, "", dtype=object) for _ in range(3))
        return loc._shape_at_once(ids, np.asarray(firsts, dtype=np.int64), plan, {}, socket,
                                  [()] * n, own, nic_socket)
    assert not at_once(copies)
    assert at_once(copies[:2])


#: One island, its GPUs on two sockets declared in the opposite order to their names' order.
SWAPPED = """
link pcie4 : pcie { bandwidth = 32 GB/s latency = 1 us }
link upi : inter_socket { bandwidth = 40 GB/s latency = 1 us }
device G : gpu { hbm = 80 GB hbm_bandwidth = 2 TB/s }
device C : cpu { memory = 512 GB }
group Node {
  cpu_b : C
  cpu_a : C
  gpu[4] : G
  gpu[0] <-> cpu_b : pcie4
  gpu[1] <-> cpu_a : pcie4
  gpu[2] <-> cpu_b : pcie4
  gpu[3] <-> cpu_a : pcie4
  cpu_a <-> cpu_b : upi
}
group Row { node[11] : Node }
system row : Row
"""


def test_order_keys_sort_names_when_the_declaration_order_is_not_theirs():
    # cpu_b is declared first, so device order puts it before cpu_a: the keys from indices
    # would be wrong and the names are sorted instead; in node order (node10 after node9) the
    # indices agree with the names and no name is sorted
    system = topoc.compile(SWAPPED, "row.topo")
    loc = system.locality
    ranks = range(len(system.gpus))
    assert loc._keys_by_index(loc.gpu_hosts[0], None) is None
    assert sorted(ranks, key=lambda r: loc.order_keys[r]) == sorted(ranks, key=loc.key)
    assert sorted(range(4), key=lambda r: loc.order_keys[r]) == [1, 3, 0, 2]
    system = topoc.compile(SWAPPED.replace("cpu_b", "cpu_0"), "row.topo")
    loc = system.locality
    assert loc._keys_by_index(loc.gpu_hosts[0], None) is not None
    assert sorted(ranks, key=lambda r: loc.order_keys[r]) == sorted(ranks, key=loc.key)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_host_adjacency_read_per_device_equals_a_table_of_every_host_link(path):
    # the lazy view must list what a dict filled from every host link listed, in link order
    system = topoc.load(path)
    loc = system.locality
    a, b = loc._host_ends
    table: dict[str, list[str]] = {}
    for x, y in zip(a.tolist(), b.tolist()):
        u, v = system.devices[x].id, system.devices[y].id
        table.setdefault(u, []).append(v)
        table.setdefault(v, []).append(u)
    assert all(loc.host_adj[d.id] == table.get(d.id, []) for d in system.devices)
    assert all(loc.host_adj.get(d.id, ()) == table.get(d.id, ()) for d in system.devices)


def test_ids_of_one_digit_shape_compare_naturally_as_plain_strings():
    # the order keys' check parses only ids whose digits sit elsewhere; every other pair is
    # compared as strings, which must be the natural order
    import random

    from topoc.compiler.ir.locality import _DIGIT_SHAPE, _natural, _natural_less
    rng = random.Random(7)
    alphabet = "ab.0123456789_"
    for _ in range(20000):
        a, b = ("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
                for _ in range(2))
        same = a.translate(_DIGIT_SHAPE) == b.translate(_DIGIT_SHAPE)
        assert _natural_less(a, b, same) == (_natural(a) < _natural(b)), (a, b)
    assert _natural_less("rack9.cpu0", "rack10.cpu0", False)
    assert not _natural_less("rack9.cpu0", "rack10.cpu0", True)    # as strings: wrong
