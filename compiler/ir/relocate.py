"""A degraded system's locality facts patched from the healthy system's (``Locality``'s
``base``): the facts that are searched GPU by GPU (each GPU's socket, nearest NICs, own NIC
and that NIC's socket, its PCIe switch) made anew only for the host parts a failure touches.

A host part is a component over the PCIe, C2C and socket links (a superchip, a node); every
search those facts come from runs over those links alone and never leaves its part. A part
that holds no failed device and no end of a lost link of those classes has, on the degraded
system, the same devices, ids and links, so the same answers: they are copied (ranks
renumbered past the failed GPUs); the parts a failure touches are searched again on the
degraded system's links. On an 8,192-rack cluster a GPU's failure then searches one
superchip instead of 590,000 GPUs' hosts. ``tests/compiler/ir/test_relocate.py`` compares
the result with a fresh system's on every failure class of the bundled clusters.
"""

from __future__ import annotations

import operator
from collections import defaultdict

_HOST_CLASSES = ("pcie", "nvlink_c2c", "inter_socket")


def kind_of(device) -> str:
    """A device's kind as ``Locality._ids`` counts kinds: "nic" only for a compute NIC (DPUs
    and storage NICs carry no GPU traffic), "" for other NICs."""
    kind = device.kind
    if kind == "nic" and not device.compute_nic:
        return ""
    return kind


class HostAdj:
    """Device id -> its neighbours over host links, read from the system's incidence when
    asked (the ``host_adj`` a search needs, for the few devices it visits)."""

    def __init__(self, system):
        self.incidence = system.incidence
        self.found: dict[str, list[str]] = {}

    def get(self, node: str, default=()):
        out = self.found.get(node)
        if out is None:
            out = self.found[node] = [x.dst if x.src == node else x.src
                                      for x in self.incidence.get(node, ())
                                      if x.cls in _HOST_CLASSES]
        return out or default

    def __getitem__(self, node: str) -> list[str]:
        return self.get(node, [])


class Base:
    """What a degraded system's locality reads from the healthy one: the healthy
    ``Locality`` and the mask's failed device indices and lost links."""

    def __init__(self, healthy, failed: tuple[int, ...], lost):
        self.healthy = healthy
        self.failed = failed
        self.lost = lost

    def kept_ranks(self):
        """The healthy ranks that survive, in order (the degraded ranks 0..n-1)."""
        import numpy as np

        old = self.healthy.gpu_index
        return np.flatnonzero(~np.isin(old, np.asarray(self.failed, dtype=np.int64)))

    def redo(self, loc):
        """The degraded ranks whose host part the failure touches, ascending (once)."""
        found = getattr(self, "_redo", None)
        if found is None:
            found = self._redo = self._find_redo()
        return found

    def _find_redo(self):
        import numpy as np

        old = self.healthy
        label = old.host_labels
        index = old.index
        hit = {int(label[i]) for i in self.failed}
        for x in self.lost:
            if x.cls in _HOST_CLASSES:
                hit.add(int(label[index[x.src]]))
                hit.add(int(label[index[x.dst]]))
        per_rank = label[old.gpu_index[self.kept_ranks()]]
        return np.flatnonzero(np.isin(per_rank, np.fromiter(hit, dtype=per_rank.dtype,
                                                            count=len(hit))))


def ids(loc, kind: str):
    """``Locality._ids`` of the degraded system: the healthy set less the failed ids."""
    base = loc.system.memo.get("locality.base")
    if base is None or "ids" not in base.healthy.memo or \
            kind not in base.healthy.memo["ids"]:
        return None
    devices = base.healthy.system.devices
    return base.healthy.memo["ids"][kind] - {devices[i].id for i in base.failed}


def gpu_hosts(loc, nearest_by_bfs):
    """``Locality.gpu_hosts`` of a degraded system from the healthy one's (module
    docstring), or None when the healthy system has not made them; ``nearest_by_bfs`` is
    locality's search (passed in: locality imports this module)."""
    base = loc.system.memo.get("locality.base")
    if base is None or "gpu_hosts" not in base.healthy.__dict__:
        return None
    keep = base.kept_ranks().tolist()
    old = base.healthy.gpu_hosts
    pick = operator.itemgetter(*keep) if len(keep) > 1 else (lambda c: tuple(c[r] for r in keep))
    out = tuple(list(pick(column)) for column in old)
    redo = base.redo(loc).tolist()
    if not redo:
        return out
    socket, nearest, own, nic_socket = out
    system = loc.system
    gpus = system.gpus
    adj = HostAdj(system)

    def kind(device_id: str) -> str:
        return kind_of(system.device(device_id))

    def is_gpu(x: str) -> bool:
        return kind(x) == "gpu"

    def near(start: str, want: str) -> list[str]:
        return nearest_by_bfs(start, adj, lambda x: kind(x) == want, is_gpu)

    # each touched GPU's host part on the degraded system: the ranks sharing a set of NICs
    # are counted inside it (``gpu_hosts``' copies)
    part: dict[str, int] = {}
    for r in redo:
        start = gpus[r].id
        if start in part:
            continue
        part[start] = r
        frontier = [start]
        while frontier:
            node = frontier.pop()
            for other in adj.get(node):
                if other not in part:
                    part[other] = r
                    frontier.append(other)
    sharing: dict[tuple, list[int]] = defaultdict(list)
    for r in redo:
        cpus, nics = near(gpus[r].id, "cpu"), near(gpus[r].id, "nic")
        socket[r] = min(cpus) if cpus else ""
        nearest[r] = tuple(sorted(nics))
        own[r], nic_socket[r] = "", ""
        if nics:
            sharing[(part[gpus[r].id], nearest[r])].append(r)
    for (_, found), group in sharing.items():
        for r in group:
            mine = found[group.index(r) % len(found)]
            own[r] = mine
            cpus = near(mine, "cpu")
            nic_socket[r] = min(cpus) if cpus else ""
    return out


