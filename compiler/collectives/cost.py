"""Stage: a collective's predicted time, algbw and busbw on a rank group (``cost``).

time = launch + latency(algorithm, protocol) + bytes / bandwidth, in the manner of NCCL's
tuning model (src/graph/tuning.cc): per-algorithm base latencies plus per-hop hardware
latencies, protocol efficiencies and ceilings, and ``auto`` takes the fastest prediction. The
bandwidth is not a per-system constant: it comes from the schedule's transfers routed over the
link graph (``compiler.loads``), so transfers that share a link bundle share its bandwidth. A
pipelined schedule is limited by its busiest bundle: each phase costs the bytes that bundle
carries over its capacity (for a ring: one round's load times the number of rounds).

algbw = size / time; busbw = algbw times the factor nccl-tests uses (PERFORMANCE.md):
all-reduce 2(n-1)/n; reduce-scatter, all-gather, all-to-all (n-1)/n; broadcast, reduce,
send/recv 1. ``size`` is the whole buffer, as nccl-tests' size column.

Groups spanning more than ``SAMPLE_ISLANDS`` islands are costed on the orders over their first
islands: topology-aware orders repeat the same pattern from island to island, so one round's
busiest bundle is the same; the round and hop counts come from the whole group. This is what
makes a 73,728-rank all-reduce cost seconds rather than 10^10 steps. NCCL's tables live in
``compiler.tuning``; details and the fitted constants: docs/cost.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import attrs

from . import algorithms as alg
from . import orders
from ..base.gcpause import gc_paused
from ..ir.system import COLLECTIVES, System
from .loads import Loads, Resources
from ..ir.groups import RankGroup
from .paths import NoRoute
from .tuning import (BUS_FACTOR, LAUNCH, PROTOCOLS, Profile, arch_index, bus_gbs,  # noqa: F401
                     latency_us)

SAMPLE_ISLANDS = 4
ALLTOALL_MAX_RANKS = 256    # all-to-all loads are counted pair by pair

class CostError(ValueError):
    """A request the cost model cannot answer (too large an all-to-all, no algorithm)."""


@attrs.frozen
class Cost:
    """One predicted collective: sizes in bytes, times in seconds, bandwidths in bytes/s."""

    collective: str
    group: str
    ranks: int
    size: int
    algorithm: str
    protocol: str
    time: float
    algbw: float
    busbw: float
    bottleneck: str          # link class of the busiest bundle
    bottleneck_link: str     # one link of that bundle
    latency: float           # the part of ``time`` that does not depend on the size
    classes: tuple[str, ...] = ()   # link classes the transfers cross


def _sample(system: System, ranks: Sequence[int]) -> tuple[int, ...]:
    """The group's ranks in its first SAMPLE_ISLANDS islands (all of them if fewer), the
    island count's parity kept."""
    return orders.sample_islands(system, ranks, SAMPLE_ISLANDS)


def _ring_loads(res: Resources, system, ranks, collective, n: int) -> tuple[Loads, float]:
    """One round of every channel's ring (bytes per unit size) and the number of rounds."""
    loads = Loads(res)
    gpu = [g.id for g in system.gpus]
    if collective in ("broadcast", "reduce"):
        ring = orders.ring_orders(system, ranks, 1)[0]
        for a, b in zip(ring, ring[1:]):
            loads.add(gpu[ranks[a]], gpu[ranks[b]], 1.0)
        return loads, 1.0
    channels = _channels(system, ranks, 2)
    for ch, ring in enumerate(orders.ring_orders(system, ranks, channels)):
        for i, a in enumerate(ring):
            loads.add(gpu[ranks[a]], gpu[ranks[ring[(i + 1) % len(ring)]]],
                      1.0 / (n * channels), ch)
    rounds = 2 * (n - 1) if collective == "allreduce" else n - 1
    return loads, float(rounds)


def _channels(system: System, ranks: Sequence[int], inside: int) -> int:
    """Channels across islands as NCCL opens them (two per NIC), ``inside`` one island."""
    return orders.net_channels(system, ranks) if len(orders.islands(system, ranks)) > 1 \
        else inside


