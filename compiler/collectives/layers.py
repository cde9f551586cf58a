"""Least-cost paths between two NICs of a layered fabric, without a search of the fabric
around them: what the router (``paths.Router``) asks of the scale-out network.

A fabric is *layered* when every scale-out link joins two devices one level apart, a device's
level being its distance from the NICs (``summary.level_array``: NICs 0, leaves 1, spines 2,
...): fat trees, rail-optimised planes and their multi-tier forms are. On such a fabric every
path between two NICs has an even number of hops, and one of 2L hops that climbs to level L
climbs all the way and comes all the way down (L hops up and L down leave no hop to spare).
So the least-cost path between NICs ``a`` and ``b`` is found from their *up-cones*, the devices
each reaches by climbing only, grown a level at a time with the least cost to each
(``_climb``) until the cones share a device at some level L: the cheapest sum over the shared
devices is the cheapest path of 2L hops. It is the least-cost path outright when

- no path of fewer hops exists: ``a`` and ``b`` are not joined by the links below level L
  (one union-find over those links, once per system and L: ``_below``), and
- no path of more hops is cheaper: each of those has at least 2L + 2 hops, each at least the
  cheapest hop's cost, and the found path costs less than that.

Otherwise (or on a fabric that is not layered) the router searches as before. Every hop cost
is the router's own (its weights and tie-breaking salts), so the path is the one its
bidirectional Dijkstra finds (the least-cost path: the salts make it unique). On a four-tier
NVL72 fabric the two cones of NICs in different super-pods hold about 5,000 devices each,
climbing from 18 spines; the search around them relaxed the 32 leaves and 32 aggregation
switches of every spine it met, then those leaves' NICs, ten times as many hops.
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir.locality import link_components
from ..ir.summary import level_array
from ..ir.system import SCALEOUT_CLASSES, System, device_indices


def layered(system: System):
    """The scale-out level of every device (a numpy array by device index, -1 off the
    fabric) when every scale-out link joins two devices on the fabric one level apart, else
    None; once per system."""
    key = "layers.levels"
    if key not in system.memo:
        import numpy as np

        from ..ir.incidence import arrays_in

        level = level_array(system)
        a, b, _ = arrays_in(system, SCALEOUT_CLASSES)
        la, lb = level[a], level[b]
        ok = bool(len(a)) and bool(np.all((la >= 0) & (lb >= 0) & (np.abs(la - lb) == 1)))
        system.memo[key] = level if ok else None
    return system.memo[key]


def _below(system: System, cap: int):
    """Each device's component over the scale-out links whose ends are both at level
    ``cap`` or below (labels by device index); once per system and level."""
    key = ("layers.below", cap)
    found = system.memo.get(key)
    if found is None:
        import numpy as np

        from ..ir.incidence import arrays_in

        level = layered(system)
        a, b, _ = arrays_in(system, SCALEOUT_CLASSES)
        keep = np.maximum(level[a], level[b]) <= cap
        found = system.memo[key] = link_components(len(system.devices), a[keep], b[keep])
    return found


class Cones:
    """Up-cone growth on one system's layered fabric: each device's neighbours one level up,
    found once (the upper tiers are shared by every pair of NICs)."""

    def __init__(self, system: System, graph, level):
        self.system, self.graph = system, graph
        self.level = level.tolist()      # read per neighbour: a list, not numpy scalars
        self.index = device_indices(system)
        self._up: dict[str, list] = {}

    def up(self, u: str) -> list:
        """(neighbour, edges) of ``u`` one level above it."""
        found = self._up.get(u)
        if found is None:
            index, level = self.index, self.level
            above = level[index[u]] + 1
            found = self._up[u] = [(v, edges) for v, edges in self.graph[u].items()
                                   if level[index[v]] == above]
        return found

    def path(self, src: str, dst: str, weight: Callable, cheapest_hop: float) \
            -> list[str] | None:
        """The nodes of the least-cost path from NIC ``src`` to NIC ``dst`` (module
        docstring), or None when the cones cannot prove it (the caller searches)."""
        index, level = self.index, self.level
        i, j = index.get(src), index.get(dst)
        if i is None or j is None or level[i] != 0 or level[j] != 0 or src == dst:
            return None
        ahead = ({src: 0.0}, {src: None}, [src])
        behind = ({dst: 0.0}, {dst: None}, [dst])
        height = 0
        while ahead[2] and behind[2]:
            height += 1
            self._climb(ahead, weight, forward=True)
            self._climb(behind, weight, forward=False)
            best = None
            for m in ahead[2]:             # the first of the cheapest shared devices
                other = behind[0].get(m)
                if other is not None and (best is None or ahead[0][m] + other < best[0]):
                    best = (ahead[0][m] + other, m)
            if best is not None:
                total, m = best
                if total >= cheapest_hop * (2 * height + 2):
                    return None          # a longer path could be cheaper: search
                if height > 1 and _below(self.system, height - 1)[i] == \
                        _below(self.system, height - 1)[j]:
                    return None          # a path under this level joins them: search
                return _chain(ahead[1], m)[::-1] + _chain(behind[1], m)[1:]
        return None

    def _climb(self, cone: tuple, weight: Callable, forward: bool) -> None:
        """One more level of ``cone`` (costs, predecessors, frontier): every device one level
        above the frontier, with its least cost over the frontier (the first frontier device
        among equals)."""
        costs, preds, frontier = cone
        reached: dict[str, float] = {}
        for u in frontier:
            base = costs[u]
            for v, edges in self.up(u):
                w = weight(u, v, edges) if forward else weight(v, u, edges)
                if w is None:
                    continue
                c = base + w
                old = reached.get(v)
                if old is None or c < old:
                    reached[v] = c
                    preds[v] = u
        costs.update(reached)
        cone[2][:] = list(reached)


def _chain(preds: dict, node: str) -> list[str]:
    """``node`` and its predecessors back to the cone's NIC."""
    out = []
    while node is not None:
        out.append(node)
        node = preds[node]
    return out
