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
from ..ir.degrade import Degraded, _select, degrade_mask, holders_of, mask
from ..ir.masked import isolate
from ..ir.groups import select_group
from ..ir.hosts import HostnameError, hosts as host_list
from ..ir.system import System, device_indices
from .strategy import step

#: Device kinds that are failure domains on their own.
DEVICE_DOMAINS = ("gpu", "nic", "dpu", "pcie_switch", "switch", "net_switch")


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


@gc_paused()
def classes(system: System) -> dict[tuple[str, tuple], list[str]]:
    """Every failure domain, by class: (what, signature) -> the members' ids. Alike domains
    share the signature: a device's kind, model, distance from the NICs and lanes; a host's,
    NVSwitch tray's or rack's set of device kinds and models. Classes in the order of their
    first member: the devices in declaration order, then the hosts by id, then the other
    instances in the order their first devices come. One pass over the devices and numpy
    over the link ends (no ``Link`` object), so an 8,192-rack cluster's millions of domains
    are found in seconds."""
    import numpy as np

    devices = system.devices
    codes: dict[int, int] = {}
    models: list = []
    code = np.empty(len(devices), dtype=np.int64)
    direct: dict[str, set[int]] = {}        # instance -> the models of its own devices
    first: dict[str, int] = {}
    for i, d in enumerate(devices):
        c = codes.get(id(d.model))
        if c is None:
            c = codes[id(d.model)] = len(models)
            models.append(d.model)
        code[i] = c
        parent = d.id.rpartition(".")[0]
        if "." in parent:
            found = direct.get(parent)
            if found is None:
                found = direct[parent] = set()
                first[parent] = i
            found.add(c)
    out: dict[tuple[str, tuple], list[str]] = {}
    _device_classes(system, code, models, out)
    # every instance's models: its own devices' and its sub-instances'
    inside: dict[str, set[int]] = {}
    start: dict[str, int] = {}              # instance -> its first device's index
    for inst, own in direct.items():
        at = inst
        while "." in at:
            found = inside.get(at)
            if found is None:
                found = inside[at] = set()
                start[at] = first[inst]
            else:
                start[at] = min(start[at], first[inst])
            found |= own
            at = at.rpartition(".")[0]
    labels = [f"{m.kind}:{m.name}" for m in models]
    shapes: dict[frozenset, tuple[str, ...]] = {}

    def shape(found: set[int]) -> tuple[str, ...]:
        key = frozenset(found)
        if key not in shapes:
            shapes[key] = tuple(sorted({labels[c] for c in key}))
        return shapes[key]

    hosts = _host_shapes(system, inside, shape, code)
    for h in sorted(hosts):
        out.setdefault(("host", ("host", hosts[h])), []).append(h)
    held: dict[str, int] = defaultdict(int)     # instance -> hosts inside it
    for h in hosts:
        for inst in holders_of(h):
            held[inst] += 1
    for inst in sorted(inside, key=lambda x: (start[x], x.count("."))):
        if inst in hosts:
            continue
        found = shape(inside[inst])
        if all(label.startswith("switch:") for label in found):
            out.setdefault(("nvswitch tray", ("tray", found)), []).append(inst)
        elif held[inst] > 1:
            out.setdefault(("rack", ("rack", found)), []).append(inst)
    return out


def _device_classes(system: System, code, models, out: dict) -> None:
    """The devices that are failure domains on their own, by (kind, model, level, lanes), in
    ``out`` in the order of each class's first device (``classes``)."""
    import numpy as np

    from ..ir.summary import level_array

    devices = system.devices
    wanted = np.array([m.kind in DEVICE_DOMAINS for m in models], dtype=np.bool_)
    at = np.flatnonzero(wanted[code]) if len(code) else np.zeros(0, dtype=np.int64)
    e = system.ends
    src, dst, lanes = e.arrays(None, ("src", "dst", "lanes"))
    degree = np.bincount(src, weights=lanes, minlength=len(devices)) + \
        np.bincount(dst, weights=lanes, minlength=len(devices))
    level = level_array(system)
    rows = np.stack((code[at], level[at], degree[at].astype(np.int64)), axis=1)
    _, where, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(where, kind="stable")
    members = at[np.argsort(inverse, kind="stable")]
    bounds = np.concatenate(([0], np.cumsum(np.bincount(inverse, minlength=len(where)))))
    for k in order.tolist():
        first = int(at[where[k]])
        model = models[int(code[first])]
        lv = int(level[first])
        sig = (model.kind, model.name, None if lv < 0 else lv, int(degree[first]))
        out[(model.kind, sig)] = [devices[i].id for i in
                                  members[bounds[k]:bounds[k + 1]].tolist()]


def _host_shapes(system: System, inside: dict[str, set[int]], shape, code) -> dict:
    """Each host's id -> its devices' kinds and models (a sorted tuple): a declared host is an
    instance (or a device) and holds the devices its id prefixes; inferred hosts are read
    from ``ir.hosts``."""
    if system.hosts:
        out = {}
        for h in system.hosts:
            found = set(inside.get(h.id, ()))
            try:
                found.add(int(code[device_indices(system)[h.id]]))
            except KeyError:
                pass
            out[h.id] = shape(found)
        return out
    try:
        listed = {h.id: h.devices for h in host_list(system)}
    except HostnameError:
        return {}
    index = device_indices(system)
    return {h: shape({int(code[index[i]]) for i in ids}) for h, ids in listed.items()}


def domains(system: System) -> list[tuple[str, str, tuple]]:
    """Every failure domain as (what, id, signature): alike domains share the signature."""
    return [(what, ident, sig) for (what, sig), ids in classes(system).items()
            for ident in ids]


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
    m = mask(system, _select(system, example, "--fail"))
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


def _blast(system: System, parallel: str | None, size: int, gc) -> list[Domain]:
    """``blast``'s classes, unranked."""
    found = classes(system)
    before, _ = _reference(system, size)
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
        gone = defaultdict(float)
        for link in result.lost:
            gone[link.type.cls] += link.type.bandwidth * link.lanes * (2 if link.duplex else 1)
        replan = parallel is not None and lost > 0
        out.append(Domain(what, example, len(members), lost, tuple(sorted(gone.items())),
                          connected, before, time_after, step_before,
                          None if replan else _step(after, parallel), replan, total,
                          tuple(members)))
        del result, after
        gc.collect(0)
    return out

