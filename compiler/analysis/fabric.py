"""The scale-out fabric as cluster tools see it: hosts, their HCA ports, switches in tiers,
every cable with its rate, and the NVLink domains as blocks of hosts.

This is the one view the Slurm, Kubernetes, ibdiagnet and ibsim exporters format, and the one
``diff`` compares fabrics by. Only compute NICs count (a storage NIC or a DPU is kept out of the
compute tree, as Slurm's topology/tree wants); switches the compute NICs cannot reach are left
out too. Tiers: a leaf is a switch cabled to a host's HCA (tier 1); every other switch's tier is
one more than the lowest tier it is cabled to.
"""

from __future__ import annotations

import re
import functools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from operator import itemgetter

import attrs

from ..base.gcpause import gc_paused
from ..ir.hosts import HostInfo, hosts as host_list
from ..ir.locality import _natural, natural
from ..ir.system import SCALEOUT_CLASSES, System


#: A NIC's name that carries its identity on the machine: ``mlx5_3`` (as the kernel names the
#: HCA, and an imported dump keeps it) or ``nic3`` (an array element ``nic[3]``).
_NIC_NAME = re.compile(r"^(?:mlx\d+_|nic)(\d+)$")


@attrs.frozen
class Hca:
    """One compute NIC: its host, its index on the host, its device. The index is the HCA's
    identity, ``mlx5_<index>``: the number in the NIC's name (``mlx5_3``, ``nic3``) when every
    compute NIC of the host has a distinct one, else its position among the host's compute
    NICs (``hca_indices``)."""

    host: str
    index: int
    device: str
    model: str


@attrs.frozen
class Switch:
    """A fabric switch: its name (path below the system, dots as underscores), model and tier."""

    name: str
    device: str
    model: str
    tier: int
    radix: int | None


@attrs.frozen
class Cable:
    """``count`` cables of one link type between two ends; an end is a switch name or a
    ``host/index`` HCA name. ``rate`` is bits/s per cable."""

    a: str
    b: str
    cls: str
    rate: float
    count: int
    link_type: str


@attrs.frozen
class Fabric:
    """What the cluster tools need of a system."""

    name: str
    hosts: tuple[HostInfo, ...]
    hcas: tuple[Hca, ...]
    switches: tuple[Switch, ...]
    cables: tuple[Cable, ...]
    #: NVLink domains as tuples of hostnames (only domains spanning hosts' GPUs).
    blocks: tuple[tuple[str, ...], ...]

    def switch(self, name: str) -> Switch:
        """The switch called ``name`` (KeyError if none); a dictionary built once, so a pass
        over every switch stays linear."""
        return self._by_name[name]

    @functools.cached_property
    def _by_name(self) -> dict[str, Switch]:
        return {s.name: s for s in self.switches}

    def tiers(self) -> int:
        """How many switch tiers the fabric has (0: no switches)."""
        return max((s.tier for s in self.switches), default=0)

    def hosts_below(self, switch: str) -> tuple[str, ...]:
        """Hostnames reachable downwards from ``switch`` (for a leaf: its cabled hosts)."""
        down = self.children()
        seen, stack, out = {switch}, [switch], set()
        while stack:
            s = stack.pop()
            for c in down.get(s, ()):
                if "/" in c:
                    out.add(c.split("/", 1)[0])
                elif c not in seen:
                    seen.add(c)
                    stack.append(c)
        order = {h.name: i for i, h in enumerate(self.hosts)}
        return tuple(sorted(out, key=order.__getitem__))

    def children(self) -> dict[str, tuple[str, ...]]:
        """Per switch, the ends one tier below it (switches by name, HCAs as host/index)."""
        tier = {s.name: s.tier for s in self.switches}
        out: dict[str, set[str]] = defaultdict(set)
        for c in self.cables:
            for up, down in ((c.a, c.b), (c.b, c.a)):
                if up in tier and (down not in tier or tier[down] == tier[up] - 1):
                    out[up].add(down)
        return {k: tuple(sorted(v, key=natural)) for k, v in out.items()}


def hca_indices(device_ids: Sequence[str]) -> tuple[int, ...]:
    """The identities of one host's compute NICs, in order: the numbers in their names
    (``...node3.mlx5_5`` is 5) when every one has a distinct number, else their positions."""
    numbers = []
    for d in device_ids:
        m = _NIC_NAME.match(d.rsplit(".", 1)[-1])
        if not m:
            return tuple(range(len(device_ids)))
        numbers.append(int(m.group(1)))
    if len(set(numbers)) != len(numbers):
        return tuple(range(len(device_ids)))
    return tuple(numbers)


def end_name(system: System, device_id: str) -> str:
    """A switch's fabric name: its path below the system with dots as underscores, so an
    imported dump names it as the .topo does (``plane0_spine3``)."""
    return device_id.split(".", 1)[1].replace(".", "_") if "." in device_id else device_id


