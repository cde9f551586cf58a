"""A degraded system's islands and NVLink domains patched from the healthy system's
(``patched``): the locality pass's components found again only inside the islands a failure
touches.

``Locality`` joins every NVLink (the domains) and then every other link inside a machine (the
islands) over the whole system: on an 8,192-rack cluster, 13.7 M links, a second and more per
degraded system. Taking devices and links away only splits components, and an island is
closed under the links both passes read, so an island that holds no failed device and no end
of a lost link of those classes keeps its devices and links: its domains and itself are the
healthy ones, each label (the smallest device index of its component) moved down by the
failed devices before it, each domain's name (its smallest id) and switch list as they were.
The touched islands' devices are joined again over their surviving links (``_components``,
the same pass), and named as ``Locality`` names them. What is read per rank (islands
numbered by first rank, the ranks of each island, each rank's domain name) is then made as
``Locality`` makes it. Exact, not an approximation of alike places: ``tests/compiler/ir/
test_reisland.py`` compares every field with a fresh system's on every failure class of the
bundled clusters.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Mapping

from ..base.arrays import unique
from .modelcodes import model_flags
from .relocate import _HOST_CLASSES
from .system import SCALEOUT_CLASSES, System

#: The healthy system's memo entry: each device's island label and whether an NVLink ends
#: at it (what ``Locality`` computes and does not keep), made once for every degraded copy.
MEMO = "reisland.healthy"


def _healthy(system: System):
    """(island label, NVLink flag, link-class code per type) of the healthy system, once."""
    found = system.memo.get(MEMO)
    if found is None:
        import numpy as np

        from .locality import _components

        loc = system.locality
        e = system.ends
        a, b = e.arrays(lambda t: t.cls not in SCALEOUT_CLASSES and t.cls != "nvlink")
        islands = _components(loc._domains.copy(), a, b)
        a, b = e.arrays(lambda t: t.cls == "nvlink")
        nvlink = np.zeros(len(system.devices), np.bool_)
        nvlink[a] = True
        nvlink[b] = True
        found = system.memo[MEMO] = (islands, nvlink)
    return found


def _codes(e):
    """Per link type: 2 an NVLink, 3 a PCIe link, 1 another link inside a machine, 0 a
    scale-out link."""
    import numpy as np

    return np.array([2 if t.cls == "nvlink" else 3 if t.cls == "pcie" else
                     0 if t.cls in SCALEOUT_CLASSES else 1 for t in e.types], dtype=np.int8)


def patched(healthy: System, out: System, failed: tuple[int, ...], lost):
    """``out``'s ``Locality`` (``out``: ``healthy`` less the devices ``failed`` and the links
    where the numpy bool array ``lost`` holds; no link retyped) from the healthy one, or
    None when the healthy system has none made."""
    import numpy as np

    from .locality import Locality, _components

    if not healthy.has_view("locality"):
        return None
    old = healthy.locality
    islands, nvlink = _healthy(healthy)
    e = healthy.ends
    src, dst, code = e.arrays(None, ("src", "dst", "type"))
    cls = _codes(e)
    n_old = len(healthy.devices)
    gone = np.zeros(n_old, np.bool_)
    gone[list(failed)] = True
    lost_at = np.flatnonzero(lost)
    inside = cls[code[lost_at]] > 0
    hit = np.concatenate((islands[list(failed)], islands[src[lost_at[inside]]],
                          islands[dst[lost_at[inside]]]))
    touched = np.isin(islands, unique(hit))     # one pass, not one per touched island
    renumber = (np.cumsum(~gone) - 1).astype(np.int32)
    alive = ~gone
    domains = renumber[old._domains][alive]
    island = renumber[islands][alive]
    in_domain = nvlink[alive]
    region_old = np.flatnonzero(touched & alive)          # the touched survivors, healthy
    region = renumber[region_old]                         # and degraded indices
    n = int(alive.sum())
    # the surviving links inside the touched islands (an island holds both ends of its
    # links but scale-out ones), joined again in local numbering
    keep = touched[src] & ~lost & (cls[code] > 0)
    la, lb, lc = src[keep], dst[keep], cls[code[keep]]
    cpu = model_flags(healthy, lambda m: m.kind == "cpu")
    below = (lc == 3) & ~(cpu[la] | cpu[lb])      # PCIe below the CPUs (``Locality.p2p``)
    local = np.full(n_old, -1, np.int32)
    local[region_old] = np.arange(len(region_old), dtype=np.int32)
    la, lb = local[la], local[lb]
    nv = lc == 2
    start = np.arange(len(region_old), dtype=np.int32)
    dom_local = _components(start, la[nv], lb[nv])
    isl_local = _components(dom_local.copy(), la[~nv], lb[~nv])
    domains[region] = region[dom_local]
    island[region] = region[isl_local]
    in_domain[region] = False
    in_domain[region[la[nv]]] = True
    in_domain[region[lb[nv]]] = True
    p2p = None
    if "p2p_labels" in old.__dict__:
        # the peer-to-peer sets (NVLink domains joined by PCIe below the CPUs) lie inside
        # the islands: the healthy ones renumbered, the touched islands' joined again
        p2p = renumber[old.p2p_labels][alive]
        p2p[region] = region[_components(dom_local.copy(), la[below], lb[below])]

    loc = Locality.__new__(Locality)
    loc.system = out
    loc.memo = {}
    a, b = old._host_ends
    host_types = np.array([t.cls in _HOST_CLASSES for t in e.types], np.bool_)
    kept_host = ~lost[host_types[code]]       # the host links in link order, as selected
    loc._host_ends = (renumber[a[kept_host]], renumber[b[kept_host]])
    loc._domains = domains
    old_gpu = old.gpu_index
    gpu_alive = alive[old_gpu]
    loc.gpu_index = gpu_index = renumber[old_gpu[gpu_alive]].astype(np.int64)
    roots = island[gpu_index]
    _, first, inverse = np.unique(roots, return_index=True, return_inverse=True)
    number = np.empty(len(first), np.int64)
    number[np.argsort(first, kind="stable")] = np.arange(len(first))
    per_rank = number[inverse.reshape(-1)]
    loc.island = per_rank.tolist()
    by_island = np.argsort(per_rank, kind="stable")
    cuts = np.searchsorted(per_rank[by_island], np.arange(1, len(first))).tolist()
    loc.island_ranks = [part.tolist() for part in np.split(by_island, cuts)] \
        if len(first) else []
    # domain names: the healthy ones but for the touched islands' domains, named again by
    # their smallest id (a touched domain's old name may be a failed device's, or name a
    # domain that split); the table in the order of each domain's first switch, as made
    devices, old_devices = out.devices, healthy.devices
    was = np.flatnonzero(touched & nvlink)
    stale = set(_names(old_devices, was, old._domains[was]).values())
    members = region[in_domain[region]]
    names = _names(devices, members, domains[members])
    kept_ranks = np.flatnonzero(gpu_alive)
    old_root = old.domain_root
    domain_root = [old_root[r] for r in kept_ranks.tolist()]
    in_region = np.zeros(n, np.bool_)
    in_region[region] = True
    for r in np.flatnonzero(in_region[gpu_index]).tolist():
        i = int(gpu_index[r])
        domain_root[r] = names[int(domains[i])] if in_domain[i] else None
    loc.domain_root = domain_root
    switch = model_flags(out, lambda m: m.kind == "switch")
    rows = []                   # (first switch's index, name, switches)
    first_switch = _first_switches(healthy)
    for name, switches in old.domain_switches.items():
        if switches and name not in stale:
            rows.append((int(renumber[first_switch[name]]), name, switches))
    fresh: dict[int, list[int]] = defaultdict(list)
    for i in members[switch[members]].tolist():
        fresh[int(domains[i])].append(i)
    for root, at in fresh.items():
        rows.append((at[0], names[root], tuple(sorted(devices[i].id for i in at))))
    rows.sort(key=lambda row: row[0])
    table = type(old.domain_switches)(tuple)
    table.update((name, switches) for _, name, switches in rows)
    loc.domain_switches = table
    loc.__dict__["rank_of"] = ShiftedRanks(old.rank_of, gpu_alive, healthy)
    if p2p is not None:
        loc.__dict__["p2p_labels"] = p2p
    return loc


def _names(devices, at, roots) -> dict[int, str]:
    """Each root's domain name: the smallest id among the devices ``at`` of that root."""
    names: dict[int, str] = {}
    for i, root in zip(at.tolist(), roots.tolist()):
        x = devices[i].id
        if root not in names or x < names[root]:
            names[root] = x
    return names


