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

import attrs

from ..ir.hosts import HostInfo, hosts as host_list
from ..ir.locality import natural
from ..ir.system import SCALEOUT_CLASSES, System, device_indices


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


def fabric(system: System, pattern: str | None = None,
           mapping: Mapping[str, str] | None = None) -> Fabric:
    """The fabric view of ``system`` with hostnames from ``pattern``/``mapping`` (see
    ``compiler.ir.hosts``)."""
    host_infos = host_list(system, pattern, mapping)
    host_of = {d: h for h in host_infos for d in h.devices}
    # The scale-out links read from the link arrays (System.ends), no Link object made for
    # the millions of NVLink and PCIe links around them: (source id, destination id, link
    # type, lanes) per link, in declaration order.
    src, dst, codes, lanes = system.ends.arrays(lambda t: t.cls in SCALEOUT_CLASSES,
                                                ("src", "dst", "type", "lanes"))
    devices, types = system.devices, system.ends.types
    scaleout = [(devices[a].id, devices[b].id, types[t], n) for a, b, t, n in
                zip(src.tolist(), dst.tolist(), codes.tolist(), lanes.tolist())]
    net = {a for a, _, _, _ in scaleout} | {b for _, b, _, _ in scaleout}
    hcas: list[Hca] = []
    ends: dict[str, str] = {}
    per_host: dict[str, list] = defaultdict(list)
    for d in system.devices:
        if d.id in net and d.compute_nic and d.id in host_of:
            per_host[host_of[d.id].name].append(d)
    for h, devices in per_host.items():
        for d, index in zip(devices, hca_indices([d.id for d in devices])):
            hcas.append(Hca(h, index, d.id, d.model.name))
            ends[d.id] = f"{h}/{index}"
    order = device_indices(system)          # shared with locality and System.device
    hcas.sort(key=lambda x: order[x.device])
    switch_ids = [d.id for d in system.devices if d.kind == "net_switch" and d.id in net]
    is_switch = set(switch_ids)             # membership per cable end: a list was quadratic
    for s in switch_ids:
        ends[s] = end_name(system, s)
    # Keep what compute HCAs reach through switches only.
    adj: dict[str, set[str]] = defaultdict(set)
    for a, b, _, _ in scaleout:
        if a in ends and b in ends:
            adj[a].add(b)
            adj[b].add(a)
    tier: dict[str, int] = {}
    frontier = sorted({n for h in hcas for n in adj[h.device] if n in is_switch})
    for s in frontier:
        tier[s] = 1
    while frontier:
        nxt = set()
        for s in frontier:
            for n in adj[s]:
                if n in is_switch and n not in tier:
                    tier[n] = tier[s] + 1
                    nxt.add(n)
        frontier = sorted(nxt)
    switches = tuple(Switch(ends[s], s, system.device(s).model.name, tier[s],
                            system.device(s).model.port_budget("infiniband")
                            or system.device(s).model.port_budget("ethernet"))
                     for s in switch_ids if s in tier)
    kept = {h.device for h in hcas} | {s.device for s in switches}
    cables: dict[tuple, int] = defaultdict(int)
    key = {e: natural(e) for e in ends.values()}    # once per end, not per cable
    for x, y, t, n in scaleout:
        if x in kept and y in kept:
            a, b = ends[x], ends[y]
            if key[b] < key[a]:             # the two in natural order (one compare, no sort)
                a, b = b, a
            cables[(a, b, t.cls, t.bandwidth * 8, t.name)] += n
    cable_list = tuple(Cable(a, b, cls, rate, n, lt)
                       for (a, b, cls, rate, lt), n in sorted(
                           cables.items(), key=lambda kv: (key[kv[0][0]], key[kv[0][1]],
                                                           kv[0][4])))
    return Fabric(system.name, host_infos, tuple(hcas), switches, cable_list,
                  _blocks(system, host_of))


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
