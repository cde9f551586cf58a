"""Blast radius: for every failure domain a file implies, what its failure costs (``blast``).

The domains come from the wiring: each GPU, NIC, PCIe switch, NVLink switch and network switch;
each host (an instance marked ``host``, or the devices a CPU reaches); each instance that holds
only NVLink switches (an NVSwitch tray); and each instance that holds several hosts (a rack, a
scalable unit). Domains that look alike (same kind, model, contents and place in the fabric)
form one class and are evaluated once, on their first member, so a 1,024-rack cluster costs
as much as one rack: the report names the class, its member count and an example.

For each class: GPUs lost, link bandwidth lost by link class, whether the survivors can still
reach each other, the time of a reference collective (a world all-reduce of ``size`` bytes)
before and after, and with a parallel strategy its step time before and after (a strategy that
loses GPUs must be planned again: it is marked so, not costed). Classes are ranked by the
fraction of the reference throughput they take away, times their member count (how many
such failures the fabric has: the expected share of the damage).
"""

from __future__ import annotations

from collections import defaultdict

import attrs

from ..base.gcpause import gc_paused
from ..collectives.cost import CostError
from ..collectives.coster import cost
from ..ir.degrade import Degraded, _select, degrade_mask, mask
from ..ir.masked import isolate
from ..ir.groups import select_group
from ..ir.system import System, device_indices
from .faildomains import DEVICE_DOMAINS, classes, domains, instances  # noqa: F401 (re-exported)
from .strategy import step

@attrs.frozen
class Domain:
    """One class of alike failure domains."""

    what: str                   # 'gpu', 'nic', ..., 'host', 'nvswitch tray', 'rack'
    example: str                # the member evaluated
    members: int
    gpus_lost: int
    bandwidth_lost: tuple[tuple[str, float], ...]   # link class -> bytes/s (both directions)
    connected: bool             # the survivors still reach each other
    time_before: float | None   # the reference collective, seconds
    time_after: float | None
    #: the strategy's step time, or its exposed communication per step for a block of written
    #: traffic lines (no compute time)
    step_before: float | None = None
    step_after: float | None = None
    replan: bool = False        # the strategy lost GPUs: plan again

    @property
    def slowdown(self) -> float | None:
        """time_after / time_before of the reference collective (None when not costed)."""
        if not self.time_before or self.time_after is None:
            return None
        return self.time_after / self.time_before

    @property
    def impact(self) -> float:
        """The share of the reference throughput one failure takes away (1 when the job
        stops: survivors partitioned), times the class's member count."""
        if not self.connected:
            share = 1.0
        elif self.slowdown is None:
            share = 0.0
        else:
            share = max(0.0, 1 - 1 / self.slowdown)
        lost = self.gpus_lost / self.gpus_total if self.gpus_total else 0.0
        return (share + lost) * self.members

    gpus_total: int = 0
    ids: tuple[str, ...] = ()   # every member's id (the example first)
    #: the healthy system's parts: sets of GPUs no link joins to each other (1: connected).
    #: Where it is already split, ``connected`` says whether the failure splits a part
    parts_before: int = 1


def _reference(system: System, size: int) -> tuple[float | None, bool]:
    """The world all-reduce time and whether the GPUs reach each other."""
    if len(system.gpus) < 2:
        return None, len(system.gpus) == 1
    try:
        return cost(system, select_group(system, "world"), "allreduce", size).time, True
    except CostError:
        return None, False


def _seed_routes(healthy: System, after: System, lost) -> None:
    """Give the degraded system's routers the healthy system's least-cost paths that keep
    clear of what failed. Exact: a surviving path's links cost what they did (a hop's cost is
    its link class, the transit devices' kinds and a per-link tie-break, none of which a
    failure elsewhere changes), and taking links away makes no other path cheaper, so the
    path the search would find on the degraded system is the same one. The searches the
    world all-reduce makes on every degraded system are most of ``blast``'s time; the
    rail-level choices (each GPU's NIC, PXN proxies) depend on the surviving ranks and are
    made again."""
    from ..collectives.loads import Resources
    gone = {link.id for link in lost}
    for key, res in list(healthy.memo.items()):
        if not (isinstance(key, tuple) and len(key) == 2 and key[0] is Resources):
            continue
        fresh = Resources.of(after, key[1])
        for name in ("any", "host", "fabric", "nvlink"):
            mine, theirs = getattr(fresh.router, name).cache, getattr(res.router, name).cache
            for k, path in theirs.items():
                if k not in mine and gone.isdisjoint(path):
                    mine[k] = path


