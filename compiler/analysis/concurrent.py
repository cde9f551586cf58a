"""The groups of one traffic line run at the same time: a line's cost with the links its
groups share (``shared_cost``).

Every group of a line (each data-parallel replica's all-reduce, each tensor-parallel group's)
runs in the same phase of the step. A group costed alone has every link it crosses to itself;
where two groups cross one link (after a leaf failure, group dp:0 reaches the network over
NVLink and another GPU's NIC, PXN, a NIC that group dp:k drives at the same moment) they share
it. The representative group of a kind is costed with the loads of the line's groups that run
next to it: every group with a GPU in the islands the cost model samples for it (its orders'
first islands, and on a degraded system those next to a fault), each laid out as NCCL would
lay it out (its rings, trees or NVLS over the same sampled islands, ``cost.group_loads``). A
resource both load is shared in proportion to their bytes (``loads.crowding``): each group's
bytes there take as long as the resource needs to drain all of them. The line costs the
slowest of those groups.

When no two of those groups load one resource (a healthy rail-optimised fabric: each replica
on its own rail, each GPU its own NVLinks) the representative's cost is returned unchanged,
exactly. The work per line is a constant number of groups (those with a GPU in a few
islands), whatever the system's size. Only a degraded system's groups are costed so: on a
healthy one every candidate of a plan would pay for it (6x slower at 8,192 NVL72 racks), and
the representative alone is returned (docs/failures.md). NCCL chooses each group's algorithm alone (it knows
nothing of other communicators); the sharing changes the time, not the choice.
"""

from __future__ import annotations

from collections import defaultdict

import attrs

from ..collectives.algos.base import SAMPLE_ISLANDS
from ..collectives.cost import Cost, CostError
from ..collectives.coster import coster
from ..collectives.orders import sample_islands
from ..ir.groups import RankGroup, group_translates
from ..ir.system import ParallelStrategy, System


def neighbours(system: System, p: ParallelStrategy, dim: str, g: RankGroup,
               where: tuple[int, ...] | None = None) -> list[RankGroup]:
    """The groups of ``dim`` with a GPU in the islands the cost model samples for ``g`` (``g``
    first), ranks on the system's GPUs (``where``: the GPU of each strategy rank)."""
    loc = system.locality
    islands = sorted({loc.island[r] for r in sample_islands(system, g.ranks, SAMPLE_ISLANDS)})
    back = None if where is None else {gpu: r for r, gpu in enumerate(where)}
    first, offsets = group_translates(p, dim)
    index = _index(p, dim, first, offsets)
    found: dict[int, RankGroup] = {}
    for island in islands:
        for gpu in loc.island_ranks[island]:
            r = gpu if back is None else back.get(gpu)
            if r is None or r >= p.world:
                continue
            number, base = index(r)
            if number not in found:
                ranks = tuple(base + o for o in offsets)
                if where is not None:
                    ranks = tuple(where[x] for x in ranks)
                found[number] = RankGroup(f"{dim}:{number}", ranks)
    return [g] + [h for _, h in sorted(found.items()) if h.ranks != g.ranks]


def _index(p: ParallelStrategy, dim: str, first, offsets):
    """rank -> (its group's number in ``rank_groups`` order, that group's first rank), by
    arithmetic on the mixed radix over ``p.order`` (``ir.groups``): a group of ``dim`` is a
    block's ranks at one offset below the dimension's stride; a ``dpcp`` group the ranks that
    differ only in their dp and cp digits, numbered by its first rank among ``first``."""
    import numpy as np

    if dim != "dpcp":
        stride = offsets[1] if len(offsets) > 1 else 1
        block = stride * len(offsets)

        def at(r: int) -> tuple[int, int]:
            return (r // block) * stride + r % stride, (r // block) * block + r % stride
        return at
    sizes = {**dict(p.sizes), "ep": 1}
    radix, step = {}, 1
    for d in p.order:
        if sizes.get(d, 1) > 1:
            radix[d] = step
            step *= sizes[d]

    def joint(r: int) -> tuple[int, int]:
        base = r - sum((r // radix[d]) % sizes[d] * radix[d] for d in ("dp", "cp")
                       if d in radix)
        return int(np.searchsorted(first, base)), base
    return joint


def shared_cost(system: System, p: ParallelStrategy, f, g: RankGroup, alone: Cost,
                size_of, cost_alone, where: tuple[int, ...] | None,
                loads_of) -> tuple[Cost, int, tuple[int, ...]]:
    """``g``'s line cost with the groups that run next to it (module docstring): the slowest
    of them with their shared loads, how many other groups share a link with it (0: the
    representative's cost ``alone`` unchanged) and its ranks. ``size_of(h)``: a group's
    bytes per call; ``cost_alone(h)``: its cost alone, ``loads_of(h, algorithm)``: its loads
    (``cost.group_loads``), both from the caller's cache."""
    if not system.memo.get("faults"):
        # a healthy system's groups are costed alone, as before: counting the neighbours on
        # every candidate made plan on 8,192 NVL72 racks 6x slower (246 s CPU, 8.3 GB), each
        # of a rack's dp groups routed over thousands of ranks; the healthy rows it moved
        # (two GPUs a NIC on p4de, PXN onto a busy rail) are a known limit (docs/failures.md)
        return alone, 0, g.ranks
    near = neighbours(system, p, f.dim, g, where)
    if len(near) < 2:
        return alone, 0, g.ranks
    loads: list[dict[tuple, float]] = []
    sizes = [size_of(h) for h in near]
    alones: dict[int, Cost] = {}
    for i, (h, size) in enumerate(zip(near, sizes)):
        try:
            per = loads_of(h, alone.algorithm)
        except CostError:
            alones[i] = cost_alone(h)
            per = loads_of(h, alones[i].algorithm)
        loads.append({r: b * size for r, b in per.items()})
    total: dict[tuple, float] = defaultdict(float)
    for per in loads:
        for r, b in per.items():
            total[r] += b
    worst, sharing, ranks = None, 0, g.ranks
    for i, (h, per, size) in enumerate(zip(near, loads, sizes)):
        base = alone if h is g else alones.get(i) or cost_alone(h)
        background = {r: (total[r] - b) / size for r, b in per.items() if total[r] > b}
        if background:
            at = coster(system, h, f.collective, base.algorithm, protocol=base.protocol,
                        background=background)(size)
            c = attrs.evolve(base, time=at.time, algbw=at.algbw, busbw=at.busbw,
                             bottleneck=at.bottleneck, bottleneck_link=at.bottleneck_link,
                             latency=at.latency, group=h.name)
        else:
            c = attrs.evolve(base, group=h.name)
        if worst is None or c.time > worst.time:
            worst, ranks = c, h.ranks
            # named only where the sharing slows the group down (a shared link that is not
            # its bottleneck changes nothing)
            sharing = 0 if c.time <= base.time else len(
                {i for i, other in enumerate(loads)
                 if other is not per and not other.keys().isdisjoint(background)})
    return worst, sharing, ranks
