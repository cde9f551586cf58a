"""Where each GPU sits: its island, NVLink domain, CPU socket, PCIe switch and local NICs.

An *island* is what the GPUs reach without the scale-out network (a node, or a whole NVL72
rack). An *NVLink domain* is what they reach over NVLink alone (directly or through NVLink
switches). Both come from one union-find pass over the links, so the cost is linear.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict

from ..base.arrays import unique
from ..base.gcpause import gc_paused
from . import relocate, system
from .system import SCALEOUT_CLASSES, System
from .system import device_indices as system_device_indices
from .modelcodes import model_flags, model_numbers

from .relocate import _HOST_CLASSES, kind_of as _kind_of


class UnionFind:
    """Disjoint sets of device ids; the smallest id of a set is its representative."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        """The representative of ``x``'s set (``x`` joins as a singleton if new)."""
        parent = self.parent
        root = parent.setdefault(x, x)
        while root != parent[root]:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def union(self, a: str, b: str) -> None:
        """Merge the sets of ``a`` and ``b``."""
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


_DIGITS = re.compile(r"(\d+)")


def _natural(device_id: str) -> tuple:
    """``natural`` without the cache (for passes that ask once per id)."""
    parts: list = _DIGITS.split(device_id)
    parts[1::2] = map(int, parts[1::2])
    return tuple(parts)


#: Every ASCII digit as 0: two ids with one shape have their digit runs at the same places
#: and of the same lengths.
_DIGIT_SHAPE = str.maketrans("0123456789", "0000000000")


def _natural_less(a: str, b: str, same_shape: bool) -> bool:
    """``_natural(a) < _natural(b)``. Two ids of one digit shape compare as plain strings do:
    their parts line up, equal-length digit runs compare as numbers do, and the first
    differing character lies in the first differing part; only ids of different shapes are
    parsed (tray9 against tray10, not cpu0 against cpu1)."""
    return a < b if same_shape else _natural(a) < _natural(b)


@functools.lru_cache(maxsize=1 << 16)
def natural(device_id: str) -> tuple:
    """A sort key that compares the numbers in an id as numbers: tray2 before tray10 (cached:
    every GPU of a socket asks for the socket's key)."""
    return _natural(device_id)


def common_prefix(ids) -> str:
    """The longest dotted prefix the ids share: ``rack.tray3`` for the devices of a tray."""
    out = []
    for column in zip(*(i.split(".") for i in ids)):
        if len(set(column)) != 1:
            break
        out.append(column[0])
    return ".".join(out)


def _memo(method):
    """Cache a method's results on its instance. (``functools.lru_cache`` on a method would
    keep every Locality, and with it its whole System, alive for the life of the process.)"""
    @functools.wraps(method)
    def cached(self, *args):
        cache = self.memo.setdefault(method.__name__, {})
        if args not in cache:
            cache[args] = method(self, *args)
        return cache[args]
    return cached


class IndexSets:
    """Disjoint sets of a system's devices kept on integer indices (each device's label, the
    smallest index of its set): what the locality pass builds instead of a string-keyed
    ``UnionFind``. ``find`` takes a device id and returns its set's label, equal for devices
    of one set and only meant for comparing."""

    def __init__(self, index: dict[str, int], label: list[int]):
        self.index = index
        self.label = label

    def find(self, device_id: str) -> int:
        """The label of ``device_id``'s set (a device no link joins is its own set)."""
        return self.label[self.index[device_id]]


def _components(label, a, b):
    """Connected components over the edges ``a[i] -- b[i]``, starting from ``label`` (each
    device's current root; roots are the smallest index of their set and label themselves):
    every device ends up labelled with the smallest index of its component. Each edge hooks
    the larger of its ends' roots under the smaller (the roots, not the ends: a set's root
    need not touch these edges, as when a domain's first device has no host link) and
    pointer jumping shortens chains, in numpy; a pass per step of the longest chain, a
    handful for racks and nodes."""
    import numpy as np

    while True:
        ra, rb = label[a], label[b]
        low = np.minimum(ra, rb)
        new = label.copy()
        np.minimum.at(new, ra, low)
        np.minimum.at(new, rb, low)
        while True:
            jumped = new[new]
            if np.array_equal(jumped, new):
                break
            new = jumped
        if np.array_equal(new, label):
            return label
        label = new


