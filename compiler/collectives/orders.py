"""The orders NCCL runs a group in: islands, rings per channel, trees per channel.

Both the schedule stage (which materialises steps from them) and the cost model (which loads
links with them) read these, so what is routed is what is costed. Positions are sorted by
locality (island, socket, PCIe switch, rank, with numbers in ids compared as numbers) so that an
island's members stay together.

Across islands NCCL's rings go NET -> GPUs -> NET and its trees link islands at one head GPU
per channel. Here channel ``c`` of a ring enters every island at a local index and leaves at the
neighbouring one, alternating direction from island to island so that the GPU that leaves and the
GPU that enters the next island share a local index, hence a rail. With an odd island count the
wrap-around cannot also align; the cost model carries that one crossing over PXN (NVLink to the
GPU on the right rail, then its NIC), as NCCL does. When NICs are gone (some GPUs reach theirs
only through a CPU) the channels' entries are picked so that the crossings spread evenly over
the NICs that are left, as NCCL's ring search does (``_entries``). Trees: channel ``c`` heads
every island at local index ``c * size / channels``, so channels spread over the islands' GPUs
and NICs.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import algorithms as alg
from .paths import nic_through_cpu
from ..ir.degrade import FAULT_RANKS
from ..ir.incidence import arrays_in
from ..ir.system import System

#: NCCL searches at most MAXCHANNELS/2 = 16 channels for a ring or tree graph (graph/search.cc).
MAX_GRAPH_CHANNELS = 16
#: Channels NCCL opens per NIC across nodes: its graph search settles on two channels of half a
#: NIC's bandwidth each (docs/cost.md: 16 channels on 8-NIC DGX nodes, 8 on 4-NIC nodes).
CHANNELS_PER_NIC = 2
#: Hamiltonian cycles of an NVLink mesh looked at when choosing its rings (DGX-1's 8-GPU hybrid
#: cube mesh has a few dozen; the bound keeps a 16-GPU mesh's search short).
MESH_CYCLES = 2048
#: Largest island searched as a mesh: NCCL's own graph search is exhaustive only this far.
MESH_GPUS = 16


#: From this many ranks a group is sorted and split by island in numpy (``_by_locality``).
NUMPY_GROUP = 2048


def _by_locality(loc, ranks: Sequence[int]) -> list[int]:
    """The group's positions sorted by ``Locality.key``: through the integer keys made once
    for every rank when the group is large (a world all-reduce, a data-parallel group of a
    large cluster; in numpy when the keys fit 64 bits, ``_key_array``), else rank by rank (a
    tensor-parallel group of 8 on a large cluster asks for 8 keys only). Every key ends in the
    rank, so no two tie and every way sorts alike."""
    if len(ranks) < NUMPY_GROUP and len(ranks) * 4 < len(loc.island):
        return sorted(range(len(ranks)), key=lambda p: loc.key(ranks[p]))
    array = _key_array(loc)
    if array is not None:
        import numpy as np

        return np.argsort(array[np.asarray(ranks, dtype=np.int64)], kind="stable").tolist()
    keys = loc.order_keys
    return sorted(range(len(ranks)), key=lambda p: keys[ranks[p]])


def _key_array(loc):
    """``Locality.order_keys`` as an int64 numpy array, or None when a key needs more than 63
    bits; once per system."""
    if "orders.key_array" not in loc.memo:
        import numpy as np

        keys = loc.order_keys
        loc.memo["orders.key_array"] = np.asarray(keys, dtype=np.int64) \
            if keys and max(keys) < 2**63 else None
    return loc.memo["orders.key_array"]


def islands(system: System, ranks: Sequence[int]) -> list[list[int]]:
    """Group positions by island (node or NVLink rack), each sorted by locality, islands in
    order of their first rank."""
    return [list(part) for part in island_parts(system, ranks)]


def island_parts(system: System, ranks: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """``islands`` as the cached tuples themselves (callers must not change them): what a
    caller that only reads them asks for, so a group of a quarter of the world is not copied
    at every call. A large group's tuple of ranks is also found by identity, not hashed
    again (the plan search asks about the same tuple for every algorithm it weighs)."""
    loc = system.locality
    large = isinstance(ranks, tuple) and len(ranks) >= NUMPY_GROUP
    if large:
        same = loc.memo.setdefault("orders.islands_by_id", {}).get(id(ranks))
        if same is not None and same[0] is ranks:
            return same[1]
    cache = loc.memo.setdefault("orders.islands", {})
    key = tuple(ranks)
    found = cache.get(key)
    if found is None:          # sorting by locality is the costly part: once per group
        positions = _by_locality(loc, ranks)
        if len(ranks) >= NUMPY_GROUP:
            found = cache[key] = _split(loc, ranks, positions)
        else:
            out: dict[int, list[int]] = {}
            for p in positions:
                out.setdefault(loc.island[ranks[p]], []).append(p)
            found = cache[key] = tuple(tuple(part) for part in out.values())
    if large:
        # the entry holds the tuple, so its id cannot name another object while it is kept
        loc.memo["orders.islands_by_id"][id(ranks)] = (ranks, found)
    return found


def first_island_ranks(system: System, ranks: Sequence[int]) -> list[int]:
    """The ranks of the group's first island (``islands_ranks(...)[0]`` without the rest)."""
    return [ranks[p] for p in island_parts(system, ranks)[0]]


