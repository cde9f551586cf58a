"""The figures ``topoc compile`` reports: counts, HBM, scale-up and scale-out bandwidth."""

from __future__ import annotations

from collections import Counter
from typing import Any

from . import system as _system
from .incidence import arrays_in
from .kinds import is_endpoint
from .links import Links
from .modelcodes import model_flags, model_ids, model_numbers  # noqa: F401 (re-exported)
from .system import SCALEOUT_CLASSES, SCALEUP_CLASSES, System
from ..base.units import exact



def _directions(link) -> int:
    return 2 if link.duplex else 1


def scaleout_levels(system: System) -> dict[str, int]:
    """Distance of every scale-out device from the NICs: NICs 0, leaves 1, spines 2, ...
    (computed once per system and shared: callers must not change it)."""
    return system.levels


def level_array(system: System):
    """``scaleout_levels`` by device index, a numpy int64 array with -1 for devices off the
    scale-out network: what the passes over the scale-out links' integer ends read (tiers,
    W405), with no trip through device ids. Kept per system (callers must not change it)."""
    found = system.memo.get("level_array")
    if found is None:
        found = system.memo["level_array"] = _level_array(system)
    return found


def _level_array(system: System):
    """The breadth-first pass behind ``level_array``, from every NIC and DPU with scale-out
    links at once, in numpy over the scale-out links' integer ends."""
    import numpy as np

    a, b, _ = arrays_in(system, SCALEOUT_CLASSES)
    devices = system.devices
    level = np.full(len(devices), -1, dtype=np.int64)
    # the devices on a scale-out link, in index order (a mask: np.unique hashed 1.2 M ends)
    mark = np.zeros(len(devices), dtype=np.bool_)
    mark[a] = True
    mark[b] = True
    touched = np.flatnonzero(mark)
    # the endpoints among them, each model's kind tested once (no test per device)
    starts = touched[model_flags(system, lambda m: is_endpoint(m.kind))[touched]]
    level[starts] = 0
    current = 0
    while True:
        near = np.concatenate((b[level[a] == current], a[level[b] == current]))
        near = near[level[near] == -1]
        if not len(near):
            break
        current += 1
        level[near] = current
    return level


def _levels(system: System) -> dict[str, int]:
    """``System.levels``: ``level_array`` by device id, for readers that hold ids (readers look
    levels up by id; none depends on the dict's order)."""
    import numpy as np

    level, devices = level_array(system), system.devices
    base = system.memo.get(LEVELS_BASE)
    if base is not None:
        # a degraded system (``degrade``): the healthy dict less the failed devices, with the
        # few levels the failure changed set again (equal as mappings to the pass below)
        healthy, before, failed = base
        out = dict(healthy)
        for d in failed:
            out.pop(d, None)
        for i in np.flatnonzero(before != level).tolist():
            if level[i] >= 0:
                out[devices[i].id] = int(level[i])
            else:
                out.pop(devices[i].id, None)
        return out
    found = np.flatnonzero(level >= 0)
    return {devices[i].id: lv for i, lv in zip(found.tolist(), level[found].tolist())}


#: A degraded system's memo entry: (the healthy ``levels``, the healthy ``level_array`` less
#: the failed devices, the failed ids), which ``_levels`` patches instead of a pass over
#: every device (``degrade`` sets it).
LEVELS_BASE = "levels.base"


def scaleout_tiers(system: System) -> dict[int, float]:
    """Per-direction bandwidth of each scale-out tier: tier 1 joins NICs to the first switches,
    tier 2 those switches to the next, and so on (levels found breadth-first from the NICs).
    Summed by bincount, which adds in link order as a pass link by link would."""
    import numpy as np

    level = level_array(system)
    a, b, bandwidth = arrays_in(system, SCALEOUT_CLASSES)
    keep = (level[a] >= 0) & (level[b] >= 0)
    tier = np.minimum(level[a[keep]], level[b[keep]]) + 1
    sums = np.bincount(tier, weights=bandwidth[keep])
    return {t: sums[t].item() for t in np.flatnonzero(np.bincount(tier)).tolist()}


