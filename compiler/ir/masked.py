"""A degraded system that shares the healthy system's views (``isolate``): the fast way to ask
what one failure of the scale-out fabric costs.

``degrade`` makes a new system, and everything downstream rebuilds its views on it: the
locality facts (islands, NVLink domains, each GPU's socket, PCIe switch and NICs), the
scale-out levels, the GPU list, the id index. On an 8,192-rack cluster that is seconds a
failure. Most failure domains of a fabric leave all of those as they were: a leaf, a spine, a
core switch or a cable between switches takes scale-out links away and nothing else, and the
locality facts are read from the NVLink, PCIe, C2C and socket links alone. ``isolate`` keeps
the failed devices in place with their links gone (a device no link reaches carries no route:
routing and every load see exactly what they see without it), so the device indices, the
ranks and the views stay those of the healthy system and are handed over, not rebuilt; only
the link list (the kept rows of the healthy arrays, ``Mask``) and what is read from it anew
(adjacency, routes, reachability) are the degraded system's own.

It answers only where that is exact, and says None elsewhere (the caller degrades in full):

- every failed device is a network switch and every lost link a scale-out link (so no GPU,
  NIC, CPU or NVLink switch changes and the locality facts are the healthy ones), and no
  surviving device's distance from the NICs changes (``levels``, which the cost model's
  tiers read): each neighbour of a failed device keeps a neighbour one level nearer the NICs,
  which by induction on the distance keeps every distance;
- or every failed device is an NVLink switch (a chip, an NVSwitch tray) and every lost link
  an NVLink, and each NVLink domain that held one still joins all its GPUs: then only that
  domain's switch list (and its name, its smallest id) changes, patched on a copy of the
  healthy locality facts; the levels are untouched.
"""

from __future__ import annotations

import attrs

from .degrade import REACH_BASE, Degraded, Mask, column_array, fault_ranks, holders_of
from .incidence import Ends, MaskedIncidence
from .links import Links
from .system import SCALEOUT_CLASSES, System

#: The healthy system's views a degraded system made by ``isolate`` shares: cached properties
#: (set on the new instance) and memo entries.
SHARED_VIEWS = ("locality", "levels", "gpus", "gpu_models")
SHARED_MEMO = ("device_indices", "gpu_ids", "island_period", "level_array", "model_ids",
               "model_numbers")


def isolate(system: System, m: Mask) -> Degraded | None:
    """The system with the links of ``m`` gone and its failed devices kept, unreached, sharing
    the healthy views (module docstring); None when the faults might change one of them."""
    import numpy as np

    devices = system.devices
    if not m.devices or not isinstance(system.links, Links):
        return None
    kinds = {devices[i].kind for i in m.devices}
    if kinds == {"net_switch"}:
        classes: tuple[str, ...] = SCALEOUT_CLASSES
    elif kinds == {"switch"}:
        classes = ("nvlink",)
    else:
        return None
    e = system.ends
    lost_at = np.flatnonzero(m.lost)
    allowed = np.array([t.cls in classes for t in e.types], dtype=np.bool_)
    codes = np.frombuffer(e.type, dtype=np.uint8 if e.type.typecode == "B" else np.uint16)
    if not allowed[codes[lost_at]].all():
        return None
    links = system.links
    lost = tuple(links[i] for i in lost_at.tolist())
    locality = system.locality
    if kinds == {"net_switch"}:
        if not _levels_kept(system, set(m.devices)):
            return None
    else:
        locality = _domains_kept(system, set(m.devices), lost)
        if locality is None:
            return None
    keep = ~m.lost
    src, dst, code, lanes = e.arrays(None, ("src", "dst", "type", "lanes"))
    ends = Ends(*(column_array(typecode, column[keep]) for typecode, column in
                  (("i", src), ("i", dst))),
                column_array(e.type.typecode, code[keep]), e.types,
                column_array("i", lanes[keep]))
    out = attrs.evolve(system, links=links.kept(devices, ends, keep), skipped=())
    for name in SHARED_VIEWS:
        object.__setattr__(out, name, getattr(system, name))
    object.__setattr__(out, "locality", locality)
    for key in SHARED_MEMO:
        if key in system.memo:
            out.memo[key] = system.memo[key]
    out.memo["ends"] = ends
    object.__setattr__(out, "incidence", MaskedIncidence(system.incidence, lost))
    for key in [k for k in system.memo if isinstance(k, tuple) and k[0] == "reach_labels"]:
        # the healthy reach labels (of any link classes) bound the degraded ones: links taken
        # away join nothing, so labels that differ still mean no path; equal ones send the
        # router to search, which answers NoRoute itself (``locality.reach_labels``)
        out.memo[key] = system.memo[key]
    out.memo[REACH_BASE] = (system, ())
    touched = [devices[i].id for i in m.devices] + [e for link in lost
                                                    for e in (link.src, link.dst)]
    out.memo["faults"] = frozenset(p for d in touched for p in holders_of(d))
    fault_ranks(system, out, ())
    return Degraded(out, tuple(devices[i].id for i in m.devices), lost, 0, (),
                    len(system.gpus))




