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
import itertools
import operator
from collections import defaultdict
from collections.abc import Mapping, Sequence
from operator import itemgetter

import attrs

from ..base.gcpause import gc_paused
from ..ir.hosts import HostInfo, hosts_and_members
from ..ir.modelcodes import model_flags
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
    #: Made from a system (``fabric``): (``hosts``, ``switches``, each device's position in
    #: ``hosts`` (-1: none) as a numpy array, ``switches``' device indices), for passes that
    #: index devices by number (diff's loose-NIC count), valid while ``hosts`` and
    #: ``switches`` are these same tuples (an ``attrs.evolve`` may replace them); None
    #: otherwise. Not compared.
    device_at: tuple | None = attrs.field(default=None, eq=False, repr=False)

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

    host_infos, host_at = _host_at(system, pattern, mapping)
    # The scale-out links read from the link arrays (System.ends), no Link object nor id
    # string made per link: device indices, link type codes and lanes, in declaration order.
    src, dst, codes, lanes = system.ends.arrays(lambda t: t.cls in SCALEOUT_CLASSES,
                                                ("src", "dst", "type", "lanes"))
    devices, types = system.devices, system.ends.types
    net = np.unique(np.concatenate((src, dst)))     # in device order
    hcas: list[Hca] = []
    ends: dict[int, str] = {}           # device index -> its end name (HCAs, switches)
    # compute NICs on a host, each host's in device order, hosts in order of their first
    # (the models tested once each, not a property per device: 282,624 ends at 32,768 nodes)
    nics = net[model_flags(system, _compute_nic)[net] & (host_at[net] >= 0)]
    per_host: dict[int, list[int]] = defaultdict(list)
    for i, k in zip(nics.tolist(), host_at[nics].tolist()):
        per_host[k].append(i)
    hca_at: list[int] = []
    for k, members in per_host.items():
        h = host_infos[k].name
        for i, index in zip(members, hca_indices([devices[i].id for i in members])):
            d = devices[i]
            hcas.append(Hca(h, index, d.id, d.model.name))
            hca_at.append(i)
            ends[i] = f"{h}/{index}"
    hcas = [hcas[k] for k in np.argsort(np.array(hca_at, dtype=np.int64), kind="stable")
            .tolist()]
    switch_at = net[model_flags(system, lambda m: m.kind == "net_switch")[net]].tolist()
    for i in switch_at:
        ends[i] = end_name(system, devices[i].id)
    tier = _tiers(len(devices), src, dst, hca_at, switch_at)
    switches = tuple(Switch(ends[i], devices[i].id, devices[i].model.name, tier[i],
                            devices[i].model.port_budget("infiniband")
                            or devices[i].model.port_budget("ethernet"))
                     for i in switch_at if tier[i] > 0)
    kept = np.zeros(len(devices), dtype=np.bool_)
    kept[hca_at] = True
    switch_kept = [i for i in switch_at if tier[i] > 0]
    kept[switch_kept] = True
    cable_list = _cables(ends, src, dst, codes, lanes, types, kept)
    return Fabric(system.name, host_infos, tuple(hcas), switches, cable_list,
                  _blocks(system, host_infos, host_at) if blocks else (),
                  (host_infos, switches, host_at, switch_kept))


def _compute_nic(model) -> bool:
    """``Device.compute_nic`` of a model's devices."""
    return model.kind == "nic" and model.attr("role", "compute") == "compute"


def _host_at(system: System, pattern: str | None, mapping: Mapping[str, str] | None):
    """The hosts (``ir.hosts.hosts``) and each device's host as its position among them (-1:
    on none), a numpy array by device index: no dictionary of every host device's id."""
    import numpy as np

    infos, members = hosts_and_members(system, pattern, mapping)
    host_at = np.full(len(system.devices), -1, dtype=np.int64)
    if members:
        flat = np.fromiter(itertools.chain.from_iterable(members), dtype=np.int64)
        host_at[flat] = np.repeat(np.arange(len(members), dtype=np.int64),
                                  [len(m) for m in members])
    return infos, host_at


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
    # (``map`` over the names, not a Python step each: 282,624 ends at 32,768 DGX nodes)
    distinct = list(set(ends.values()))
    natural_key = _natural if any("\0" in x for x in distinct) else _natural_text
    named = sorted(zip(map(natural_key, distinct), distinct), key=itemgetter(0))
    keys = list(map(itemgetter(0), named))
    if any(map(operator.eq, keys, keys[1:])):
        return _cables_by_name(ends, src, dst, codes, lanes, types, kept)  # names alike
    names = list(map(itemgetter(1), named))
    rank_of = dict(zip(names, range(len(names))))
    rank = np.full(len(kept), -1, dtype=np.int64)
    rank[np.fromiter(ends, dtype=np.int64, count=len(ends))] = np.fromiter(
        map(rank_of.__getitem__, ends.values()), dtype=np.int64, count=len(ends))
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
    k = k[order].tolist()
    return tuple(map(Cable, map(names.__getitem__, a[order].tolist()),
                     map(names.__getitem__, b[order].tolist()),
                     map(itemgetter(0), map(kind_list.__getitem__, k)),
                     map(itemgetter(1), map(kind_list.__getitem__, k)),
                     count[order].tolist(),
                     map(itemgetter(2), map(kind_list.__getitem__, k))))


def _digits_token(m: re.Match) -> str:
    digits = str(int(m.group()))
    return f"\0{chr(len(digits) + 1)}{digits}"


def _natural_text(name: str) -> str:
    """A string that sorts (and ties) as ``natural(name)`` does, for a name without NUL: each
    run of digits becomes NUL, its value's length and its value's digits. A plain string sort
    of these is several times faster than one of ``natural``'s tuples of text and numbers.
    Where the tuples compare a text part with a longer one, the shorter's NUL (or its end)
    sorts first, as the shorter text does; where they compare two numbers, the two runs are
    at the same place and compare by length, then digits, as the numbers do."""
    return _DIGIT_RUN.sub(_digits_token, name)


_DIGIT_RUN = re.compile(r"\d+")


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


def _blocks(system: System, host_infos: Sequence[HostInfo],
            host_at) -> tuple[tuple[str, ...], ...]:
    """NVLink domains as hostnames, in rank order; single-host domains count too (a DGX).
    ``host_at``: each device's position in ``host_infos`` (-1: on no host)."""
    loc = system.locality
    gpu_host = host_at[loc.gpu_index].tolist()
    order: dict[str, list[str]] = {}
    for rank, (g, k) in enumerate(zip(system.gpus, gpu_host)):
        root = loc.domain_root[rank] or g.id
        if k < 0:
            continue
        name = host_infos[k].name
        names = order.setdefault(root, [])
        if name not in names:
            names.append(name)
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
    if ports is None:
        # no dump to follow: each end's ports from 1 in cable order (one pass, no lookups of
        # given pairs: 786,432 wires at 32,768 DGX nodes)
        out = []
        for c in fab.cables:
            a, b = c.a, c.b
            pa, pb = next_port[a], next_port[b]
            n = c.count
            if a == b:              # one end at both: its counter moves twice per wire
                out.extend(Wire(a, pa + k, b, pa + k, c.rate, c.cls) for k in range(0, 2 * n, 2))
                next_port[a] = pa + 2 * n
                continue
            next_port[a], next_port[b] = pa + n, pb + n
            if n == 1:
                out.append(Wire(a, pa, b, pb, c.rate, c.cls))
            else:
                out.extend(Wire(a, pa + k, b, pb + k, c.rate, c.cls) for k in range(n))
        return tuple(out)
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