@gc_paused()            # 300,000 objects at 1,024 NVL72 racks: no collector passes over them
def fabric(system: System, pattern: str | None = None,
           mapping: Mapping[str, str] | None = None, blocks: bool = True) -> Fabric:
    """The fabric view of ``system`` with hostnames from ``pattern``/``mapping`` (see
    ``compiler.ir.hosts``). ``blocks`` False leaves the NVLink domains out (``blocks`` empty):
    they are read from the locality table, most of the view's time on a large system, and
    ``diff`` never reads them."""
    import numpy as np

    host_infos = host_list(system, pattern, mapping)
    host_of = {d: h for h in host_infos for d in h.devices}
    # The scale-out links read from the link arrays (System.ends), no Link object nor id
    # string made per link: device indices, link type codes and lanes, in declaration order.
    src, dst, codes, lanes = system.ends.arrays(lambda t: t.cls in SCALEOUT_CLASSES,
                                                ("src", "dst", "type", "lanes"))
    devices, types = system.devices, system.ends.types
    net = np.unique(np.concatenate((src, dst))).tolist()    # in device order
    hcas: list[Hca] = []
    ends: dict[int, str] = {}           # device index -> its end name (HCAs, switches)
    per_host: dict[str, list[int]] = defaultdict(list)
    for i in net:
        d = devices[i]
        if d.compute_nic and d.id in host_of:
            per_host[host_of[d.id].name].append(i)
    hca_at: list[int] = []
    for h, members in per_host.items():
        for i, index in zip(members, hca_indices([devices[i].id for i in members])):
            d = devices[i]
            hcas.append(Hca(h, index, d.id, d.model.name))
            hca_at.append(i)
            ends[i] = f"{h}/{index}"
    hcas = [hcas[k] for k in np.argsort(np.array(hca_at, dtype=np.int64), kind="stable")
            .tolist()]
    switch_at = [i for i in net if devices[i].kind == "net_switch"]
    for i in switch_at:
        ends[i] = end_name(system, devices[i].id)
    tier = _tiers(len(devices), src, dst, hca_at, switch_at)
    switches = tuple(Switch(ends[i], devices[i].id, devices[i].model.name, tier[i],
                            devices[i].model.port_budget("infiniband")
                            or devices[i].model.port_budget("ethernet"))
                     for i in switch_at if tier[i] > 0)
    kept = np.zeros(len(devices), dtype=np.bool_)
    kept[hca_at] = True
    kept[[i for i in switch_at if tier[i] > 0]] = True
    cable_list = _cables(ends, src, dst, codes, lanes, types, kept)
    return Fabric(system.name, host_infos, tuple(hcas), switches, cable_list,
                  _blocks(system, host_of) if blocks else ())


def _tiers(n: int, src, dst, hca_at: list[int], switch_at: list[int]) -> list[int]:
    """Each device's tier (0: not a switch the compute HCAs reach through switches): 1 for a
    switch cabled to an HCA, else one more than the lowest tier it is cabled to; a
    breadth-first search by levels over the cables between HCAs and switches, in numpy."""
    import numpy as np

    is_hca = np.zeros(n, dtype=np.bool_)
    is_hca[hca_at] = True
    is_switch = np.zeros(n, dtype=np.bool_)
    is_switch[switch_at] = True
    # both directions of every cable between two ends (an HCA or a switch)
    both = (is_hca[src] | is_switch[src]) & (is_hca[dst] | is_switch[dst])
    a = np.concatenate((src[both], dst[both]))
    b = np.concatenate((dst[both], src[both]))
    tier = np.zeros(n, dtype=np.int64)
    frontier = np.unique(b[is_hca[a] & is_switch[b]])
    level = 1
    while len(frontier):
        tier[frontier] = level
        reached = np.zeros(n, dtype=np.bool_)
        reached[frontier] = True
        step = b[reached[a] & is_switch[b]]
        frontier = np.unique(step[tier[step] == 0])
        level += 1
    return tier.tolist()


