"""The figures ``topoc compile`` reports: counts, HBM, scale-up and scale-out bandwidth."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from . import system as _system
from .incidence import columns_in
from .system import SCALEOUT_CLASSES, SCALEUP_CLASSES, System, device_indices
from ..base.units import exact


def _directions(link) -> int:
    return 2 if link.duplex else 1


def scaleout_levels(system: System) -> dict[str, int]:
    """Distance of every scale-out device from the NICs: NICs 0, leaves 1, spines 2, ...
    (computed once per system and shared: callers must not change it)."""
    return system.levels


def _levels(system: System) -> dict[str, int]:
    """The breadth-first pass behind ``System.levels`` (on the scale-out links' columns)."""
    src, dst, _ = columns_in(system, SCALEOUT_CLASSES)
    adj: dict[str, list[int]] = defaultdict(list)
    for j, (a, b) in enumerate(zip(src, dst)):
        adj[a].append(j)
        adj[b].append(j)
    # the NICs and DPUs with scale-out links, in device order (only those ends are looked at)
    index = device_indices(system)
    devices = system.devices
    ends = sorted({index[x] for x in adj})
    level = {devices[i].id: 0 for i in ends if devices[i].kind in ("nic", "dpu")}
    frontier = sorted(level)
    while frontier:
        nxt = []
        for node in frontier:
            for j in adj[node]:
                other = dst[j] if src[j] == node else src[j]
                if other not in level:
                    level[other] = level[node] + 1
                    nxt.append(other)
        frontier = nxt
    return level


def scaleout_tiers(system: System) -> dict[int, float]:
    """Per-direction bandwidth of each scale-out tier: tier 1 joins NICs to the first switches,
    tier 2 those switches to the next, and so on (levels found breadth-first from the NICs)."""
    level = scaleout_levels(system)
    tiers: dict[int, float] = defaultdict(float)
    for a, b, bandwidth in zip(*columns_in(system, SCALEOUT_CLASSES)):
        if a in level and b in level:
            tiers[min(level[a], level[b]) + 1] += bandwidth
    return dict(sorted(tiers.items()))


def summarize(system: System) -> dict[str, Any]:
    """Counts per device kind, HBM, NVLink bandwidth (both directions, summed over GPUs),
    NVLink lanes and bandwidth per GPU, and the scale-out bisection estimate."""
    kinds = Counter(d.kind for d in system.devices)
    gpu_ids = {d.id for d in system.gpus}
    per_gpu_bw: dict[str, float] = dict.fromkeys(gpu_ids, 0.0)
    per_gpu_lanes: dict[str, int] = dict.fromkeys(gpu_ids, 0)
    for link in system.links:
        if link.cls in SCALEUP_CLASSES:
            for end in (link.src, link.dst):
                if end in gpu_ids:
                    per_gpu_bw[end] += link.bandwidth * _directions(link)
                    per_gpu_lanes[end] += link.lanes
    tiers = scaleout_tiers(system)
    # A Clos network's bisection is half its thinnest tier (each tier carries all cross traffic).
    bisection = min(tiers.values()) / 2 if tiers else 0
    bws = sorted(per_gpu_bw.values()) or [0]
    lanes = sorted(per_gpu_lanes.values()) or [0]
    return {
        "devices": dict(sorted(kinds.items())),
        "gpus": len(gpu_ids),
        "links": len(system.links),
        "lanes": sum(link.lanes for link in system.links),
        "hbm_bytes": exact(sum(d.model.attr("hbm", 0) for d in system.gpus)),
        "scaleup_bandwidth": exact(sum(bws)),
        "scaleup_bandwidth_per_gpu": {"min": exact(bws[0]), "max": exact(bws[-1])},
        "nvlink_lanes_per_gpu": {"min": lanes[0], "max": lanes[-1]},
        "scaleout_tiers": {str(k): exact(v) for k, v in tiers.items()},
        "bisection_bandwidth": exact(bisection),
    }


_system.VIEWS["levels"] = _levels