def pcie_switches(loc, switch_ids) -> list[str] | None:
    """Every rank's PCIe switch (``Locality.pcie_switch``) of a degraded system from the
    healthy one's, or None when the healthy system has not listed them."""
    base = loc.system.memo.get("locality.base")
    if base is None:
        return _all_pcie_switches(loc)
    old = base.healthy.memo.get("order.switches")
    if old is None:
        return None
    out = [old[r] for r in base.kept_ranks().tolist()]
    adj = HostAdj(loc.system)
    gpus = loc.system.gpus
    for r in base.redo(loc).tolist():
        ups = sorted(n for n in adj.get(gpus[r].id) if n in switch_ids)
        out[r] = ups[0] if ups else ""
    return out


def _all_pcie_switches(loc) -> list[str]:
    """Every rank's PCIe switch (``Locality.pcie_switch``: the smallest id among the PCIe
    switches a host link joins the GPU to, '' for none) for a whole system at once: the
    host links' ends that join a GPU to a switch, in numpy. Asked rank by rank, each GPU's
    host links were made as objects: 5 s at 32,768 DGX nodes."""
    import numpy as np

    from ..base.arrays import unique
    from .modelcodes import model_flags

    system = loc.system
    a, b = loc._host_ends
    gpu = model_flags(system, lambda m: m.kind == "gpu")
    switch = model_flags(system, lambda m: m.kind == "pcie_switch")
    up = gpu[a] & switch[b]
    down = gpu[b] & switch[a]
    g = np.concatenate((a[up], b[down])).astype(np.int64)
    s = np.concatenate((b[up], a[down])).astype(np.int64)
    rank = np.searchsorted(loc.gpu_index, g)
    pairs = unique(rank * len(system.devices) + s)    # each (rank, switch) once, by rank
    rank, s = pairs // len(system.devices), pairs % len(system.devices)
    devices = system.devices
    out = [""] * len(loc.gpu_index)
    for r, i in zip(rank.tolist(), s.tolist()):
        x = devices[i].id
        if not out[r] or x < out[r]:
            out[r] = x
    return out


def key_devices(loc, column: int, names):
    """``Locality._keys_by_index``'s device index per rank of one column (0: sockets, 1: PCIe
    switches; -1 for none) on a degraded system, from the healthy system's: a rank whose host
    part the failure leaves alone keeps its socket and switch, at the index less the failed
    devices before it; the touched parts' ranks read theirs from ``names``. None where the
    healthy system numbered none."""
    import numpy as np

    base = loc.system.memo.get("locality.base")
    old = base.healthy.memo.get("order.by_index", {}).get(column) if base is not None else None
    if old is None:
        return None
    return shifted(loc, base, old[0], names)


def shifted(loc, base, old, names):
    """A per-rank array of device indices (-1: none) of the healthy system carried to the
    degraded one: the surviving ranks' entries less the failed devices before each, the
    touched host parts' ranks read from ``names`` (the degraded system's ids per rank)."""
    import numpy as np

    at = old[base.kept_ranks()]
    failed = np.asarray(sorted(base.failed), dtype=np.int64)
    at = np.where(at >= 0, at - np.searchsorted(failed, at), -1)
    index = loc.index
    for r in base.redo(loc).tolist():
        at[r] = index[names[r]] if names[r] else -1
    return at


def key_checked(loc, column: int, unique, first, span: int):
    """For each (island, device) entry ``unique`` of a degraded system's key column
    (``Locality._keys_by_index``; ``first``: a rank of each), whether the healthy system
    checked it in the same island: then its order against any other such entry of its
    island is checked already (the healthy check holds between neighbours, so along the
    island's whole chain; failures only split islands and removing devices keeps their
    order). None where the healthy system checked nothing."""
    import numpy as np

    base = loc.system.memo.get("locality.base")
    old = base.healthy.memo.get("order.by_index", {}).get(column) if base is not None else None
    if old is None:
        return None
    healthy = base.healthy
    island = np.asarray(healthy.island, dtype=np.int64)[base.kept_ranks()[first]]
    alive = np.ones(len(healthy.system.devices), dtype=np.bool_)
    alive[list(base.failed)] = False
    survivors = np.flatnonzero(alive)
    device = unique % span - 1
    device = np.where(device >= 0, survivors[np.maximum(device, 0)], -1)
    # ``old[1]`` is the healthy column's sorted distinct entries: a binary search each
    # (``isin`` sorted both sides)
    wanted = island * (len(healthy.system.devices) + 1) + device + 1
    at = np.minimum(np.searchsorted(old[1], wanted), max(len(old[1]) - 1, 0))
    return (old[1][at] == wanted) if len(old[1]) else np.zeros(len(wanted), dtype=np.bool_)
