"""Least-cost paths between devices of a system, as NCCL's topology search prefers them.

Paths are least-cost paths in the link graph with costs that encode the preferences NCCL's
topology search has: NVLink and C2C first, then PCIe peer-to-peer through a shared switch,
then staging through host memory (a CPU, and the socket link if the GPUs sit on different
sockets); across islands GPUDirect RDMA through the GPU's nearest NIC and the fabric. Another
GPU is crossed only when nothing else connects (PXN-style forwarding). Ties are broken by a
stable hash of the flow, so equal-cost paths (NVSwitch chips, spines) share the load
deterministically: ECMP that gives the same answer on every run. The cost model's loads and
the route stage both take their paths from here.
"""

from __future__ import annotations

import math
import zlib
from heapq import heappop, heappush
from itertools import count

import networkx as nx

from ..ir.degrade import reach_bound
from ..ir.system import SCALEOUT_CLASSES, System, device_indices

# Cost of one hop per link class; a transit GPU or CPU adds its own penalty on top.
HOP_COST = {"nvlink": 1.0, "nvlink_c2c": 1.0, "pcie": 3.0, "infiniband": 6.0, "ethernet": 6.0,
            "inter_socket": 12.0}
CPU_TRANSIT = 4.0      # staging through host memory
GPU_TRANSIT = 100.0    # forwarding through another GPU's memory
ECMP_BUCKETS = 8


_UNKNOWN = object()


class NoRoute(ValueError):
    """Two devices of a schedule have no path between them."""