def island_count(system: System, ranks: Sequence[int]) -> int:
    """How many islands the group spans (``len(islands(...))`` without the copy)."""
    return len(island_parts(system, ranks))


def _split(loc, ranks: Sequence[int], positions: list[int]) -> tuple[tuple[int, ...], ...]:
    """``positions`` (sorted by locality) split by island in numpy, islands in order of their
    first position there, each part in that order: the dictionary pass of ``islands``."""
    import numpy as np

    if "orders.island_array" not in loc.memo:
        loc.memo["orders.island_array"] = np.asarray(loc.island, dtype=np.int64)
    pos = np.asarray(positions, dtype=np.int64)
    isl = loc.memo["orders.island_array"][np.asarray(ranks, dtype=np.int64)[pos]]
    _, first, inverse = np.unique(isl, return_index=True, return_inverse=True)
    place = np.empty(len(first), dtype=np.int64)
    place[np.argsort(first, kind="stable")] = np.arange(len(first))
    part = place[inverse.reshape(-1)]
    grouped = pos[np.argsort(part, kind="stable")].tolist()
    bounds = np.cumsum(np.bincount(part, minlength=len(first))).tolist()
    out, start = [], 0
    for end in bounds:
        out.append(tuple(grouped[start:end]))
        start = end
    return tuple(out)


def islands_ranks(system: System, ranks: Sequence[int]) -> list[list[int]]:
    """The group's ranks (not positions) per island, as ``islands`` orders them."""
    return [[ranks[p] for p in part] for part in island_parts(system, ranks)]


def nvlink_domains(system: System, ranks: Sequence[int]) -> list[tuple[int, ...]]:
    """Positions per NVLink domain, each in locality order."""
    loc = system.locality
    out: dict[object, list[int]] = {}
    for p in _by_locality(loc, ranks):
        out.setdefault(loc.domain_root[ranks[p]] or ("island", loc.island[ranks[p]]), []).append(p)
    return [tuple(v) for v in out.values()]


def net_channels(system: System, ranks: Sequence[int]) -> int:
    """Channels NCCL opens across islands: two per NIC of the first rank's island, 2 to
    16 (that island's ranks read from ``island_parts``, not found among all the ranks)."""
    loc = system.locality
    first = loc.island[ranks[0]]
    part = next(p for p in island_parts(system, ranks) if loc.island[ranks[p[0]]] == first)
    nics = {loc.nic(ranks[p]) for p in part} - {""}
    return max(2, min(MAX_GRAPH_CHANNELS, CHANNELS_PER_NIC * len(nics)))


