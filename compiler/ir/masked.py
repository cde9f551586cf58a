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
  NIC, CPU or NVLink switch changes and the locality facts are the healthy ones);
- no surviving device's distance from the NICs changes (``levels``, which the cost model's
  tiers read): each neighbour of a failed device keeps a neighbour one level nearer the NICs,
  which by induction on the distance keeps every distance.
"""

from __future__ import annotations

import attrs

from .degrade import Degraded, Mask, holders_of
from .incidence import Ends, MaskedIncidence
from .links import Links
from .system import SCALEOUT_CLASSES, System

#: The healthy system's views a degraded system made by ``isolate`` shares: cached properties
#: (set on the new instance) and memo entries.
SHARED_VIEWS = ("locality", "levels", "gpus", "gpu_models")
SHARED_MEMO = ("device_indices", "gpu_ids", "island_period")


def isolate(system: System, m: Mask) -> Degraded | None:
    """The system with the links of ``m`` gone and its failed devices kept, unreached, sharing
    the healthy views (module docstring); None when the faults might change one of them."""
    import numpy as np

    devices = system.devices
    if not m.devices or not isinstance(system.links, Links):
        return None
    if any(devices[i].kind != "net_switch" for i in m.devices):
        return None
    e = system.ends
    lost_at = np.flatnonzero(m.lost)
    scaleout = np.array([t.cls in SCALEOUT_CLASSES for t in e.types], dtype=np.bool_)
    codes = np.frombuffer(e.type, dtype=np.uint8 if e.type.typecode == "B" else np.uint16)
    if not scaleout[codes[lost_at]].all():
        return None
    if not _levels_kept(system, set(m.devices)):
        return None
    links = system.links
    lost = tuple(links[i] for i in lost_at.tolist())
    keep = ~m.lost
    src, dst, code, lanes = e.arrays(None, ("src", "dst", "type", "lanes"))
    ends = Ends(*(_array(typecode, column[keep]) for typecode, column in
                  (("i", src), ("i", dst))),
                _array(e.type.typecode, code[keep]), e.types, _array("i", lanes[keep]))
    out = attrs.evolve(system, links=links.kept(devices, ends, keep), skipped=())
    for name in SHARED_VIEWS:
        object.__setattr__(out, name, getattr(system, name))
    for key in SHARED_MEMO:
        if key in system.memo:
            out.memo[key] = system.memo[key]
    out.memo["ends"] = ends
    object.__setattr__(out, "incidence", MaskedIncidence(system.incidence, lost))
    for classes in (None, SCALEOUT_CLASSES):
        # the healthy reach labels bound the degraded ones: links taken away join nothing,
        # so labels that differ still mean no path; equal ones send the router to search,
        # which answers NoRoute itself (``locality.reach_labels``)
        key = ("reach_labels", classes)
        if key in system.memo:
            out.memo[key] = system.memo[key]
    touched = [devices[i].id for i in m.devices] + [e for link in lost
                                                    for e in (link.src, link.dst)]
    out.memo["faults"] = frozenset(p for d in touched for p in holders_of(d))
    return Degraded(out, tuple(devices[i].id for i in m.devices), lost, 0, (),
                    len(system.gpus))


def _array(typecode: str, column):
    """A numpy column as the ``array.array`` of ``typecode`` that ``Ends`` holds."""
    from array import array

    import numpy as np

    dtype = {"i": np.int32, "H": np.uint16, "B": np.uint8}[typecode]
    return array(typecode, column.astype(dtype).tobytes())


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