class Router:
    """Least-cost paths between devices of one system, cached per (source, target, bucket);
    ``classes`` limits the links a path may use (the scale-out fabric only, say)."""

    def __init__(self, system: System, classes: tuple[str, ...] | None = None):
        self.graph = system.adjacency
        self.classes = classes
        self._system = system
        self._reach = None       # reach_labels, made at the first search that needs it
        self.kind = device_kinds(system)
        self.cache: dict[tuple[str, str, int], tuple[str, ...]] = {}
        # per-link and per-device parts of ``_edge_cost``, made once: a search over a large
        # fabric weighs the same few thousand links millions of times
        self._salt: dict[tuple[str, int], float] = {}
        self._transit: dict[str, float] = {}
        self._weights: dict[int, dict[tuple[str, str], float | None]] = {}
        self._cones = _UNKNOWN   # layers.Cones on a layered fabric (``_layered``), else None
        self._near_hops: dict[tuple[str, int], dict[str, tuple[float, str]]] = {}
        # what the search walks: the neighbours some link of the classes joins (the others
        # weigh None, and a GPU's host search weighed its 18 NVLink switch chips every time)
        self._view = self.graph if classes is None else _ClassView(self.graph, classes)

    def path(self, src: str, dst: str, flow: int = 0) -> tuple[str, ...]:
        """Link ids from ``src`` to ``dst`` ('' path for a device to itself)."""
        if src == dst:
            return ()
        bucket = flow % ECMP_BUCKETS
        key = (src, dst, bucket)
        if key not in self.cache:
            self.cache[key] = self._search(src, dst, bucket)
        return self.cache[key]

    def _edge_cost(self, u: str, v: str, data: dict, ends: tuple[str, str],
                   bucket: int, link_id: str | None = None) -> float | None:
        """One hop's cost over the link ``data`` holds (``link_id``: its id, the key the
        adjacency files it under, passed so that it is not spelled out again)."""
        if self.classes is not None and data["cls"] not in self.classes:
            return None                        # networkx hides an edge whose weight is None
        cost = HOP_COST[data["cls"]]
        for node in (u, v):
            if node not in ends:
                transit = self._transit.get(node)
                if transit is None:
                    kind = self.kind[node]
                    transit = self._transit[node] = \
                        GPU_TRANSIT if kind == "gpu" else CPU_TRANSIT if kind == "cpu" else 0.0
                cost += transit
        # A tie-break far below any real cost difference, stable across runs and platforms.
        key = (data["link"].id if link_id is None else link_id, bucket)
        salt = self._salt.get(key)
        if salt is None:
            salt = self._salt[key] = zlib.crc32(f"{key[0]}|{bucket}".encode()) / 2**32 * 1e-3
        return cost + salt

    def _search(self, src: str, dst: str, bucket: int) -> tuple[str, ...]:
        ends = (src, dst)
        short = self._short(src, dst, bucket)
        if short is not None:
            return short

        index = device_indices(self._system)
        i, j = index.get(src), index.get(dst)
        if i is not None and j is not None:
            if self._reach is None:
                self._reach = reach_bound(self._system, self.classes)
            if self._reach[i] != self._reach[j]:
                raise NoRoute(f"no path from {src} to {dst}")
        known = self._weights.setdefault(bucket, {})
        transit = self._transit

        def weight(u, v, edges):
            w = known.get((u, v), _UNKNOWN)
            if w is not _UNKNOWN:
                return w
            costs = [c for k, d in edges.items()
                     if (c := self._edge_cost(u, v, d, ends, bucket, k)) is not None]
            w = min(costs) if costs else None
            # a hop between devices no path pays to cross (NICs, switches) weighs the same
            # for every pair of ends: kept for the next search
            if not transit.get(u, 1.0) and not transit.get(v, 1.0):
                known[(u, v)] = w
            return w
        nodes = None
        if self._cones is _UNKNOWN:
            self._cones = self._layered()
        if self._cones is not None:
            nodes = self._cones.path(src, dst, weight,
                                     min(HOP_COST[c] for c in self.classes))
        if nodes is None:
            nodes = bidirectional_dijkstra(self._view, src, dst, weight)
        links = []
        for u, v in zip(nodes, nodes[1:]):
            edges = self.graph[u][v]
            best = min((d for d in edges.values()
                        if self._edge_cost(u, v, d, ends, bucket) is not None),
                       key=lambda d: (self._edge_cost(u, v, d, ends, bucket), d["link"].id))
            links.append(best["link"].id)
        return tuple(links)


    def _layered(self):
        """The up-cones of a scale-out router on a layered fabric (``layers``: paths between
        NICs without a search), else None."""
        from .layers import Cones, layered

        if self.classes is None or set(self.classes) != set(SCALEOUT_CLASSES):
            return None
        level = layered(self._system)
        return None if level is None else Cones(self._system, self.graph, level)

    def _short(self, src: str, dst: str, bucket: int) -> tuple[str, ...] | None:
        """The least-cost path when it has one or two hops and costs under 3 (a direct link, or
        two NVLink hops through a switch): every longer path costs at least 3, so this is the
        path Dijkstra finds, at the cost of scanning one neighbourhood. A hop's cheapest link
        is read from each end's table (``_hops``), which pays no transit at either end: the
        ends pay none, and the middle device is never a GPU or CPU here."""
        kind = self.kind
        first, last = self._hops(src, bucket), self._hops(dst, bucket)
        best: tuple[float, tuple[str, ...]] | None = None
        for w, (cost, link) in first.items():
            if w == dst:
                links: tuple[str, ...] = (link,)
            elif w not in last or kind[w] in ("gpu", "cpu"):
                continue
            else:
                c2, l2 = last[w]
                cost, links = cost + c2, (link, l2)
            if cost < 3.0 and (best is None or (cost, links) < best):
                best = (cost, links)
        return best[1] if best else None

    def _hops(self, node: str, bucket: int) -> dict[str, tuple[float, str]]:
        """Each neighbour of ``node`` with the cost and id of the cheapest link to it (costs
        without transit: the least cost and the first id among equals, as ``_edge_cost`` and
        ``_search`` pick), for the neighbours some link of the router's classes joins; per
        (device, bucket): a GPU's 18 NVLink switch chips are weighed once for all its pairs,
        not once per pair."""
        key = (node, bucket)
        found = self._near_hops.get(key)
        if found is None:
            found = self._near_hops[key] = {}
            for w, edges in self.graph[node].items():
                ends = (node, w)
                best = min(((c, k) for k, d in edges.items()
                            if (c := self._edge_cost(node, w, d, ends, bucket, k)) is not None),
                           default=None)
                if best is not None:
                    found[w] = best
        return found