def _scaleup_arrays(system: System):
    """Each GPU's scale-up bandwidth (both directions) and lanes, sorted, and every link's
    lanes summed, from the compact links' arrays (no ``Link`` object: 13.7 M of them made
    most of compile's time at 8,192 NVL72 racks). Each GPU's bandwidth is added in link order,
    source end before destination end, as the pass over ``Link`` objects adds it, so the
    floats are the same. None when the links are not the compact ones or a link type's
    bandwidth is not an int or float (a Fraction would round differently)."""
    import numpy as np

    links = system.links
    if not isinstance(links, Links):
        return None
    e = system.ends
    if not all(type(t.bandwidth) in (int, float) for t in e.types):
        return None
    src, dst, codes, lane = e.arrays(None, ("src", "dst", "type", "lanes"))
    total = int(lane.sum(dtype=np.int64))
    up = np.array([t.cls in SCALEUP_CLASSES for t in e.types], dtype=np.bool_)[codes]
    gpu_index = np.flatnonzero(model_flags(system, lambda m: m.kind == "gpu"))  # rank order
    per_lane = np.array([float(t.bandwidth) for t in e.types], dtype=np.float64)
    duplex = links.duplex_array()[up]
    src, dst, codes, lane = src[up], dst[up], codes[up], lane[up].astype(np.float64)
    weight = per_lane[codes] * lane * np.where(duplex, 2.0, 1.0)
    # each scale-up link's two ends one after the other: bincount adds in this order, so each
    # GPU's sum is the pass link by link (other devices' sums are never read)
    ends = np.empty(2 * len(src), dtype=np.int64)
    ends[0::2], ends[1::2] = src, dst
    n = len(system.devices)
    bw = np.bincount(ends, weights=np.repeat(weight, 2), minlength=n)[gpu_index]
    ln = np.bincount(ends, weights=np.repeat(lane, 2), minlength=n)[gpu_index]
    return sorted(bw.tolist()), sorted(int(x) for x in ln.tolist()), total


def _kinds(system: System) -> Counter:
    """Devices per kind, counted per model."""
    import numpy as np

    ids, models = model_ids(system)
    found, counts = np.unique(ids, return_counts=True)
    kinds: Counter = Counter()
    for m, n in zip(found.tolist(), counts.tolist()):
        kinds[models[m].kind] += n
    return kinds


def summarize(system: System) -> dict[str, Any]:
    """Counts per device kind, HBM, NVLink bandwidth (both directions, summed over GPUs),
    NVLink lanes and bandwidth per GPU, and the scale-out bisection estimate."""
    kinds = _kinds(system)
    found = _scaleup_arrays(system)
    if found is not None:
        bws, lanes, total_lanes = found
    else:
        gpu_ids = {d.id for d in system.gpus}
        per_gpu_bw: dict[str, float] = dict.fromkeys(gpu_ids, 0.0)
        per_gpu_lanes: dict[str, int] = dict.fromkeys(gpu_ids, 0)
        for link in system.links:
            if link.cls in SCALEUP_CLASSES:
                for end in (link.src, link.dst):
                    if end in gpu_ids:
                        per_gpu_bw[end] += link.bandwidth * _directions(link)
                        per_gpu_lanes[end] += link.lanes
        bws, lanes = sorted(per_gpu_bw.values()), sorted(per_gpu_lanes.values())
        total_lanes = sum(link.lanes for link in system.links)
    tiers = scaleout_tiers(system)
    # A Clos network's bisection is half its thinnest tier (each tier carries all cross traffic).
    bisection = min(tiers.values()) / 2 if tiers else 0
    bws, lanes = bws or [0], lanes or [0]
    return {
        "devices": dict(sorted(kinds.items())),
        "gpus": len(system.gpus),
        "links": len(system.links),
        "lanes": total_lanes,
        "hbm_bytes": exact(sum(d.model.attr("hbm", 0) for d in system.gpus)),
        "scaleup_bandwidth": exact(sum(bws)),
        "scaleup_bandwidth_per_gpu": {"min": exact(bws[0]), "max": exact(bws[-1])},
        "nvlink_lanes_per_gpu": {"min": lanes[0], "max": lanes[-1]},
        "scaleout_tiers": {str(k): exact(v) for k, v in tiers.items()},
        "bisection_bandwidth": exact(bisection),
    }


_system.VIEWS["levels"] = _levels