def reach_labels(system: System, classes: tuple[str, ...] | None):
    """Each device's component over the links of ``classes`` (every link when None), as a
    numpy array over device indices labelled with the component's smallest index; kept per
    system. Two devices have a path over those links exactly when their labels are equal, so
    a router answers 'no route' without searching (a search that fails visits its whole
    component: every failed PXN probe on a rail-optimised fabric walked a whole rail plane)."""
    key = ("reach_labels", classes)
    found = system.memo.get(key)
    if found is None:
        import numpy as np

        keep = None if classes is None else (lambda t: t.cls in classes)
        a, b = system.ends.arrays(keep)
        found = system.memo[key] = _components(
            np.arange(len(system.devices), dtype=np.int32), a, b)
    return found


def link_components(count: int, a, b):
    """Each of ``count`` devices' component over the links ``a[i] -- b[i]`` (numpy arrays of
    device indices), labelled with the component's smallest index: ``reach_labels`` for any
    set of links."""
    import numpy as np

    return _components(np.arange(count, dtype=np.int32), a, b)


def island_period(system: System) -> int:
    """s when the ranks fall into islands of s consecutive ranks each, every island its own
    number (an NVL72 rack: 72, a DGX node: 8), else 0; once per system. Then whether two ranks
    share an island is whether they share r // s, so a group's layout over the islands is the
    same for every translate of it by a multiple of s: what lets a search rank one period of
    replicas or groups instead of all of them."""
    found = system.memo.get("island_period")
    if found is None:
        import numpy as np

        island = np.asarray(system.locality.island, dtype=np.int64)
        size = len(island)
        starts = np.flatnonzero(np.diff(island)) + 1
        s = int(starts[0]) if len(starts) else size
        found = 0
        if s and size % s == 0 and np.array_equal(starts, np.arange(s, size, s)) and \
                len(unique(island)) == size // s:
            found = s
        system.memo["island_period"] = found
    return found


def nearest_by_bfs(start, adj, wanted, is_gpu) -> list:
    """The devices nearest ``start`` for which ``wanted`` holds, breadth first over ``adj``,
    never passing through another GPU (``is_gpu``): a GPU's own socket or NICs, the PCIe,
    C2C and socket hops of its host. The first level with any is returned, in frontier order."""
    seen, frontier = {start}, [start]
    while frontier:
        found = [n for n in frontier if wanted(n)]
        if found:
            return found
        nxt = []
        for node in frontier:
            if node != start and is_gpu(node):
                continue
            for other in adj.get(node, ()):
                if other not in seen:
                    seen.add(other)
                    nxt.append(other)
        frontier = nxt
    return []



def host_shapes(loc: "Locality"):
    """The host parts that hold GPUs (components over PCIe, C2C and socket links: a
    superchip, a node), grouped by shape: (member offsets, link offsets, first index of each
    copy). Two parts have one shape when their devices sit at the same offsets from their
    first device with the same models and the same links between them, as every instance of
    one group template does, so what a search finds in one holds in all at the same offsets.
    The grouping is in numpy but for one key per part (bytes of its slices)."""
    import numpy as np

    devices = loc.system.devices
    a, b = loc._host_ends
    label = loc.host_labels
    roots = unique(label[loc.gpu_index])
    keep = np.isin(label, roots)
    members = np.flatnonzero(keep)
    members = members[np.argsort(label[members], kind="stable")]
    member_roots = label[members]
    model = model_numbers(loc.system)[0][members]
    offsets = (members - member_roots).astype(np.int32)
    inside = keep[a]
    ea, eb = a[inside], b[inside]
    order = np.argsort(label[ea], kind="stable")
    ea, eb = ea[order], eb[order]
    edge_roots = label[ea]
    ea = (ea - edge_roots).astype(np.int32)
    eb = (eb - edge_roots).astype(np.int32)
    m_lo = np.searchsorted(member_roots, roots, "left").tolist()
    m_hi = np.searchsorted(member_roots, roots, "right").tolist()
    e_lo = np.searchsorted(edge_roots, roots, "left").tolist()
    e_hi = np.searchsorted(edge_roots, roots, "right").tolist()
    shapes: dict[tuple, list[int]] = {}
    first: dict[tuple, tuple[int, int, int, int]] = {}
    for root, ml, mh, el, eh in zip(roots.tolist(), m_lo, m_hi, e_lo, e_hi):
        key = (offsets[ml:mh].tobytes(), model[ml:mh].tobytes(), ea[el:eh].tobytes(),
               eb[el:eh].tobytes())
        copies = shapes.get(key)
        if copies is None:
            copies = shapes[key] = []
            first[key] = (ml, mh, el, eh)
        copies.append(root)
    for key, copies in shapes.items():
        ml, mh, el, eh = first[key]
        yield (offsets[ml:mh].tolist(), list(zip(ea[el:eh].tolist(), eb[el:eh].tolist())),
               copies)


