"""What ``diff`` compares inside a host, read from the link arrays (``System.ends``).

Per GPU: its NVLink lanes, the lanes to each directly wired GPU; per NIC: its PCIe switch and
CPU (NUMA node), the nearest over the host's PCIe links. ``diff`` asked each device's
``links_of`` for these, which made a ``Link`` object of every NVLink and PCIe link of both
systems (3.7 M at 1,024 NVL72 racks against itself, most of its 37 s); here one numpy pass per
system sums the lanes of every GPU, each device's PCIe neighbours are listed by index in the
order ``links_of`` gives them (``incidence.neighbour_lists``), and a host's facts read those
tables.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from ..ir.incidence import neighbour_lists
from ..ir.locality import natural
from ..ir.system import System, device_indices


class Kinds(dict):
    """A host's devices per kind (kind -> devices in declaration order), with each device's
    position among its kind and its kind by id, made once for the GPU and the NIC facts."""

    _pos: dict[str, int] | None = None
    _kind: dict[str, str] | None = None

    @property
    def pos(self) -> dict[str, int]:
        if self._pos is None:
            self._pos = {d.id: i for k in self for i, d in enumerate(self[k])}
        return self._pos

    @property
    def kind(self) -> dict[str, str]:
        if self._kind is None:
            self._kind = {d.id: k for k in self for d in self[k]}
        return self._kind


def by_kind(system: System, device_ids: Sequence[str]) -> Kinds:
    """A host's devices per kind, in declaration order."""
    devices, index = system.devices, device_indices(system)
    out = Kinds()
    for d in device_ids:
        dev = devices[index[d]]
        found = out.get(dev.kind)
        if found is None:
            out[dev.kind] = [dev]
        else:
            found.append(dev)
    return out


def _nvlink(system: System) -> tuple[list[int], dict[int, dict[int, int]]]:
    """Per device index: its NVLink lanes (a link to itself counted once, as ``links_of``
    lists it once), and per GPU the lanes of its NVLink links to each GPU (both ways)."""
    found = system.memo.get("diff_nvlink")
    if found is None:
        import numpy as np

        n = len(system.devices)
        src, dst, lanes = system.ends.arrays(lambda t: t.cls == "nvlink",
                                             ("src", "dst", "lanes"))
        other = src != dst
        total = np.bincount(src, weights=lanes, minlength=n) + \
            np.bincount(dst[other], weights=lanes[other], minlength=n)
        gpu = np.fromiter((d.kind == "gpu" for d in system.devices), dtype=np.bool_, count=n)
        both = gpu[src] & gpu[dst]
        pairs: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        for s, t, k in zip(src[both].tolist(), dst[both].tolist(), lanes[both].tolist()):
            pairs[s][t] += k
            if s != t:
                pairs[t][s] += k
        found = system.memo["diff_nvlink"] = (total.astype(np.int64).tolist(), dict(pairs))
    return found


def gpu_facts(system: System, kinds: Kinds) -> list[dict]:
    """Per GPU of the host in order: model, NVLink lanes, direct GPU peers, NIC, PCIe switch
    sharing, CPU, each as host-relative positions."""
    rank_of = system.memo.get("diff_rank_of")
    if rank_of is None:             # once per system, not once per host
        rank_of = system.memo["diff_rank_of"] = {g.id: r for r, g in enumerate(system.gpus)}
    lanes, pairs = _nvlink(system)
    index, devices = device_indices(system), system.devices
    pos = kinds.pos
    loc = system.locality
    out = []
    for g in kinds.get("gpu", ()):
        i = index[g.id]
        pair = pairs.get(i)
        peers = sorted((pos[o], n) for o, n in ((devices[j].id, n) for j, n in pair.items())
                       if o in pos) if pair else []
        r = rank_of[g.id]
        nic, sw, cpu = loc.nic(r), loc.pcie_switch(r), loc.socket(r)
        out.append({"model": g.model.name, "lanes": lanes[i], "peers": peers,
                    "nic": pos.get(nic), "switch": pos.get(sw), "cpu": pos.get(cpu)})
    return out


def nic_facts(system: System, kinds: Kinds) -> list[dict]:
    """Per NIC of the host in order: model, its PCIe switch and its CPU (NUMA node), as
    host-relative positions, found over the host's PCIe links."""
    neighbours, start = neighbour_lists(system, ("pcie",))
    index, devices = device_indices(system), system.devices
    pos, kind = kinds.pos, kinds.kind

    def adj(x: str) -> list[str]:
        # only CPUs and PCIe switches move the search (a GPU or NIC it passes is never
        # expanded nor taken), so only they are put in natural order
        i = index[x]
        return [o for o in (devices[j].id for j in neighbours[start[i]:start[i + 1]])
                if o in pos and kind[o] in ("cpu", "pcie_switch")]
    return nic_places(kinds.get("nic", ()), adj, kind, pos)


def nic_places(nics, adj, kind: dict[str, str], pos: dict[str, int]) -> list[dict]:
    """Per NIC: model, its PCIe switch and its CPU as host-relative positions, by a search
    from the NIC over ``adj`` (id -> neighbour ids) through PCIe switches only, neighbours
    in natural order, stopping at the first CPU."""
    out = []
    for n in nics:
        switch = cpu = None
        seen, frontier = {n.id}, [n.id]
        while frontier and cpu is None:      # nearest CPU through PCIe switches only
            nxt = []
            for x in frontier:
                near = adj(x)
                for y in (sorted(near, key=natural) if len(near) > 1 else near):
                    if y in seen:
                        continue
                    seen.add(y)
                    if kind[y] == "cpu" and cpu is None:
                        cpu = pos[y]
                    elif kind[y] == "pcie_switch":
                        switch = pos[y] if switch is None else switch
                        nxt.append(y)
            frontier = nxt
        out.append({"model": n.model.name, "switch": switch, "cpu": cpu})
    return out
