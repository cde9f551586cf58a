"""Where each GPU sits: its island, NVLink domain, CPU socket, PCIe switch and local NICs.

An *island* is what the GPUs reach without the scale-out network (a node, or a whole NVL72
rack). An *NVLink domain* is what they reach over NVLink alone (directly or through NVLink
switches). Both come from one union-find pass over the links, so the cost is linear.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict

from ..base.gcpause import gc_paused
from . import relocate, system
from .system import SCALEOUT_CLASSES, System
from .system import device_indices as system_device_indices

_HOST_CLASSES = ("pcie", "nvlink_c2c", "inter_socket")


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
                len(np.unique(island)) == size // s:
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
    label = _components(np.arange(len(devices), dtype=np.int32), a, b)
    roots = np.unique(label[loc.gpu_index])
    keep = np.isin(label, roots)
    members = np.flatnonzero(keep)
    members = members[np.argsort(label[members], kind="stable")]
    member_roots = label[members]
    codes: dict[int, int] = {}
    model = np.array([codes.setdefault(id(devices[i].model), len(codes))
                      for i in members.tolist()], dtype=np.int32)
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
        self.index = index = system_device_indices(system)
        select = system.ends.arrays
        n = len(devices)
        a, b = select(lambda t: t.cls == "nvlink")
        in_domain = np.zeros(n, np.bool_)
        in_domain[a] = True
        in_domain[b] = True
        domains = _components(np.arange(n, dtype=np.int32), a, b)
        a, b = select(lambda t: t.cls not in SCALEOUT_CLASSES and t.cls != "nvlink")
        islands = _components(domains.copy(), a, b)
        ids = [d.id for d in devices]
        a, b = select(lambda t: t.cls in _HOST_CLASSES)
        self._host_ends = (a, b)
        self._domains = domains                 # p2p starts from them
        gpus = system.gpus
        self.rank_of = {g.id: r for r, g in enumerate(gpus)}
        #: each rank's device index (ranks follow the devices' order)
        self.gpu_index = gpu_index = np.fromiter((index[g.id] for g in gpus), dtype=np.int64,
                                                 count=len(gpus))
        # islands numbered in order of their first rank, each rank list ascending
        roots = islands[gpu_index]
        _, first, inverse = np.unique(roots, return_index=True, return_inverse=True)
        number = np.empty(len(first), np.int64)
        number[np.argsort(first, kind="stable")] = np.arange(len(first))
        self.island: list[int] = number[inverse.reshape(-1)].tolist()
        self.island_ranks: list[list[int]] = [[] for _ in range(len(first))]
        for r, i in enumerate(self.island):
            self.island_ranks[i].append(r)
        # An NVLink domain is named by its smallest device id, as the string-keyed pass named it.
        name: dict[int, str] = {}
        members: dict[int, list[str]] = defaultdict(list)
        switch = np.fromiter((d.kind == "switch" for d in devices), dtype=np.bool_, count=n)
        for i, root in zip(np.flatnonzero(in_domain).tolist(),
                           domains[in_domain].tolist()):
            known = name.get(root)
            if known is None or ids[i] < known:
                name[root] = ids[i]
        for i, root in zip(np.flatnonzero(in_domain & switch).tolist(),
                           domains[in_domain & switch].tolist()):
            members[root].append(ids[i])
        gpu_root = domains[gpu_index].tolist()
        gpu_in = in_domain[gpu_index].tolist()
        self.domain_root = [name[root] if inside else None
                            for root, inside in zip(gpu_root, gpu_in)]
        self.domain_switches: dict[str, tuple[str, ...]] = defaultdict(tuple)
        self.domain_switches.update({name[k]: tuple(sorted(v)) for k, v in members.items()})

    @functools.cached_property
    def host_adj(self) -> dict[str, list[str]]:
        """Device id -> its neighbours over PCIe, C2C and socket links (both ways, link
        order): made when a search first asks (lint's and diff's per-host passes read
        ``host_shapes`` instead; 0.5 s of ids at 16,384 DGX nodes). A degraded system's
        searches visit only the host parts its failure touches: they read each device's
        neighbours from the incidence when asked (``relocate``), not a table of all."""
        if "locality.base" in self.system.memo:
            return relocate.HostAdj(self.system)
        a, b = self._host_ends
        ids = self.system.devices
        host_adj: dict[str, list[str]] = defaultdict(list)
        with gc_paused():
            for x, y in zip(a.tolist(), b.tolist()):
                u, v = ids[x].id, ids[y].id
                host_adj[u].append(v)
                host_adj[v].append(u)
        return host_adj

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
    def host_label(self):
        """Each device's host part (a component over PCIe, C2C and socket links: a
        superchip, a node), as a numpy array over device indices labelled with the part's
        smallest index: two GPUs share a host exactly when their labels are equal."""
        import numpy as np

        a, b = self._host_ends
        return _components(np.arange(len(self.system.devices), dtype=np.int32), a, b)

    @functools.cached_property
    def gpu_hosts(self) -> tuple[list[str], list[tuple[str, ...]], list[str], list[str]]:
        """Per rank: its socket (``socket``), its nearest NICs (``_nearest(gpu, "nic")``), its
        own NIC (``nic``) and that NIC's socket, for every GPU at once and computed once per
        distinct host part (``host_shapes``): the searches run on one representative of each
        shape, in offsets from its first device, and every other copy reads them at its own
        offsets. Equal to asking ``_nearest`` GPU by GPU (tests compare them on every library
        file): a search over PCIe, C2C and socket links never leaves its host part. A
        degraded system copies the healthy system's and searches again only the host parts
        its failure touches (``relocate``)."""
        patched = relocate.gpu_hosts(self, nearest_by_bfs)
        if patched is not None:
            return patched
        system = self.system
        devices, gpus = system.devices, system.gpus
        ids = [d.id for d in devices]
        want = {kind: self._ids(kind) for kind in ("cpu", "nic", "gpu")}
        n = len(gpus)
        socket, nearest, own, nic_socket = [""] * n, [()] * n, [""] * n, [""] * n
        rank_of_index = dict(zip(self.gpu_index.tolist(), range(n)))
        arrays = None
        for members, edges, copies in host_shapes(self):
            # the searches, once per shape, on the representative's offsets
            adj: dict[int, list[int]] = defaultdict(list)
            for x, y in edges:
                adj[x].append(y)
                adj[y].append(x)
            base = copies[0]
            kind_of = {o: ids[base + o] for o in members}

            def search(start: int, kind: str) -> list[int]:
                wanted, gpu_ids = want[kind], want["gpu"]
                return nearest_by_bfs(start, adj, lambda o: kind_of[o] in wanted,
                                      lambda o: kind_of[o] in gpu_ids)
            gpu_offsets = [o for o in members if kind_of[o] in want["gpu"]]
            plan = []
            nic_cpu: dict[int, list[int]] = {}
            for o in gpu_offsets:
                cpus, nics = search(o, "cpu"), search(o, "nic")
                for x in nics:
                    if x not in nic_cpu:
                        nic_cpu[x] = search(x, "cpu")
                plan.append((o, cpus, nics))
            if arrays is None:
                arrays = self._host_arrays(ids)
            if self._alike_copies(arrays, plan, nic_cpu, copies, socket, nearest, own,
                                  nic_socket):
                continue
            for first in copies:
                # ids sorted per copy, as ``_nearest`` sorts them (names may order differently)
                sharing: dict[tuple[str, ...], list[int]] = defaultdict(list)
                rows = []
                for o, cpus, nics in plan:
                    r = rank_of_index[first + o]
                    sock = min(ids[first + x] for x in cpus) if cpus else ""
                    near = tuple(sorted(ids[first + x] for x in nics))
                    socket[r], nearest[r] = sock, near
                    if near:
                        sharing[near].append(r)
                    rows.append((r, near))
                for r, near in rows:
                    if not near:
                        continue
                    group = sharing[near]
                    mine = near[group.index(r) % len(near)]
                    own[r] = mine
                    cpus = nic_cpu[self.index[mine] - first]
                    nic_socket[r] = min(ids[first + x] for x in cpus) if cpus else ""
        return socket, nearest, own, nic_socket

    def _host_arrays(self, ids: list[str]):
        """The device ids as a numpy object array and each device index's rank (-1 for a
        device that is no GPU), for ``_simple_copies``."""
        import numpy as np

        rank = np.full(len(ids), -1, dtype=np.int64)
        rank[self.gpu_index] = np.arange(len(self.gpu_index))
        return np.array(ids, dtype=object), rank

    @staticmethod
    def _alike_copies(arrays, plan, nic_cpu, copies, socket, nearest, own,
                      nic_socket) -> bool:
        """``gpu_hosts``' columns for every copy of a host shape at once, when the ids at
        each set of offsets the plan names sort alike in every copy (checked in numpy, one
        comparison per neighbouring pair): then every min and sort is at the same offsets,
        the GPUs sharing a set of NICs are the same, and each column is the copies' ids at
        one offset. False (nothing written) when some copy sorts otherwise."""
        import numpy as np

        ids, rank_at = arrays
        first = np.asarray(copies, dtype=np.int64)
        base = copies[0]
        ordered: dict[tuple[int, ...], tuple[int, ...] | None] = {}

        def order(offsets) -> tuple[int, ...] | None:
            key = tuple(offsets)
            if key not in ordered:
                rep = tuple(sorted(key, key=lambda x: ids[base + x]))
                alike = all(bool(np.all(ids[first + x] < ids[first + y]))
                            for x, y in zip(rep, rep[1:]))
                ordered[key] = rep if alike else None
            return ordered[key]
        rows = []
        sharing: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for o, cpus, nics in plan:
            cs, ns = order(cpus), order(nics)
            if cs is None or ns is None:
                return False
            if ns:
                sharing[ns].append(o)
            rows.append((o, cs, ns))
        columns = []
        for o, cs, ns in rows:
            mine = theirs = None
            if ns:
                group = sharing[ns]
                mine = ns[group.index(o) % len(ns)]
                theirs = order(nic_cpu[mine])
                if theirs is None:
                    return False
            columns.append((o, cs, ns, mine, theirs))
        n = len(copies)
        for o, cs, ns, mine, theirs in columns:
            ranks = rank_at[first + o].tolist()
            socks = ids[first + cs[0]].tolist() if cs else [""] * n
            near = list(zip(*(ids[first + x].tolist() for x in ns))) if ns else [()] * n
            if ns:
                owned = ids[first + mine].tolist()
                far = ids[first + theirs[0]].tolist() if theirs else [""] * n
            for i, r in enumerate(ranks):
                socket[r], nearest[r] = socks[i], near[i]
                if ns:
                    own[r], nic_socket[r] = owned[i], far[i]
        return True

    def socket(self, rank: int) -> str:
        """The CPU whose root complex the GPU hangs off ('' when none)."""
        return self.gpu_hosts[0][rank]

    @_memo
    def pcie_switch(self, rank: int) -> str:
        """The PCIe switch directly above the GPU ('' when none)."""
        switches = self._ids("pcie_switch")
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

        devices = self.system.devices
        a, b = self.system.ends.arrays(lambda t: t.cls == "pcie")
        cpu = np.fromiter((d.kind == "cpu" for d in devices), dtype=np.bool_, count=len(devices))
        below = ~(cpu[a] | cpu[b])
        # NVLink's joins are the domains' joins: the PCIe links below the CPUs join on them
        label = _components(self._domains.copy(), a[below], b[below])
        return IndexSets(self.index, label.tolist())

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
        and numbers (the cost model sorts a 590,000-GPU world by it)."""
        n = len(self.system.gpus)
        sockets = self.gpu_hosts[0]
        switch_ids = self._ids("pcie_switch")
        switches = None
        if switch_ids:
            switches = relocate.pcie_switches(self, switch_ids)
            if switches is None:
                switches = [self.pcie_switch(r) for r in range(n)]
        else:
            switches = [""] * n
        self.memo["order.switches"] = switches
        # a degraded system numbers its names as the healthy one did when it has no new
        # name: the same order (names are only removed), no second sort of every name
        base = self.system.memo.get("locality.base")
        numbers = base.healthy.memo.get("order.numbers") if base is not None else None
        if numbers is None or any(name not in numbers[0][0] for name in sockets) or \
                any(name not in numbers[1][0] for name in switches):
            numbers = []
            for names in (sockets, switches):
                keys = {name: _natural(name) for name in set(names)}
                rank_of = {k: i for i, k in enumerate(sorted(set(keys.values())))}
                numbers.append(({name: rank_of[k] for name, k in keys.items()},
                                len(rank_of)))
            self.memo["order.numbers"] = numbers
        (sock, n_sock), (sw, n_sw) = numbers
        island = self.island
        return [((island[r] * n_sock + sock[sockets[r]]) * n_sw + sw[switches[r]]) * n + r
                for r in range(n)]

    def nvlink_agents(self, ranks) -> tuple[str, ...] | None:
        """The reducing NVLink switches every GPU of ``ranks`` shares, or None when the group is
        not inside one NVLink domain whose switches all reduce (NVLS is impossible then)."""
        roots = {self.domain_root[r] for r in ranks}
        if len(roots) != 1 or None in roots:
            return None
        switches = self.domain_switches.get(roots.pop(), ())
        if not switches or not all(self.system.device(s).model.attr("reduction") for s in switches):
            return None
        return switches


system.VIEWS["locality"] = Locality