class _ClassView:
    """An adjacency with, per device, only the neighbours that a link of ``classes`` joins
    (each with all its edges, which the router's weight filters as before), made once per
    device: the search pushes exactly what it pushed over the whole adjacency, in the same
    order, and skips the rest without weighing them."""

    __slots__ = ("_graph", "_classes", "_built")

    def __init__(self, graph, classes: tuple[str, ...]):
        self._graph, self._classes, self._built = graph, classes, {}

    def __contains__(self, device_id: object) -> bool:
        return device_id in self._graph

    def __getitem__(self, device_id: str) -> dict:
        found = self._built.get(device_id)
        if found is None:
            classes = self._classes
            found = self._built[device_id] = {
                v: edges for v, edges in self._graph[device_id].items()
                if any(d["cls"] in classes for d in edges.values())}
        return found


class _Kinds:
    """Device id -> kind, read through the system's index map (``device_indices``): a router
    asks for the kinds of the devices it routes through, a few thousand of 1.7 M on a large
    cluster, so no dict of every device is made for it."""

    __slots__ = ("_devices", "_index")

    def __init__(self, system: System):
        self._devices, self._index = system.devices, device_indices(system)

    def __getitem__(self, device_id: str) -> str:
        return self._devices[self._index[device_id]].kind

    def get(self, device_id: str, default=None):
        """The kind, or ``default`` for an id that names no device."""
        i = self._index.get(device_id)
        return default if i is None else self._devices[i].kind


def device_kinds(system: System) -> _Kinds:
    """Device id -> kind, once per system (every router of it shares it)."""
    found = system.memo.get("device_kinds")
    if found is None:
        found = system.memo["device_kinds"] = _Kinds(system)
    return found


def bidirectional_dijkstra(adj, source: str, target: str, weight) -> list[str]:
    """The nodes of a least-cost path from ``source`` to ``target`` over an adjacency
    (``System.adjacency``: device -> neighbour -> link id -> data); ``weight(u, v, edges)``
    gives a hop's cost, None hides it. networkx's ``bidirectional_dijkstra`` step for step
    (the same expansion order, counter tie-breaks and meeting node, so the same path), on the
    adjacency instead of a graph: routing needs no networkx graph. NoRoute when none."""
    if source not in adj:
        raise nx.NodeNotFound(f"Source {source} is not in G")
    if target not in adj:
        raise nx.NodeNotFound(f"Target {target} is not in G")
    if source == target:
        return [source]
    dists: list[dict] = [{}, {}]
    preds: list[dict] = [{source: None}, {target: None}]

    def path(curr, direction):
        ret = []
        while curr is not None:
            ret.append(curr)
            curr = preds[direction][curr]
        return list(reversed(ret)) if direction == 0 else ret
    fringe: list[list] = [[], []]
    seen: list[dict] = [{source: 0}, {target: 0}]
    c = count()
    heappush(fringe[0], (0, next(c), source))
    heappush(fringe[1], (0, next(c), target))
    finaldist = None
    meetnode = None
    direction = 1
    while fringe[0] and fringe[1]:
        direction = 1 - direction
        (dist, _, v) = heappop(fringe[direction])
        if v in dists[direction]:
            continue
        dists[direction][v] = dist
        if v in dists[1 - direction]:
            return path(meetnode, 0) + path(preds[1][meetnode], 1)
        for w, d in adj[v].items():
            cost = weight(v, w, d) if direction == 0 else weight(w, v, d)
            if cost is None:
                continue
            vw_length = dist + cost
            if w in dists[direction]:
                if vw_length < dists[direction][w]:
                    raise ValueError("Contradictory paths found: negative weights?")
            elif w not in seen[direction] or vw_length < seen[direction][w]:
                seen[direction][w] = vw_length
                heappush(fringe[direction], (vw_length, next(c), w))
                preds[direction][w] = v
                if w in seen[1 - direction]:
                    finaldist_w = vw_length + seen[1 - direction][w]
                    if finaldist is None or finaldist > finaldist_w:
                        finaldist, meetnode = finaldist_w, w
    raise NoRoute(f"no path from {source} to {target}")