def _degraded(system: System, example: str) -> Degraded:
    """``degrade(system, Faults((example,)))``, by ``isolate`` where that is exact (a switch
    of the scale-out fabric: the degraded system shares the healthy one's views)."""
    return _degraded_at(system, _members(system, example))


def _members(system: System, example: str) -> list[int]:
    """The device indices ``--fail example`` names (``degrade._select``: the device of that
    id and every device its id prefixes up to a dot), read from the instance table
    (``faildomains.Instances``) and the id index instead of a pass over every id."""
    found = instances(system).devices(example)
    at = device_indices(system).get(example)
    if any(c in example for c in "*?[") or (found is None and at is None):
        # a glob, or no instance below the system: the system itself (a single machine's
        # host), whose devices the table does not number as an instance
        return _select(system, example, "--fail")
    found = found or []
    return sorted({*found, at}) if at is not None else found


def _degraded_at(system: System, failed: list[int]) -> Degraded:
    m = mask(system, failed)
    return isolate(system, m) or degrade_mask(system, m)


def _step(system: System, name: str | None) -> float | None:
    if name is None:
        return None
    try:
        report = step(system, system.parallel(name))
    except (KeyError, CostError):
        return None
    return report.per_step


def blast(system: System, parallel: str | None = None, size: int = 2**30,
          limit: int = 0) -> list[Domain]:
    """Every class of failure domains of ``system``, ranked by impact (see the module
    docstring); ``limit`` > 0 keeps the first classes.

    The cyclic collector is paused throughout and asked, after each class, for its youngest
    generation only: what that class's degraded system made (its cycles, a System and the
    views cached on it, freed before the next class). Nothing is promoted while it is
    paused, so the youngest generation is exactly what was made since the last such pass;
    the collector's full passes over the healthy system's millions of objects, which it
    otherwise starts as they pile up, never run."""
    import gc

    with gc_paused():
        out = _blast(system, parallel, size, gc)
    out.sort(key=lambda d: (-d.impact, d.what, d.example))
    return out[:limit] if limit > 0 else out


def gpu_parts(system: System) -> dict[str, int]:
    """Each GPU's part: the component of the link graph it is in (by id, labelled with the
    component's smallest device index)."""
    from ..ir.locality import reach_labels
    labels = reach_labels(system, None)
    index = device_indices(system)
    return {g.id: int(labels[index[g.id]]) for g in system.gpus}


def _splits(before: dict[str, int], after: System) -> bool:
    """Whether the failure cut apart surviving GPUs that were in one part before: more parts
    among the survivors than the healthy parts that keep a GPU."""
    now = gpu_parts(after)
    return len(set(now.values())) > len({before[g] for g in now})


#: The views a system caches on itself (``System``'s cached properties).
_VIEWS = ("graph", "locality", "incidence", "adjacency", "ends", "levels", "gpus",
          "gpu_models")


def _release(healthy: System, after: System) -> None:
    """Drop what the degraded system ``after`` cached on itself (its views and memo, which
    point back at it: cycles only the collector frees), so that reference counting frees it
    when the class is done; the collector's pass after the class then walks only what is
    left, not the degraded system's tables of every GPU (a second a class at 8,192 racks,
    reading each table's every item). The healthy system's own views, which a degraded
    system may share, are only let go of, never changed."""
    if after is healthy:
        return
    if after.memo is not healthy.memo:
        after.memo.clear()
    for name in _VIEWS:
        if after.has_view(name):
            object.__delattr__(after, name)


def _blast(system: System, parallel: str | None, size: int, gc) -> list[Domain]:
    """``blast``'s classes, unranked. On a system already split into parts (two Superchips
    of a GB200 tray that share no link) no world collective runs; a class is marked
    partitioned only when it splits a part."""
    found = classes(system)
    before, joined = _reference(system, size)
    parts = gpu_parts(system) if not joined and len(system.gpus) > 1 else None
    count = len(set(parts.values())) if parts else 1
    step_before = _step(system, parallel)
    total = len(system.gpus)
    out = []
    for (what, _), members in found.items():
        example = members[0]
        result = _degraded(system, example)
        after = result.system
        _seed_routes(system, after, result.lost)
        lost = total - len(after.gpus)
        time_after, connected = _reference(after, size)
        if parts is not None:
            connected = not _splits(parts, after)
        gone = defaultdict(float)
        for link in result.lost:
            gone[link.type.cls] += link.type.bandwidth * link.lanes * (2 if link.duplex else 1)
        replan = parallel is not None and lost > 0
        out.append(Domain(what, example, len(members), lost, tuple(sorted(gone.items())),
                          connected, before, time_after, step_before,
                          None if replan else _step(after, parallel), replan, total,
                          tuple(members), count))
        _release(system, after)
        del result, after
        gc.collect(0)
    return out