def _cables(ends: dict[int, str], src, dst, codes, lanes, types, kept) -> tuple[Cable, ...]:
    """The cables between kept ends: one per pair of ends (in natural order) and link type
    (class, rate and name), counting lanes, in natural order of the ends then the type's
    name, first seen first on a tie; in numpy over the links."""
    import numpy as np

    # each name's key once (the cached ``natural`` holds 65,536: 80,000 ends would churn it)
    named = sorted(((_natural(x), x) for x in set(ends.values())), key=itemgetter(0))
    if any(x[0] == y[0] for x, y in zip(named, named[1:])):
        return _cables_by_name(ends, src, dst, codes, lanes, types, kept)  # names alike
    names = [x for _, x in named]
    rank_of = {name: r for r, name in enumerate(names)}
    rank = np.full(len(kept), -1, dtype=np.int64)
    at = list(ends)
    rank[at] = [rank_of[ends[i]] for i in at]
    keep = kept[src] & kept[dst]
    ra, rb = rank[src[keep]], rank[dst[keep]]
    lo, hi = np.minimum(ra, rb), np.maximum(ra, rb)
    # link types alike in class, rate and name are one kind of cable
    kinds = {(t.cls, t.bandwidth * 8, t.name): None for t in types}
    kind_list = list(kinds)
    kind_of = np.array([kind_list.index((t.cls, t.bandwidth * 8, t.name)) for t in types]
                       or [0], dtype=np.int64)
    by_name = sorted(range(len(kind_list)), key=lambda k: kind_list[k][2])  # stable
    name_rank = np.empty(max(1, len(kind_list)), dtype=np.int64)
    name_rank[by_name] = np.arange(len(by_name))
    kind = kind_of[codes[keep].astype(np.int64)]
    m, nk = len(names), max(1, len(kind_list))
    key = (lo * m + hi) * nk + kind
    uniq, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    count = np.bincount(inverse, weights=lanes[keep]).astype(np.int64)
    pair, k = np.divmod(uniq, nk)
    a, b = np.divmod(pair, m)
    order = np.lexsort((first, name_rank[k], b, a))
    out = []
    for x, y, c, n in zip(a[order].tolist(), b[order].tolist(), k[order].tolist(),
                          count[order].tolist()):
        cls, rate, lt = kind_list[c]
        out.append(Cable(names[x], names[y], cls, rate, n, lt))
    return tuple(out)


def _cables_by_name(ends: dict[int, str], src, dst, codes, lanes, types,
                    kept) -> tuple[Cable, ...]:
    """``_cables`` one link at a time, for ends whose names sort alike (``node01/0`` and
    ``node1/0``): ties keep the order the links first give them."""
    cables: dict[tuple, int] = defaultdict(int)
    key = {e: natural(e) for e in ends.values()}    # once per end, not per cable
    for x, y, t, n in zip(src.tolist(), dst.tolist(), codes.tolist(), lanes.tolist()):
        if kept[x] and kept[y]:
            a, b, t = ends[x], ends[y], types[t]
            if key[b] < key[a]:             # the two in natural order (one compare, no sort)
                a, b = b, a
            cables[(a, b, t.cls, t.bandwidth * 8, t.name)] += n
    return tuple(Cable(a, b, cls, rate, n, lt)
                 for (a, b, cls, rate, lt), n in sorted(
                     cables.items(), key=lambda kv: (key[kv[0][0]], key[kv[0][1]], kv[0][4])))


def _blocks(system: System, host_of: Mapping[str, HostInfo]) -> tuple[tuple[str, ...], ...]:
    """NVLink domains as hostnames, in rank order; single-host domains count too (a DGX)."""
    loc = system.locality
    order: dict[str, list[str]] = {}
    for rank, g in enumerate(system.gpus):
        root = loc.domain_root[rank] or g.id
        h = host_of.get(g.id)
        if h is None:
            continue
        names = order.setdefault(root, [])
        if h.name not in names:
            names.append(h.name)
    return tuple(tuple(v) for v in order.values())


@attrs.frozen
class Wire:
    """One cable with port numbers at both ends (1-based, in cable order per end)."""

    a: str
    a_port: int
    b: str
    b_port: int
    rate: float
    cls: str


def wiring(fab: Fabric, ports: Mapping[tuple[str, str], Sequence[tuple[int, int]]] | None = None
           ) -> tuple[Wire, ...]:
    """Every cable of ``fab`` on numbered ports: each end numbers its cables from 1 in the
    fabric's cable order (down-links of a switch in end-name order come with it). ``ports``
    ((end, end) in sorted order -> port pairs in that order, as a dump reported them:
    ``topoc.importers.ports``) numbers the cables it lists so; the others take each end's
    lowest free ports."""
    given: dict[tuple[str, str], list[tuple[int, int]]] = {}
    used: dict[str, set[int]] = defaultdict(set)
    for (x, y), pairs in (ports or {}).items():
        given[(x, y)] = list(pairs)
        for px, py in pairs:
            used[x].add(px)
            used[y].add(py)
    next_port: dict[str, int] = defaultdict(lambda: 1)

    def free(end: str) -> int:
        while next_port[end] in used[end]:
            next_port[end] += 1
        port = next_port[end]
        used[end].add(port)
        return port
    out = []
    for c in fab.cables:
        flip = (c.b, c.a) in given and (c.a, c.b) not in given
        listed = given.get((c.b, c.a) if flip else (c.a, c.b), [])
        for _ in range(c.count):
            if listed:
                pa, pb = listed.pop(0)
                if flip:
                    pa, pb = pb, pa
            elif ports is None:
                pa, pb = next_port[c.a], next_port[c.b]
                next_port[c.a] += 1
                next_port[c.b] += 1
            else:
                pa, pb = free(c.a), free(c.b)
            out.append(Wire(c.a, pa, c.b, pb, c.rate, c.cls))
    return tuple(out)