def nic_through_cpu(system: System, rank: int) -> bool:
    """Whether GPU ``rank`` reaches its own NIC only through a CPU (no NIC under its PCIe
    switches: that NIC failed or is excluded, or the NICs hang off the CPUs): a search over PCIe
    and C2C links that crosses no CPU or GPU; cached per system."""
    memo = system.memo.setdefault("nic_through_cpu", {})
    if rank not in memo:
        nic = system.locality.nic(rank)
        graph, kind = system.adjacency, device_kinds(system)
        seen, frontier, found = {system.gpus[rank].id}, [system.gpus[rank].id], not nic
        while frontier and not found:
            nxt = []
            for u in frontier:
                for v, edges in graph[u].items():
                    if v in seen or not any(d["cls"] in ("pcie", "nvlink_c2c")
                                            for d in edges.values()):
                        continue
                    if v == nic:
                        found = True
                    elif kind[v] not in ("cpu", "gpu"):
                        nxt.append(v)
                    seen.add(v)
            frontier = nxt
        memo[rank] = not found
    return memo[rank]


class RailRouter:
    """Paths as NCCL takes them. Between islands a GPU sends through its own NIC (its rail, as
    NCCL assigns them) to the receiver's own NIC; when the fabric joins no path between those
    two NICs (separate rail planes), PXN: over NVLink to the sender's island GPU whose NIC
    reaches the receiver's (the receiver's mirror among equals), then through that NIC. A GPU
    whose own NIC is reached only through a CPU (its PCIe switch's NIC failed or excluded)
    crosses NVLink to a GPU under that NIC's switch instead, as NCCL's PXN does (paths.cc:
    a NIC farther than PXB from the GPU, an NVLink peer at PXB or closer); the receiving side
    alike, as NCCL's ring search puts a GPU next to the NIC at the ring's entry. All else is
    the least-cost path. The route stage and the cost model's loads both use it, so what is
    costed is what is routed."""

    def __init__(self, system: System):
        self.system = system
        self.any = Router(system)
        self.host = Router(system, ("pcie", "nvlink_c2c", "inter_socket"))
        self.fabric = Router(system, SCALEOUT_CLASSES)
        self.nvlink = Router(system, ("nvlink", "nvlink_c2c"))
        self.kind = self.any.kind
        self._local: dict[tuple[str, str], tuple[str, ...]] = {}   # (GPU, NIC) -> host path
        self.graph = self.any.graph
        self._proxies: dict[tuple[int, str], tuple | None] = {}     # (rank, NIC) -> PXN hop
        self._hops: dict[tuple[str, int], dict[str, int]] = {}
        self._balls: dict[str, list] = {}                             # NIC -> ball (_ball)

    def path(self, src: str, dst: str, flow: int = 0) -> tuple[str, ...]:
        """Link ids from ``src`` to ``dst``; ``flow`` picks among equal-cost fabric paths."""
        loc = self.system.locality
        ranks = loc.rank_of
        if src in ranks and dst in ranks and loc.island[ranks[src]] != loc.island[ranks[dst]]:
            a, b = loc.nic(ranks[src]), loc.nic(ranks[dst])
            if a and b:
                try:
                    return (self._near(src, a) + self.fabric.path(a, b, flow)
                            + self._reverse(self._near(dst, b)))
                except NoRoute:
                    proxy = self._pxn(ranks[src], ranks[dst], b)
                    if proxy is not None:
                        gpu, nic, net = proxy
                        try:
                            return (self.any.path(src, gpu) + self.host.path(gpu, nic) + net
                                    + self.host.path(b, dst))
                        except NoRoute:
                            pass
        return self.any.path(src, dst, flow)

    def _near(self, gpu: str, nic: str) -> tuple[str, ...]:
        """Links from ``gpu`` to its own ``nic``: over PCIe when no CPU is crossed; else (PXN)
        over NVLink to the island GPU nearest ``gpu`` that has ``nic`` under its own PCIe
        switches, then down to it; the host path through the CPU when no such GPU exists."""
        key = (gpu, nic)
        found = self._local.get(key)
        if found is None:
            found = self.host.path(gpu, nic)
            loc, system = self.system.locality, self.system
            rank = loc.rank_of[gpu]
            if nic_through_cpu(system, rank):
                for r in sorted(loc.island_ranks[loc.island[rank]], key=lambda r: abs(r - rank)):
                    if r == rank or loc.nic(r) != nic or nic_through_cpu(system, r):
                        continue
                    peer = system.gpus[r].id
                    try:
                        found = self.nvlink.path(gpu, peer) + self.host.path(peer, nic)
                    except NoRoute:
                        continue
                    break
            self._local[key] = found
        return found

    @staticmethod
    def _reverse(links: tuple[str, ...]) -> tuple[str, ...]:
        return links[::-1]

    def _pxn(self, rank: int, dst: int, nic: str):
        """The (GPU, its NIC, fabric path) of ``rank``'s island whose NIC is fewest fabric hops
        from ``nic``; among equals the GPU at ``dst``'s place in its own island (so proxies
        spread over NICs as receivers do), or None; cached per (rank, NIC)."""
        key = (rank, nic)
        if key not in self._proxies:
            loc, best = self.system.locality, None
            members = loc.island_ranks[loc.island[rank]]
            hops = self._fabric_hops(nic, loc.island[rank], members)
            mirror = loc.island_ranks[loc.island[dst]].index(dst)
            for at, r in enumerate(members):
                own = loc.nic(r)
                if own and own in hops:
                    score = (hops[own], abs(at - mirror), abs(r - rank))
                    if best is None or score < best[0]:
                        best = (score, r, own)
            self._proxies[key] = None if best is None else \
                (self.system.gpus[best[1]].id, best[2], self.fabric.path(best[2], nic))
        return self._proxies[key]

    def _fabric_hops(self, nic: str, island: int, members) -> dict[str, int]:
        """Hops from ``nic`` over scale-out links to the NICs of ``members`` (one island's
        ranks) that it reaches without crossing a GPU or CPU (none listed for the others);
        cached per (NIC, island). Each count is a meeting of two breadth-first balls, one
        around each end, grown level by level from the smaller frontier until they share a
        device (``_balls``: kept per NIC and shared by every question about it), so it costs
        the fabric within half the distance of either end: a NIC's leaf and spines for a
        neighbouring rack, not the rail plane a pass from ``nic`` crossed on a large fabric."""
        key = (nic, island)
        found = self._hops.get(key)
        if found is None:
            loc, index = self.system.locality, device_indices(self.system)
            label = reach_bound(self.system, SCALEOUT_CLASSES)
            mine = label[index[nic]]
            found = {}
            for r in members:
                own = loc.nic(r)
                if own and own not in found and label[index[own]] == mine:
                    hops = self._fabric_distance(own, nic)
                    if hops is not None:
                        found[own] = hops
            self._hops[key] = found
        return found

    def _fabric_distance(self, a: str, b: str) -> int | None:
        """Fewest scale-out hops from ``a`` to ``b`` through no GPU or CPU, None when there
        is no such path. Exact as soon as the two balls meet: every device they share lies
        within both radii, and a shorter path would cross a shared device at a smaller sum."""
        if a == b:
            return 0
        ends = (a, b)
        balls = (self._ball(a), self._ball(b))
        while True:
            small, large = sorted(balls, key=lambda x: len(x[0]))
            best = None
            for m, d in small[0].items():
                other = large[0].get(m)
                if other is not None and (m in ends or self.kind[m] not in ("gpu", "cpu")):
                    best = d + other if best is None or d + other < best else best
            if best is not None:
                return best
            if not balls[0][1] or not balls[1][1]:
                return None         # a whole component walked without meeting the other end
            self._grow(min(balls, key=lambda x: len(x[1])))

    def _ball(self, device: str) -> list:
        """[hops by device, frontier]: a breadth-first ball around ``device`` over scale-out
        links, grown a level at a time by ``_grow`` and kept for the next question."""
        found = self._balls.get(device)
        if found is None:
            found = self._balls[device] = [{device: 0}, [device]]
        return found

    def _grow(self, ball: list) -> None:
        """One more level of ``ball``; a GPU or CPU is reached but never passed through (the
        ball's own centre excepted)."""
        dist, frontier, graph = ball[0], ball[1], self.graph
        nxt = []
        for u in frontier:
            if dist[u] and self.kind[u] in ("gpu", "cpu"):
                continue
            level = dist[u] + 1
            for v, edges in graph[u].items():
                if v not in dist and any(d["cls"] in SCALEOUT_CLASSES for d in edges.values()):
                    dist[v] = level
                    nxt.append(v)
        ball[1] = nxt