class Locality:
    """Locality facts of one system's GPUs; built on first use via ``System.locality``."""

    @gc_paused()
    def __init__(self, system: System):
        self.system = system
        self.memo: dict[str, dict[tuple, object]] = {}
        # Components on integer device indices over the links each needs, selected by link
        # type (``Ends.arrays``) and joined in numpy (``_components``): NVLink joins
        # domains; islands start from the domains and add the other links inside a machine,
        # so the 87 % of an NVL72 cluster's links that are NVLink are joined once, not twice.
        import numpy as np

        devices = system.devices
        select = system.ends.arrays
        n = len(devices)
        a, b = select(lambda t: t.cls == "nvlink")
        in_domain = np.zeros(n, np.bool_)
        in_domain[a] = True
        in_domain[b] = True
        domains = _components(np.arange(n, dtype=np.int32), a, b)
        a, b = select(lambda t: t.cls not in SCALEOUT_CLASSES and t.cls != "nvlink")
        islands = _components(domains.copy(), a, b)
        a, b = select(lambda t: t.cls in _HOST_CLASSES)
        self._host_ends = (a, b)
        self._domains = domains                 # p2p starts from them
        #: each rank's device index (ranks follow the devices' order: ``System.gpus``), from
        #: the models' kinds in numpy (no pass over 1.7 M devices in Python)
        self.gpu_index = gpu_index = np.flatnonzero(
            model_flags(system, lambda m: m.kind == "gpu")).astype(np.int64)
        # islands numbered in order of their first rank, each rank list ascending
        roots = islands[gpu_index]
        _, first, inverse = np.unique(roots, return_index=True, return_inverse=True)
        number = np.empty(len(first), np.int64)
        number[np.argsort(first, kind="stable")] = np.arange(len(first))
        island = number[inverse.reshape(-1)]
        self.island: list[int] = island.tolist()
        by_island = np.argsort(island, kind="stable")
        cuts = np.searchsorted(island[by_island], np.arange(1, len(first))).tolist()
        self.island_ranks: list[list[int]] = [part.tolist() for part in
                                              np.split(by_island, cuts)] if len(first) else []
        # An NVLink domain is named by its smallest device id, as the string-keyed pass named
        # it: the members sorted by root, the smallest id of each run of one root.
        switch = model_flags(system, lambda m: m.kind == "switch")
        inside = np.flatnonzero(in_domain)
        inside = inside[np.argsort(domains[inside], kind="stable")]
        member_roots = domains[inside]
        starts = np.flatnonzero(np.r_[True, member_roots[1:] != member_roots[:-1]]) \
            if len(inside) else np.zeros(0, np.int64)
        ids = np.array([devices[i].id for i in inside.tolist()], dtype=object)
        name: dict[int, str] = dict(zip(member_roots[starts].tolist(),
                                        np.minimum.reduceat(ids, starts).tolist()
                                        if len(starts) else ()))
        members: dict[int, list[str]] = defaultdict(list)
        for i, root in zip(np.flatnonzero(in_domain & switch).tolist(),
                           domains[in_domain & switch].tolist()):
            members[root].append(devices[i].id)
        gpu_root = domains[gpu_index].tolist()
        gpu_in = in_domain[gpu_index].tolist()
        self.domain_root = [name[root] if inside else None
                            for root, inside in zip(gpu_root, gpu_in)]
        self.domain_switches: dict[str, tuple[str, ...]] = defaultdict(tuple)
        self.domain_switches.update({name[k]: tuple(sorted(v)) for k, v in members.items()})

    @property
    def index(self) -> dict[str, int]:
        """Device id -> its index (``system.device_indices``, made when first asked)."""
        return system_device_indices(self.system)

    @functools.cached_property
    def rank_of(self) -> dict[str, int]:
        """GPU id -> its world rank."""
        return {g.id: r for r, g in enumerate(self.system.gpus)}

    @functools.cached_property
    def host_labels(self):
        """Each device's host part (its component over PCIe, C2C and socket links) as a numpy
        array by device index, labelled with the part's smallest index."""
        import numpy as np

        a, b = self._host_ends
        return _components(np.arange(len(self.system.devices), dtype=np.int32), a, b)

    @functools.cached_property
    def host_adj(self) -> "relocate.HostAdj":
        """Device id -> its neighbours over PCIe, C2C and socket links (both ways, link
        order), each device's list made when a search first reads it from the system's
        incidence (``relocate.HostAdj``: a table of every host link's ids cost 0.5 s at
        16,384 DGX nodes and more at 8,192 NVL72 racks, where the cost model asks about a
        few NICs' hosts; a degraded system's searches visit only the host parts its
        failure touches)."""
        return relocate.HostAdj(self.system)

    @_memo
    def _nearest(self, gpu_id: str, kind: str) -> tuple[str, ...]:
        """The closest devices of ``kind`` over PCIe/C2C hops, never through another GPU.
        (One short search per device asked: a search from every device of ``kind`` at once
        measured twice as slow at 1,024 racks, its tables covering every host device.)"""
        want, gpus = self._ids(kind), self._ids("gpu")
        return tuple(sorted(nearest_by_bfs(gpu_id, self.host_adj, want.__contains__,
                                           gpus.__contains__)))

    def _ids(self, kind: str) -> frozenset[str]:
        """Ids of the devices of ``kind``, once per kind; "nic" means a compute NIC: DPUs and
        storage NICs carry no GPU traffic."""
        found = self.memo.get("ids", {}).get(kind)
        if found is None:
            found = relocate.ids(self, kind)
            if found is None:
                found = self._ids_by_kind().get(kind, frozenset())
            self.memo.setdefault("ids", {})[kind] = found
        return found

    def _ids_by_kind(self) -> dict[str, frozenset[str]]:
        """Every kind's ids in one pass over the devices, each model's kind read once (a
        NIC that is no compute NIC filed apart)."""
        found = self.memo.get("ids_by_kind")
        if found is None:
            kinds: dict[int, str] = {}
            lists: dict[str, list[str]] = defaultdict(list)
            for d in self.system.devices:
                k = kinds.get(id(d.model))
                if k is None:
                    k = kinds[id(d.model)] = d.kind if d.kind != "nic" or d.compute_nic \
                        else "nic:other"
                lists[k].append(d.id)
            found = self.memo["ids_by_kind"] = {k: frozenset(v) for k, v in lists.items()}
        return found

    @functools.cached_property
    def gpu_hosts(self) -> tuple[list[str], list[tuple[str, ...]], list[str], list[str]]:
        """Per rank: its socket (``socket``), its nearest NICs (``_nearest(gpu, "nic")``), its
        own NIC (``nic``) and that NIC's socket, for every GPU at once and computed once per
        distinct host part (``host_shapes``): the searches run on one representative of each
        shape, in offsets from its first device, and every other copy reads them at its own
        offsets. Equal to asking ``_nearest`` GPU by GPU (tests compare them on every library
        file): a search over PCIe, C2C and socket links never leaves its host part.

        The answers name devices, chosen and ordered by their ids (the smallest socket, the
        NICs sorted): when the representative's order of those ids holds in every copy
        (checked in numpy, id against id), each answer is one offset for all copies and the
        ids are read for all of them at once; a shape whose copies order differently is
        answered copy by copy. A degraded system copies the healthy system's and searches
        again only the host parts its failure touches (``relocate``)."""
        import numpy as np

        #: each rank's socket as a device index (-1: none), what ``_keys_by_index`` numbers
        #: sockets by (None: not known here, read through the id index)
        self._socket_index = None
        patched = relocate.gpu_hosts(self, nearest_by_bfs)
        if patched is not None:
            base = self.system.memo["locality.base"]
            self._nic_index = relocate.shifted(self, base, base.healthy._nic_index, patched[2])
            return patched

        system = self.system
        devices, gpus = system.devices, system.gpus
        n = len(gpus)
        # per rank, filled shape by shape (object arrays: a shape's copies at once)
        socket, own, nic_socket = (np.full(n, "", dtype=object) for _ in range(3))
        nearest: list[tuple[str, ...]] = [()] * n
        #: each rank's own NIC as a device index (-1: none), for passes in numpy
        self._nic_index = np.full(n, -1, dtype=np.int64)
        self._socket_index = np.full(n, -1, dtype=np.int64)
        ids = None
        for members, edges, copies in host_shapes(self):
            # the searches, once per shape, on the representative's offsets
            adj: dict[int, list[int]] = defaultdict(list)
            for x, y in edges:
                adj[x].append(y)
                adj[y].append(x)
            base = copies[0]
            kind_of = {o: _kind_of(devices[base + o]) for o in members}

            def search(start: int, kind: str) -> list[int]:
                return nearest_by_bfs(start, adj, lambda o: kind_of[o] == kind,
                                      lambda o: kind_of[o] == "gpu")
            gpu_offsets = [o for o in members if kind_of[o] == "gpu"]
            plan = []
            nic_cpu: dict[int, list[int]] = {}
            for o in gpu_offsets:
                cpus, nics = search(o, "cpu"), search(o, "nic")
                for x in nics:
                    if x not in nic_cpu:
                        nic_cpu[x] = search(x, "cpu")
                plan.append((o, cpus, nics))
            if ids is None:
                ids = np.array([d.id for d in devices], dtype=object)
            firsts = np.asarray(copies, dtype=np.int64)
            if not self._shape_at_once(ids, firsts, plan, nic_cpu, socket, nearest, own,
                                       nic_socket):
                self._shape_by_copy(ids, copies, plan, nic_cpu, socket, nearest, own,
                                    nic_socket)
        return socket.tolist(), nearest, own.tolist(), nic_socket.tolist()

    def _shape_at_once(self, ids, firsts, plan, nic_cpu, socket, nearest, own,
                       nic_socket) -> bool:
        """``gpu_hosts`` for every copy of one shape at once (``firsts``: each copy's first
        device index), when the representative's id order holds in every copy; False (and
        nothing written) when it does not."""
        import numpy as np

        rep = firsts[0]

        def ordered(offsets) -> list[int] | None:
            """``offsets`` sorted by the representative's ids; None unless every copy's ids
            sort them the same way (ids are unique, so strictly)."""
            out = sorted(offsets, key=lambda o: ids[rep + o])
            for x, y in zip(out, out[1:]):
                if not (ids[firsts + x] < ids[firsts + y]).all():
                    return None
            return out
        rows = []
        sharing: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for o, cpus, nics in plan:
            cpu_order, nic_order = ordered(cpus), ordered(nics)
            if cpu_order is None or nic_order is None:
                return False
            rows.append((o, cpu_order, nic_order))
            if nic_order:
                sharing[tuple(nic_order)].append(o)
        # the same choice as the copy-by-copy pass: the GPU's place among those sharing its
        # NICs (plan order, rank order in every copy) picks among the NICs in id order
        picks = []
        for o, cpu_order, nic_order in rows:
            mine = cpus_of = None
            if nic_order:
                group = sharing[tuple(nic_order)]
                mine = nic_order[group.index(o) % len(nic_order)]
                cpus_of = ordered(nic_cpu[mine])
                if cpus_of is None:
                    return False
            picks.append((mine, cpus_of))
        for (o, cpu_order, nic_order), (mine, cpus_of) in zip(rows, picks):
            ranks = np.searchsorted(self.gpu_index, firsts + o)
            if cpu_order:
                socket[ranks] = ids[firsts + cpu_order[0]]
                self._socket_index[ranks] = firsts + cpu_order[0]
            if not nic_order:
                continue
            for r, near in zip(ranks.tolist(), zip(*(ids[firsts + x].tolist()
                                                     for x in nic_order))):
                nearest[r] = near
            own[ranks] = ids[firsts + mine]
            self._nic_index[ranks] = firsts + mine
            if cpus_of:
                nic_socket[ranks] = ids[firsts + cpus_of[0]]
        return True

    def _shape_by_copy(self, ids, copies, plan, nic_cpu, socket, nearest, own,
                       nic_socket) -> None:
        """``gpu_hosts`` for the copies of one shape one by one (ids sorted per copy, as
        ``_nearest`` sorts them: names may order differently from copy to copy)."""
        rank_of_index = self._rank_of_index
        index = self.index
        for first in copies:
            sharing: dict[tuple[str, ...], list[int]] = defaultdict(list)
            rows = []
            for o, cpus, nics in plan:
                r = rank_of_index[first + o]
                sock = min(ids[first + x] for x in cpus) if cpus else ""
                near = tuple(sorted(ids[first + x] for x in nics))
                socket[r], nearest[r] = sock, near
                if sock:
                    self._socket_index[r] = index[sock]
                if near:
                    sharing[near].append(r)
                rows.append((r, near))
            for r, near in rows:
                if not near:
                    continue
                group = sharing[near]
                mine = near[group.index(r) % len(near)]
                own[r] = mine
                self._nic_index[r] = index[mine]
                cpus = nic_cpu[index[mine] - first]
                nic_socket[r] = min(ids[first + x] for x in cpus) if cpus else ""

    @functools.cached_property
    def _has_pcie_switches(self) -> bool:
        return bool(model_flags(self.system, lambda m: m.kind == "pcie_switch").any())

    @property
    def nic_index(self):
        """Each rank's own NIC (``nic``) as a device index, a numpy array (-1: none)."""
        self.gpu_hosts
        return self._nic_index

    @functools.cached_property
    def _rank_of_index(self) -> dict[int, int]:
        return dict(zip(self.gpu_index.tolist(), range(len(self.gpu_index))))

    def socket(self, rank: int) -> str:
        """The CPU whose root complex the GPU hangs off ('' when none)."""
        return self.gpu_hosts[0][rank]

    @_memo
    def pcie_switch(self, rank: int) -> str:
        """The PCIe switch directly above the GPU ('' when none)."""
        if not self._has_pcie_switches:
            return ""           # no such model: no id set of every device, no adjacency
        switches = self._ids("pcie_switch")
        if not switches:        # no switch to find: the host links are not gathered for it
            return ""
        ups = sorted(n for n in self.host_adj.get(self.system.gpus[rank].id, ())
                     if n in switches)
        return ups[0] if ups else ""

    def nic(self, rank: int) -> str:
        """The GPU's own NIC for GPUDirect RDMA: the nearest one; among equally near NICs the
        GPU's index among the GPUs sharing them picks, so GPU i of a tray takes rail i."""
        return self.gpu_hosts[2][rank]

    @_memo
    def nics(self, rank: int) -> tuple[str, ...]:
        """Every NIC the GPU drives: its nearest NICs split evenly among the GPUs that share
        them (AWS p5: four EFA devices under each GPU's PCIe switch; a dual-port RoCE card per
        GPU), at least its own ``nic``. NCCL's net plugins and NCCL_IB_MERGE_NICS present such
        a set as one device of their summed bandwidth; the cost model pools it (loads.py)."""
        own = self.nic(rank)
        if not own:
            return ()
        nics = self.gpu_hosts[1][rank]
        sharing = self._sharing(self.island[rank])[nics]
        if len(nics) <= len(sharing):
            return (own,)
        per = len(nics) // len(sharing)
        at = sharing.index(rank) * per
        return nics[at:at + per]

    @_memo
    def nic_pool(self, nic: str) -> tuple[str, ...]:
        """The NICs one GPU drives together with ``nic`` (``nics``), or just ``nic``: looked up
        among the GPUs nearest the NIC, so the cost stays local to it."""
        for gpu in self._nearest(nic, "gpu"):
            found = self.nics(self.rank_of[gpu])
            if nic in found:
                return found
        return (nic,)

    @_memo
    def _sharing(self, island: int) -> dict[tuple[str, ...], list[int]]:
        """The island's ranks grouped by their set of nearest NICs, ascending."""
        out: dict[tuple[str, ...], list[int]] = defaultdict(list)
        nearest = self.gpu_hosts[1]
        for r in self.island_ranks[island]:
            out[nearest[r]].append(r)
        return out

    @functools.cached_property
    def p2p(self) -> IndexSets:
        """GPUs that reach each other peer to peer: over NVLink (directly or through NVLink
        switches) or over PCIe switches that never pass a CPU's root complex. Two GPUs of one
        island in different sets stage their traffic through host memory."""
        import numpy as np

        return IndexSets(self.index, self.p2p_labels.tolist())

    @functools.cached_property
    def p2p_labels(self):
        """``p2p``'s sets as a numpy array by device index (each set's smallest index)."""
        import numpy as np

        a, b = self.system.ends.arrays(lambda t: t.cls == "pcie")
        cpu = model_flags(self.system, lambda m: m.kind == "cpu")
        below = ~(cpu[a] | cpu[b])
        # NVLink's joins are the domains' joins: the PCIe links below the CPUs join on them
        return _components(self._domains.copy(), a[below], b[below])

    def staged(self, a: int, b: int) -> bool:
        """True when ranks ``a`` and ``b`` share an island but no peer-to-peer path."""
        gpus = self.system.gpus
        return self.island[a] == self.island[b] and \
            self.p2p.find(gpus[a].id) != self.p2p.find(gpus[b].id)

    def key(self, rank: int) -> tuple:
        """Sort key that keeps islands, sockets and PCIe switches together."""
        return (self.island[rank], natural(self.socket(rank)), natural(self.pcie_switch(rank)),
                rank)

    @functools.cached_property
    def order_keys(self) -> list[int]:
        """``key`` of every rank as one integer, made once per system: sorting by it gives
        ``key``'s order (sockets and switches numbered in their ``natural`` order, ties kept
        tied), and comparing two integers is a fraction of comparing two tuples of strings
        and numbers (the cost model sorts a 590,000-GPU world by it). Each distinct name is
        parsed once and the keys are made in numpy while they fit in 63 bits."""
        import numpy as np

        n = len(self.system.gpus)
        sockets = self.gpu_hosts[0]
        switches = None
        if self._has_pcie_switches:
            switches = relocate.pcie_switches(self, self._ids("pcie_switch"))
            if switches is None:
                switches = [self.pcie_switch(r) for r in range(n)]
        else:
            switches = [""] * n
        self.memo["order.switches"] = switches
        found = self._keys_by_index(sockets, switches if self._has_pcie_switches else None)
        if found is not None:
            return found
        numbers = []
        for names in (sockets, switches):
            distinct, inverse = np.unique(np.array(names, dtype=object), return_inverse=True)
            keys = [_natural(name) for name in distinct.tolist()]
            rank_of = {k: i for i, k in enumerate(sorted(set(keys)))}
            numbers.append((np.array([rank_of[k] for k in keys], dtype=np.int64)
                            [inverse.reshape(-1)], len(rank_of)))
        (sock, n_sock), (sw, n_sw) = numbers
        island = np.asarray(self.island, dtype=np.int64)
        n_island = int(island.max()) + 1 if n else 0
        if n_island * n_sock * n_sw * n < 2**62:
            return (((island * n_sock + sock) * n_sw + sw) * n + np.arange(n)).tolist()
        island, sock, sw = self.island, sock.tolist(), sw.tolist()
        return [((island[r] * n_sock + sock[r]) * n_sw + sw[r]) * n + r for r in range(n)]

    def _keys_by_index(self, sockets: list[str], switches: list[str] | None) -> list[int] | None:
        """``order_keys`` from the devices' indices in the compact IR: a socket (a switch) is
        numbered by (island, device index), which is its ``natural`` order wherever, inside
        each island, the devices' order is their names' natural order (declaration order
        numbers arrays as their names do: tray2 before tray10). That is checked on each pair
        of neighbours in that order, one name parsed per device instead of a sort of every
        name's key; None when any island orders them otherwise (the caller then sorts the
        names). Only the order within an island matters: the island comes first in the key."""
        import numpy as np

        n = len(sockets)
        devices = self.system.devices
        island = np.asarray(self.island, dtype=np.int64)
        span = len(devices) + 1
        columns = []
        kept: dict[int, tuple] = {}
        for c, names in enumerate((sockets, switches)):
            if names is None:
                columns.append((np.zeros(n, dtype=np.int64), 1))
                continue
            at = relocate.key_devices(self, c, names)
            if at is None and c == 0 and self._socket_index is not None:
                at = self._socket_index     # gpu_hosts found them by index: no id look-up
            if at is None:
                at = np.fromiter((self.index[x] if x else -1 for x in names), dtype=np.int64,
                                 count=n)
            unique, first, number = np.unique(island * span + at + 1, return_index=True,
                                              return_inverse=True)
            same = np.flatnonzero(unique[1:] // span == unique[:-1] // span)
            # a degraded system checks only the pairs its healthy system did not (``relocate``)
            covered = relocate.key_checked(self, c, unique, first, span)
            if covered is not None:
                same = same[~(covered[same] & covered[same + 1])]
                at_pairs = np.union1d(same, same + 1)
            else:
                at_pairs = np.arange(len(unique))
            ids = [devices[d].id if d >= 0 else "" for d in
                   (unique[at_pairs] % span - 1).tolist()]
            name = dict(zip(at_pairs.tolist(), ids))
            shape = {i: x.translate(_DIGIT_SHAPE) for i, x in name.items()}
            if not all(_natural_less(name[i], name[i + 1], shape[i] == shape[i + 1])
                       for i in same.tolist()):
                return None
            kept[c] = (at, unique)
            columns.append((number.reshape(-1).astype(np.int64), len(unique)))
        self.memo["order.by_index"] = kept      # what a degraded system's keys start from
        (sock, n_sock), (sw, n_sw) = columns
        if (int(island.max(initial=0)) + 1) * n_sock * n_sw * n >= 2**63:
            return [((int(i) * n_sock + int(s)) * n_sw + int(w)) * n + r
                    for r, (i, s, w) in enumerate(zip(island, sock, sw))]
        return (((island * n_sock + sock) * n_sw + sw) * n + np.arange(n, dtype=np.int64)).tolist()

    def nvlink_agents(self, ranks) -> tuple[str, ...] | None:
        """The reducing NVLink switches every GPU of ``ranks`` shares, or None when the group is
        not inside one NVLink domain whose switches all reduce (NVLS is impossible then)."""
        roots = {self.domain_root[r] for r in ranks}
        if len(roots) != 1 or None in roots:
            return None
        switches = self.domain_switches.get(roots.pop(), ())
        if not switches:
            return None
        # once per set of switches (each group asked again looked up every switch by id)
        reduces = self.memo.setdefault("nvlink_agents", {})
        ok = reduces.get(switches)
        if ok is None:
            ok = reduces[switches] = all(self.system.device(s).model.attr("reduction")
                                         for s in switches)
        return switches if ok else None


system.VIEWS["locality"] = Locality