def _first_switches(system: System) -> dict[str, int]:
    """The healthy system's NVLink domain name -> its first switch's device index (the
    order ``Locality`` files its domains in), once."""
    key = MEMO + ".switches"
    found = system.memo.get(key)
    if found is None:
        from .system import device_indices

        index = device_indices(system)
        found = system.memo[key] = {name: min(index[x] for x in switches)
                                    for name, switches in
                                    system.locality.domain_switches.items() if switches}
    return found


class Shifted(Mapping):
    """A degraded system's id -> position read from the healthy system's: the failed ids
    are not keys, and every other position moves down by the failed ones before it (the
    survivors keep their order), so no dict of every id is made per degraded system. Device
    indices (``system.device_indices``, ``degrade``) and GPU ranks (``Locality.rank_of``,
    ``ShiftedRanks``) both read this way."""

    def __init__(self, healthy: Mapping[str, int], failed: list[int], gone: set[str]):
        self._healthy, self._failed, self._gone = healthy, failed, gone

    def __getitem__(self, key: str) -> int:
        if key in self._gone:
            raise KeyError(key)
        i = self._healthy[key]
        return i - bisect.bisect_left(self._failed, i)

    def get(self, key, default=None):
        i = self._healthy.get(key)
        if i is None or key in self._gone:
            return default
        return i - bisect.bisect_left(self._failed, i)

    def __contains__(self, key: object) -> bool:
        return key in self._healthy and key not in self._gone

    def __iter__(self):
        return (k for k in self._healthy if k not in self._gone)

    def __len__(self) -> int:
        return len(self._healthy) - len(self._gone)


class ShiftedRanks(Shifted):
    """A degraded system's GPU id -> rank (``Locality.rank_of``): the healthy ranks less the
    failed GPUs ranked before each (``alive``: a flag per healthy rank)."""

    def __init__(self, healthy: Mapping[str, int], alive, system: System):
        import numpy as np

        failed = np.flatnonzero(~alive).tolist()
        gpus = system.gpus
        super().__init__(healthy, failed, {gpus[r].id for r in failed})