def _domains_kept(system: System, failed: set[int], lost) -> object | None:
    """The healthy locality facts with the NVLink switches of ``failed`` gone, or None when
    that changes more than the switches of their NVLink domains: each domain that held one
    must still join all its GPUs over NVLink (then the islands, sockets, PCIe switches and
    NICs, all read from other links, are as they were). A copy of the healthy ``Locality``
    with each such domain's switches (and its name, the smallest id in it) as a search over
    the domain's surviving NVLinks finds them; its caches copied, not shared."""
    import copy

    devices = system.devices
    loc = system.locality
    gone = {devices[i].id for i in failed}
    cut = {id(x) for x in lost}
    incidence = system.incidence
    renamed: dict[str, str] = {}
    switches: dict[str, tuple[str, ...]] = {}
    for name, members in loc.domain_switches.items():
        if gone.isdisjoint(members):
            continue
        ranks = [r for r in _domain_ranks(system, loc, name, members)]
        if not ranks:
            return None
        start = system.gpus[ranks[0]].id
        seen, frontier = {start}, [start]
        while frontier:
            nxt = []
            for u in frontier:
                for x in incidence.get(u, ()):
                    if x.cls != "nvlink" or id(x) in cut:
                        continue
                    v = x.dst if x.src == u else x.src
                    if v not in seen:
                        seen.add(v)
                        nxt.append(v)
            frontier = nxt
        if any(system.gpus[r].id not in seen for r in ranks):
            return None             # the domain splits: its GPUs' facts change
        inside = [v for v in seen if system.device(v).kind == "switch"]
        switches[name] = tuple(sorted(inside))
        renamed[name] = min(seen)
    out = copy.copy(loc)
    out.memo = {k: (dict(v) if isinstance(v, dict) else v) for k, v in loc.memo.items()}
    table = type(loc.domain_switches)(tuple)
    for name, members in loc.domain_switches.items():
        table[renamed.get(name, name)] = switches.get(name, members)
    out.domain_switches = table
    if any(old != new for old, new in renamed.items()):
        out.domain_root = [renamed.get(x, x) if x is not None else None
                           for x in loc.domain_root]
    return out


def _domain_ranks(system: System, loc, name: str, members) -> list[int]:
    """The ranks of the NVLink domain ``name``: those of the islands its switches' GPU
    neighbours sit on whose ``domain_root`` is ``name`` (a domain lies inside an island)."""
    islands = set()
    for sw in members:
        for x in system.incidence.get(sw, ()):
            other = x.dst if x.src == sw else x.src
            if other in loc.rank_of:
                islands.add(loc.island[loc.rank_of[other]])
    return [r for i in sorted(islands) for r in loc.island_ranks[i]
            if loc.domain_root[r] == name]


def _levels_kept(system: System, failed: set[int]) -> bool:
    """Whether every surviving device keeps its distance from the NICs: each neighbour of a
    failed device (over scale-out links) still has a surviving neighbour one level nearer.
    Only a failed device's neighbours lose a neighbour, so checking them is enough."""
    levels, devices = system.levels, system.devices
    ids = {devices[i].id for i in failed}
    for i in failed:
        for link in system.incidence.get(devices[i].id, ()):
            w = link.dst if link.src == devices[i].id else link.src
            if w in ids or link.cls not in SCALEOUT_CLASSES:
                continue
            level = levels.get(w)
            if not level:           # a NIC (0) or off the network: no nearer neighbour needed
                continue
            if not any(levels.get(u := (x.dst if x.src == w else x.src)) == level - 1
                       and u not in ids and x.cls in SCALEOUT_CLASSES
                       for x in system.incidence.get(w, ())):
                return False
    return True