def ring_orders(system: System, ranks: Sequence[int], channels: int) -> list[tuple[int, ...]]:
    """One ring per channel. Inside an island the ring follows locality (switch pairs, then
    sockets, so a two-socket box crosses the socket link twice, the minimum), or, where the
    island's GPUs are an NVLink mesh without switches (DGX-1), one of the mesh's Hamiltonian
    cycles per channel (``mesh_cycles``); across islands the crossings keep their rail (module
    docstring). Channel ``c`` starts at local index ``c * size / channels`` so that channels
    spread over the NICs."""
    parts = islands(system, ranks)
    entries = _entries(system, ranks, parts, channels)
    cycles = mesh_cycles(system, ranks, parts[0], channels)
    rings = []
    for c in range(channels):
        order: list[int] = []
        for k, part in enumerate(parts):
            size = len(part)
            if cycles and size == len(parts[0]):   # identical islands take the same cycle
                part = [part[i] for i in cycles[c]]
            at = entries[c] if size == len(parts[0]) else (
                c * size // channels if channels <= size else c)
            if len(parts) == 1:
                order += [part[(at + i) % size] for i in range(size)]
            elif k % 2 == 0:
                order += [part[(at - i) % size] for i in range(size)]
            else:
                order += [part[(at + 1 + i) % size] for i in range(size)]
        rings.append(tuple(order))
    return rings


def _mesh_edges(system: System, members: Sequence[int]) -> dict[tuple[int, int], float] | None:
    """Bandwidth (GB/s one way) of the direct NVLinks between the island's GPUs, by pair of
    local indices; None when the GPUs reach each other through NVLink switches (every pair
    is then one hop, and locality order is as good a ring as any) or share no domain."""
    loc = system.locality
    roots = {loc.domain_root[r] for r in members}
    if len(roots) != 1 or None in roots or loc.domain_switches.get(next(iter(roots))):
        return None
    local = {int(loc.gpu_index[r]): i for i, r in enumerate(members)}
    src, dst, bw = arrays_in(system, ("nvlink",))
    edges: dict[tuple[int, int], float] = {}
    for a, b, w in zip(src.tolist(), dst.tolist(), bw.tolist()):
        i, j = local.get(a), local.get(b)
        if i is not None and j is not None and i != j:
            key = (min(i, j), max(i, j))
            edges[key] = edges.get(key, 0.0) + w
    return edges


def mesh_lanes(system: System, ranks: Sequence[int]) -> int:
    """Rings NCCL runs inside an island that is an NVLink mesh without switches: one per
    NVLink of a GPU (its graph search found 6 rings on a 4-GPU V100 mesh of 6 links per GPU,
    NVIDIA/nccl#713; 4 on DGX-1 with P100's 4 links, NVIDIA/nccl#299); 2 anywhere else."""
    parts = islands(system, ranks)
    part = [ranks[p] for p in parts[0]]
    if len(parts[0]) < 3 or len(parts[0]) > MESH_GPUS or _mesh_edges(system, part) is None:
        return 2
    first = system.gpus[part[0]].id
    return max(2, sum(link.lanes for link in system.links_of(first) if link.cls == "nvlink"))


def mesh_cycles(system: System, ranks: Sequence[int], part: Sequence[int],
                channels: int) -> list[tuple[int, ...]] | None:
    """Per channel, the island's local indices in the order of a directed Hamiltonian cycle
    over direct NVLinks, chosen one channel at a time so that the busiest link, relative to
    its bandwidth, is as little loaded as it can be (NCCL's ring search keeps adding rings
    while links have bandwidth left: graph/search.cc). None when the island is not such a
    mesh, is complete (every pair linked: locality order already runs on NVLink), or has no
    NVLink cycle through every GPU."""
    n = len(part)
    if n < 3 or n > MESH_GPUS:
        return None
    members = [ranks[p] for p in part]
    cache = system.locality.memo.setdefault("orders.mesh", {})
    key = (tuple(members), channels)
    if key in cache:
        return cache[key]
    edges = _mesh_edges(system, members)
    found = None
    if edges is not None and len(edges) < n * (n - 1) // 2:
        cycles = _hamiltonian(n, edges)
        if cycles:
            found = _spread(cycles, edges, channels)
    cache[key] = found
    return found


def _hamiltonian(n: int, edges: dict[tuple[int, int], float]) -> list[tuple[int, ...]]:
    """Hamiltonian cycles from local index 0 (each undirected cycle once), depth first in
    index order, at most MESH_CYCLES."""
    adj = [sorted(j for j in range(n) if (min(i, j), max(i, j)) in edges) for i in range(n)]
    out: list[tuple[int, ...]] = []
    path, seen = [0], [False] * n
    seen[0] = True

    def walk() -> None:
        if len(out) >= MESH_CYCLES:
            return
        if len(path) == n:
            if 0 in adj[path[-1]] and path[1] < path[-1]:     # one direction per cycle
                out.append(tuple(path))
            return
        for j in adj[path[-1]]:
            if not seen[j]:
                seen[j] = True
                path.append(j)
                walk()
                path.pop()
                seen[j] = False
    walk()
    return out


def _spread(cycles: list[tuple[int, ...]], edges: dict[tuple[int, int], float],
            channels: int) -> list[tuple[int, ...]]:
    """``channels`` directed cycles, each the one that leaves the busiest directed link least
    loaded per GB/s (then the least total, then the first), both directions of every cycle."""
    load: dict[tuple[int, int], float] = {}
    options = [c for cycle in cycles for c in (cycle, (cycle[0],) + cycle[:0:-1])]
    chosen = []
    for _ in range(channels):
        def cost(cycle: tuple[int, ...]) -> tuple[float, float]:
            hops = list(zip(cycle, cycle[1:] + cycle[:1]))
            worst = max((load.get(h, 0.0) + 1) / edges[(min(h), max(h))] for h in hops)
            return worst, sum((load.get(h, 0.0) + 1) / edges[(min(h), max(h))] for h in hops)
        best = min(options, key=cost)
        for h in zip(best, best[1:] + best[:1]):
            load[h] = load.get(h, 0.0) + 1
        chosen.append(best)
    return chosen


def _entries(system: System, ranks: Sequence[int], parts: list[list[int]],
             channels: int) -> list[int]:
    """Each channel's local index ``at`` (its crossings leave from ``at`` and ``at + 1``):
    ``c * size / channels``; but when some GPUs of the first island reach their NIC only
    through a CPU and others have one under their own PCIe switch (a NIC failed or excluded),
    the indices that spread the crossings' NICs evenly, as NCCL's ring search spreads its
    channels over the NICs that are left (docs/failures.md, Validation)."""
    size = len(parts[0])
    default = [c * size // channels if channels <= size else c for c in range(channels)]
    if len(parts) < 2 or size < 2:
        return default
    first = [ranks[p] for p in parts[0]]
    far = [nic_through_cpu(system, r) for r in first]
    if all(far) or not any(far):
        return default
    nic = [system.locality.nic(r) for r in first]
    # per direction: the first island sends from ``at + 1`` and receives at ``at`` (the next
    # island the other way round), so a NIC's load one way counts one of the two
    sends: dict[str, int] = {}
    receives: dict[str, int] = {}
    out = []
    for want in default:
        def key(at: int) -> tuple[int, int, int]:
            up, down = nic[(at + 1) % size], nic[at]
            worst = max(sends.get(up, 0) + 1, receives.get(down, 0) + 1)
            return (worst, far[at] + far[(at + 1) % size], abs(at - want % size))
        at = min(range(size), key=key)
        up, down = nic[(at + 1) % size], nic[at]
        sends[up] = sends.get(up, 0) + 1
        receives[down] = receives.get(down, 0) + 1
        out.append(at)
    return out


def tree_parents(system: System, ranks: Sequence[int], root: int = 0,
                 channels: int = 1) -> list[tuple[int, ...]]:
    """NCCL's double binary tree over islands with a chain inside each island, two trees per
    channel. Channel ``c`` heads each island at local index ``c * size / channels``, so the
    inter-island edges of different channels leave from different GPUs and NICs. ``root``
    leads the first island of channel 0 when a rooted tree is asked for."""
    parts = islands(system, ranks)
    for i, part in enumerate(parts):
        if root in part:
            parts.insert(0, parts.pop(i))
            break
    pairs = alg.double_btree(len(parts))
    trees = []
    for c in range(channels):
        heads = []
        for i, part in enumerate(parts):
            size = len(part)
            at = part.index(root) if (c == 0 and i == 0 and root in part) else \
                (c * size // channels) % size
            heads.append(part[at:] + part[:at])
        for island_parent in pairs:
            parent = [-1] * len(ranks)
            for i, chain in enumerate(heads):
                for a, b in zip(chain, chain[1:]):
                    parent[b] = a                       # chain inside the island
                if island_parent[i] >= 0:
                    parent[chain[0]] = heads[island_parent[i]][0]
            trees.append(tuple(parent))
    return trees


def sample_islands(system: System, ranks: Sequence[int], keep: int) -> tuple[int, ...]:
    """The group's ranks in its first ``keep`` islands (all if fewer), keeping the parity of the
    island count: an odd group is sampled on an odd number of islands, so the one crossing that
    cannot keep its rail is sampled too."""
    parts = island_parts(system, ranks)
    if len(parts) <= keep:
        return tuple(ranks)
    if len(parts) % 2 != keep % 2:
        keep -= 1
    picked = list(range(keep))
    touched = system.memo.get("faults")
    if touched:
        # a degraded system is not alike everywhere: the islands next to a fault replace the
        # last ones of the sample (as many as fit, the count and so its parity kept), so the
        # cost sees the NIC that is gone or the cable that is slow
        hit = _touched_parts(system, ranks, parts, touched, keep)
        hit = hit[:max(1, keep // 2)]
        picked = picked[:keep - len(hit)] + hit
    chosen = sorted(p for i in picked for p in parts[i])
    return tuple(ranks[p] for p in chosen)



def _touched_parts(system: System, ranks: Sequence[int], parts: list[list[int]],
                   touched: frozenset[str], keep: int) -> list[int]:
    """The indices (``keep`` and on) of the parts with a GPU that an instance of ``touched``
    holds: a GPU whose id some ``touched`` id prefixes, up to a dot (``holders_of``), one
    C-level prefix test per GPU of the group."""
    flags = system.memo.get(FAULT_RANKS)    # the same test in numpy (degrade.fault_ranks)
    if flags is not None:
        import numpy as np

        hit = set(np.flatnonzero(flags[np.asarray(ranks, dtype=np.int64)]).tolist())
    else:
        ids = system.memo.get("gpu_ids") or [g.id for g in system.gpus]  # algos.gpu_ids'
        prefixes = tuple(t + "." for t in touched)
        hit = {p for p, r in enumerate(ranks) if ids[r].startswith(prefixes)}
    if not hit:
        return []
    return [i for i, part in enumerate(parts) if i >= keep and not hit.isdisjoint(part)]