def _tree_loads(res: Resources, system, ranks, collective) -> Loads:
    """Every channel's two trees, each carrying its share of the data up and down."""
    loads = Loads(res)
    gpu = [g.id for g in system.gpus]
    rooted = collective in ("broadcast", "reduce")
    channels = 1 if rooted else _channels(system, ranks, 1)
    trees = orders.tree_parents(system, ranks, 0, channels)
    trees = trees[:1] if rooted else trees
    share = 1.0 / len(trees)
    for k, parents in enumerate(trees):
        for child, parent in enumerate(parents):
            if parent >= 0:
                if collective in ("allreduce", "reduce"):
                    loads.add(gpu[ranks[child]], gpu[ranks[parent]], share, k // 2)
                if collective in ("allreduce", "broadcast"):
                    loads.add(gpu[ranks[parent]], gpu[ranks[child]], share, k // 2)
    return loads


def _nvls_tree_loads(res: Resources, system, ranks, agents_of) -> Loads:
    """NCCL's NVLS-tree all-reduce: NVLS inside every island (each GPU up to its island's
    switches and back) and, between islands, two trees per channel headed at the channel's
    GPU of every island (NCCL's channels spread over the NICs, two per NIC)."""
    loads = Loads(res)
    gpu = [g.id for g in system.gpus]
    parts = orders.islands(system, ranks)
    for part in parts:
        agents = agents_of([ranks[p] for p in part])
        for p in part:
            for agent in agents:
                loads.add(gpu[ranks[p]], agent, 1.0 / len(agents))
                loads.add(agent, gpu[ranks[p]], 1.0 / len(agents))
    channels = orders.net_channels(system, ranks)
    pairs = alg.double_btree(len(parts))
    # tuning.cc: NVLS-tree gets half the inter-node bandwidth beyond two nodes
    share = (0.5 if len(parts) <= 2 else 1.0) / channels
    for c in range(channels):
        heads = [part[(c * len(part) // channels) % len(part)] for part in parts]
        for island_parent in pairs:
            for i, up in enumerate(island_parent):
                if up >= 0:
                    a, b = gpu[ranks[heads[i]]], gpu[ranks[heads[up]]]
                    loads.add(a, b, share, c)
                    loads.add(b, a, share, c)
    return loads


def _nvls_loads(res: Resources, system, ranks, agents, collective) -> Loads:
    loads = Loads(res)
    n, share = len(ranks), 1.0 / len(agents)
    up = {"allreduce": 1.0, "reducescatter": 1.0, "allgather": 1 / n, "reduce": 1.0}
    down = {"allreduce": 1.0, "reducescatter": 1 / n, "allgather": 1.0, "broadcast": 1.0}
    for i, r in enumerate(ranks):
        gid = system.gpus[r].id
        u = up.get(collective, 1.0 if i == 0 else 0.0)
        d = down.get(collective, 1.0 if i == 0 else 0.0)
        for agent in agents:
            if u:
                loads.add(gid, agent, u * share)
            if d:
                loads.add(agent, gid, d * share)
    return loads


def _direct_loads(res: Resources, system, ranks, collective) -> Loads:
    loads = Loads(res)
    gpu = [system.gpus[r].id for r in ranks]
    if collective == "sendrecv":
        for a, b in zip(gpu, gpu[1:]):
            loads.add(a, b, 1.0)
        return loads
    n = len(gpu)
    for a in gpu:
        for b in gpu:
            loads.add(a, b, 1.0 / n)
    return loads


def _hierarchical_loads(res, system, ranks) -> list[tuple[Loads, float]]:
    """Reduce-scatter then all-gather inside each NVLink domain, an all-reduce across domains
    per local index: one round of each phase and its number of rounds."""
    domains = orders.nvlink_domains(system, ranks)
    m, L = len(domains), len(domains[0])
    gpu = [g.id for g in system.gpus]
    inside, across = Loads(res), Loads(res)
    sample = domains[:SAMPLE_ISLANDS]
    for k, d in enumerate(sample):
        nxt = sample[(k + 1) % len(sample)]
        for i, a in enumerate(d):
            inside.add(gpu[ranks[a]], gpu[ranks[d[(i + 1) % L]]], 1.0 / L)
            across.add(gpu[ranks[a]], gpu[ranks[nxt[i]]], 1.0 / (L * m))
    return [(inside, 2.0 * (L - 1)), (across, 2.0 * (m - 1))]


def _one_per_island(system: System, ranks: Sequence[int]) -> bool:
    """Every rank of the group on an island of its own (NCCL's PAT condition, nNodes ==
    nRanks)."""
    return len({system.locality.island[r] for r in ranks}) == len(ranks) > 1


def _island_agents(system: System, ranks: Sequence[int]):
    """Each island's reducing NVLink switches, or None when some island has none."""
    found = [system.locality.nvlink_agents(part) for part in orders.islands_ranks(system, ranks)]
    return None if any(a is None for a in found) else found


def _gpu_facts(system: System, ranks: Sequence[int]) -> tuple[int | None, int]:
    """Compute capability and NVLink lanes of the group's first GPU (groups are uniform)."""
    first = system.gpus[ranks[0]]
    lanes = sum(link.lanes for link in system.links_of(first.id) if link.cls == "nvlink")
    return first.model.attr("sm"), lanes


def _hosts(system: System, ranks: Sequence[int]) -> int:
    """Hosts among the group's GPUs: sets of GPUs joined by PCIe, C2C and socket links (one
    OS image each: a DGX is one host, an NVL72 rack 36 Grace hosts)."""
    loc = system.locality
    seen: dict[str, int] = {}
    hosts = 0
    for r in ranks:
        start = system.gpus[r].id
        if start in seen:
            continue
        hosts += 1
        frontier = [start]
        seen[start] = hosts
        while frontier:
            node = frontier.pop()
            for other in loc.host_adj[node]:
                if other not in seen:
                    seen[other] = hosts
                    frontier.append(other)
    return hosts


def profile(system: System, group: RankGroup, collective: str, algorithm: str,
            res: Resources | None = None) -> Profile:
    """The size-independent part of the cost of ``algorithm`` on ``group``."""
    ranks = group.ranks
    n = len(ranks)
    sm, lanes = _gpu_facts(system, ranks)
    res = res or Resources(system, sm)
    loc = system.locality
    islands = len({loc.island[r] for r in ranks})
    sample = _sample(system, ranks)
    if algorithm in ("ring", "pat"):   # PAT moves a ring's bytes in log2(n) latency steps
        if algorithm == "pat" and not _one_per_island(system, ranks):
            raise CostError("PAT runs with one GPU per node (island), as NCCL uses it")
        phases = [_ring_loads(res, system, sample, collective, n)]
    elif algorithm == "tree":
        phases = [(_tree_loads(res, system, sample, collective), 1.0)]
    elif algorithm == "nvls":
        agents = loc.nvlink_agents(ranks)
        if agents is None:
            raise CostError("NVLS needs the group inside one NVLink domain of reducing switches")
        phases = [(_nvls_loads(res, system, ranks, agents, collective), 1.0)]
    elif algorithm == "nvlstree":
        if islands < 2 or _island_agents(system, ranks) is None:
            raise CostError("NVLS-tree needs two or more islands, each one NVLink domain of "
                            "reducing switches")
        phases = [(_nvls_tree_loads(res, system, sample, loc.nvlink_agents), 1.0)]
    elif algorithm == "hierarchical":
        phases = _hierarchical_loads(res, system, ranks)
    else:
        if collective == "alltoall" and n > ALLTOALL_MAX_RANKS:
            raise CostError(f"all-to-all cost is modelled up to {ALLTOALL_MAX_RANKS} ranks "
                            f"(the group has {n})")
        phases = [(_direct_loads(res, system, ranks, collective), 1.0)]
    timed = [(t * rounds, which) for (loads, rounds) in phases
             for t, which in [loads.busiest()]]
    total = sum(t for t, _ in timed)
    slowest = max(timed, key=lambda p: p[0])[1]
    example = res.example[slowest] if slowest is not None else ("", "")
    classes = tuple(sorted({res.example[r][1] for loads, _ in phases for r in loads.bytes}))
    host_hops = {"pcie", "inter_socket"}
    intra_classes = set()
    declared = {True: 0.0, False: 0.0}         # slowest declared hop inside / between islands
    for a, b in zip(sample, sample[1:]):
        if loc.island[a] == loc.island[b]:
            ga, gb = system.gpus[a].id, system.gpus[b].id
            intra_classes |= res.classes(res.crossed(ga, gb))
            declared[True] = max(declared[True], res.extra_latency(ga, gb) * 1e6)
    parts = orders.islands_ranks(system, sample)
    if len(parts) > 1:                         # a rail-aligned crossing: same local index
        declared[False] = res.extra_latency(system.gpus[parts[0][0]].id,
                                            system.gpus[parts[1][0]].id) * 1e6
    intra = "pci" if intra_classes & host_hops or lanes == 0 else "nvlink"
    hosts = _hosts(system, ranks) if algorithm == "nvls" else \
        _hosts(system, orders.islands_ranks(system, ranks)[0]) if algorithm == "nvlstree" \
        else islands
    return Profile(algorithm, total, (example[1], example[0]), intra, islands, hosts,
                   max(2, lanes), arch_index(sm), classes, declared[True], declared[False])


def protocols(algorithm: str) -> tuple[int, ...]:
    """Indices into PROTOCOLS of the protocols NCCL runs ``algorithm`` with: Simple only for
    NVLS, NVLS-tree and PAT; no LL128 for the point-to-point algorithms."""
    if algorithm in ("nvls", "nvlstree", "pat"):
        return (2,)
    return (0, 2) if algorithm in ("direct", "pairwise") else (0, 1, 2)


def cost_at(p: Profile, group: RankGroup, collective: str, size: int,
             protocol: str | None = None) -> Cost:
    """The cost of one size from a profile; the fastest protocol unless one is named."""
    n = len(group.ranks)
    options = protocols(p.algorithm)
    if protocol is not None:
        if PROTOCOLS.index(protocol) not in options:
            raise CostError(f"{p.algorithm} has no {protocol} protocol")
        options = (PROTOCOLS.index(protocol),)
    best = None
    factor = BUS_FACTOR[collective](n) if n > 1 else 0.0
    for proto in options:
        latency = LAUNCH + (latency_us(p, collective, n, proto) * 1e-6 if n > 1 else 0.0)
        bus = bus_gbs(p, collective, n, size, proto) * 1e9 if n > 1 else math.inf
        time = latency + (size * factor / bus if bus > 0 else math.inf)
        if best is None or time < best[0]:
            best = (time, proto, latency)
    time, proto, latency = best
    algbw = size / time
    return Cost(collective, group.name, n, size, p.algorithm, PROTOCOLS[proto], time, algbw,
                algbw * factor, p.bottleneck[0], p.bottleneck[1], latency, p.classes)


def auto_algorithms(system: System, group: RankGroup, collective: str,
               among: Sequence[str] = ()) -> list[str]:
    """The algorithms ``auto`` weighs for this collective on this group: NCCL's own (ring,
    tree, NVLS, NVLS-tree, direct), where the topology allows them; ``among`` narrows them."""
    ranks = group.ranks
    out = []
    for algo in among or orders.COSTED[collective]:
        if algo in orders.NOT_NCCL:
            continue                     # selectable by name; never what NCCL would run
        if algo == "nvls" and (len(ranks) < 2 or system.locality.nvlink_agents(ranks) is None):
            continue
        if algo == "pat" and not _one_per_island(system, ranks):
            continue                     # NCCL enables PAT with one GPU per node only
        if algo in ("tree", "nvlstree"):
            parts = orders.islands_ranks(system, ranks)
            if len(parts) < 2:
                continue                 # NCCL builds trees across nodes only (NVIDIA/nccl#211)
            if _hosts(system, parts[0]) > 1:
                continue                 # multi-node NVLink islands: NCCL runs rings (docs/cost.md)
        if algo == "nvlstree" and _island_agents(system, ranks) is None:
            continue
        if algo in ("direct", "pairwise") and collective == "alltoall":
            if algo == "pairwise":
                continue         # same loads as direct: one pass over every pair
        out.append(algo)
    return out


@gc_paused()
def sweep(system: System, group: RankGroup, collective: str, sizes: Iterable[int],
          algorithm: str = "auto", protocol: str | None = None,
          among: Sequence[str] = ()) -> list[Cost]:
    """One row per size: the named algorithm, or for ``auto`` the fastest of NCCL's (those in
    ``among`` when given: the schedule stage asks only for what it can plan)."""
    if collective not in COLLECTIVES:
        raise CostError(f"unknown collective '{collective}'")
    if algorithm == "auto":
        algos = auto_algorithms(system, group, collective, among)
    elif algorithm in orders.COSTED[collective]:
        algos = [algorithm]
    else:
        raise CostError(f"{collective} has no '{algorithm}' algorithm (one of "
                        f"{', '.join(orders.COSTED[collective])}, or auto)")
    if collective in ("alltoall", "sendrecv") and len(group.ranks) < 2:
        raise CostError(f"{collective} needs at least 2 ranks")
    if algorithm == "nvls" and system.locality.nvlink_agents(group.ranks) is None:
        raise CostError("NVLS needs every rank of the group in one NVLink domain whose "
                        "switches all have 'reduction = true'")
    res = Resources(system, _gpu_facts(system, group.ranks)[0])
    try:
        profiles = [profile(system, group, collective, a, res) for a in algos]
    except NoRoute as exc:
        raise CostError(f"{exc}: the group's GPUs are not all linked to each other") from None
    rows = []
    for size in sizes:
        found = [cost_at(p, group, collective, size, protocol) for p in profiles
                 if protocol is None or PROTOCOLS.index(protocol) in protocols(p.algorithm)]
        if not found:
            raise CostError(f"no algorithm runs {collective} with the {protocol} protocol")
        rows.append(min(found, key=lambda c: (c.time, c.algorithm)))
    return rows


@gc_paused()
def cost(system: System, group: RankGroup, collective: str, size: int,
         algorithm: str = "auto", protocol: str | None = None) -> Cost:
    """The predicted cost of one collective of ``size`` bytes on ``group``."""
    return sweep(system, group, collective, [size], algorithm, protocol)[0]

