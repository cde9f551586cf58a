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
makes a 73,728-rank all-reduce cost a second rather than 10^10 steps. Details and the fitted
constants: docs/cost.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import attrs

from . import schedule as sch
from .ir import System
from .loads import Loads, Resources
from .ranks import RankGroup

PROTOCOLS = ("LL", "LL128", "Simple")
#: Base latencies in us per algorithm and protocol (LL, LL128, Simple), tuning.cc baseLat.
BASE_LAT = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0.0, 0.0, 0.0)}
#: Per-hop hardware latencies in us, tuning.cc hwLat[NVLINK | PCI | NET][TREE | RING].
HW_LAT = {("nvlink", "tree"): (0.6, 1.25, 4.0), ("nvlink", "ring"): (0.6, 1.9, 3.4),
          ("pci", "tree"): (1.0, 1.9, 4.0), ("pci", "ring"): (1.0, 2.5, 5.7),
          ("net", "tree"): (5.0, 8.5, 14.0), ("net", "ring"): (2.7, 4.0, 14.0)}
NVLS_LAT = 25.0          # us, hwLat[NVLINK][NVLS][Simple]; paid once per host, see docs/cost.md
NVLS_LAT_NET = 18.0      # us, hwLat[NET][NVLS][Simple]
#: llMaxBws (GB/s) by architecture index and node count (1, 2, more), tuning.cc.
LL_MAX_BW = {1: (87.7, 22.5, 19.0), 2: (141.0, 45.0, 35.0), 3: (282.0, 90.0, 70.0),
             0: (39.0, 39.0, 20.4)}
#: Per-channel ceilings (GB/s) of LL128 on rings and trees, tuning.cc perChMaxRingLL128Bws /
#: perChMaxTreeLL128Bws, single node.
LL128_RING_CH = {0: 20.0, 1: 20.0, 2: 36.7, 3: 40.0}
LL128_TREE_CH = {0: 20.0, 1: 20.0, 2: 36.7, 3: 55.6}
NVLS_EFFICIENCY = {2: 0.85, 3: 0.74}       # nvlsEfficiency, Hopper and Blackwell
#: Fitted: NCCL scales NVLS by (C-1)/C for the channel it keeps for synchronisation; C = 8 fits
#: HGX H100, HGX B200 and NVL72 published runs (docs/cost.md).
NVLS_CHANNELS = 8
LAUNCH = 10e-6           # s per call: kernel launch and enqueue as nccl-tests time them (fitted)
#: Bytes that keep one channel busy: one step of NCCL's default buffer (NCCL_BUFFSIZE 4 MiB over
#: NCCL_STEPS 8); a message of S bytes runs on ceil(S / CHANNEL_BYTES) channels at most.
CHANNEL_BYTES = 512 * 1024
SAMPLE_ISLANDS = 4
ALLTOALL_MAX_RANKS = 256    # all-to-all loads are counted pair by pair

BUS_FACTOR = {"allreduce": lambda n: 2 * (n - 1) / n, "reducescatter": lambda n: (n - 1) / n,
              "allgather": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n,
              "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "sendrecv": lambda n: 1.0}


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


@attrs.frozen
class Profile:
    """What the size does not change: per-byte phase times, hop counts and the bottleneck."""

    algorithm: str
    seconds_per_byte: float      # Simple protocol, every channel busy
    bottleneck: tuple[str, str]  # (link class, link id)
    intra: str                   # "nvlink" or "pci": the class of hops inside islands
    islands: int
    hosts: int
    channels: int                # NCCL channels at full size (NVLink lanes per GPU, >= 2)
    arch: int
    classes: tuple[str, ...]     # link classes the transfers cross


def arch_index(sm: int | None) -> int:
    """NCCL's compute-capability index: 0 Volta, 1 Ampere, 2 Hopper, 3 Blackwell."""
    sm = 90 if sm is None else int(sm)
    return 0 if sm < 80 else 1 if sm < 90 else 2 if sm < 100 else 3


def _sample(system: System, ranks: Sequence[int]) -> tuple[int, ...]:
    """The group's ranks in its first SAMPLE_ISLANDS islands (all of them if fewer)."""
    parts = sch.islands(system, ranks)
    if len(parts) <= SAMPLE_ISLANDS:
        return tuple(ranks)
    keep = sorted(p for part in parts[:SAMPLE_ISLANDS] for p in part)
    return tuple(ranks[p] for p in keep)


def _ring_channels(system: System, ranks: Sequence[int]) -> int:
    """Rings NCCL would open across islands: one per distinct NIC of an island (at least 2,
    at most 16), so crossings spread over the rails."""
    loc = system.locality
    first = loc.island[ranks[0]]
    nics = {loc.nic(r) for r in ranks if loc.island[r] == first} - {""}
    return max(2, min(16, len(nics)))


def _ring_loads(res: Resources, system, ranks, collective, n: int) -> tuple[Loads, float]:
    """One round of every channel's ring (bytes per unit size) and the number of rounds."""
    loads = Loads(res)
    gpu = [g.id for g in system.gpus]
    if collective in ("broadcast", "reduce"):
        ring = sch.ring_orders(system, ranks, 1)[0]
        for a, b in zip(ring, ring[1:]):
            loads.add(gpu[ranks[a]], gpu[ranks[b]], 1.0)
        return loads, 1.0
    channels = _ring_channels(system, ranks) if len(sch.islands(system, ranks)) > 1 else 2
    for ring in sch.ring_orders(system, ranks, channels):
        for i, a in enumerate(ring):
            loads.add(gpu[ranks[a]], gpu[ranks[ring[(i + 1) % len(ring)]]], 1.0 / (n * channels))
    rounds = 2 * (n - 1) if collective == "allreduce" else n - 1
    return loads, float(rounds)


def _tree_loads(res: Resources, system, ranks, collective) -> Loads:
    loads = Loads(res)
    gpu = [g.id for g in system.gpus]
    trees = sch.tree_parents(system, ranks)
    share = 0.5 if collective == "allreduce" else 1.0
    for parents in trees if collective == "allreduce" else trees[:1]:
        for child, parent in enumerate(parents):
            if parent >= 0:
                if collective in ("allreduce", "reduce"):
                    loads.add(gpu[ranks[child]], gpu[ranks[parent]], share)
                if collective in ("allreduce", "broadcast"):
                    loads.add(gpu[ranks[parent]], gpu[ranks[child]], share)
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
    domains = sch.nvlink_domains(system, ranks)
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
    if algorithm == "ring":
        phases = [_ring_loads(res, system, sample, collective, n)]
    elif algorithm == "tree":
        phases = [(_tree_loads(res, system, sample, collective), 1.0)]
    elif algorithm == "nvls":
        agents = loc.nvlink_agents(ranks)
        if agents is None:
            raise CostError("NVLS needs the group inside one NVLink domain of reducing switches")
        phases = [(_nvls_loads(res, system, ranks, agents, collective), 1.0)]
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
    for a, b in zip(sample, sample[1:]):
        if loc.island[a] == loc.island[b]:
            intra_classes |= res.classes(res.crossed(system.gpus[a].id, system.gpus[b].id))
    intra = "pci" if intra_classes & host_hops or lanes == 0 else "nvlink"
    hosts = _hosts(system, ranks) if algorithm == "nvls" else islands
    return Profile(algorithm, total, (example[1], example[0]), intra, islands, hosts,
                   max(2, lanes), arch_index(sm), classes)


def _latency_us(p: Profile, collective: str, n: int, proto: int) -> float:
    m, algo = p.islands, p.algorithm
    if algo == "nvls":
        return NVLS_LAT * p.hosts + (NVLS_LAT_NET if m > 1 else 0.0)
    kind = "tree" if algo == "tree" else "ring"
    intra, net = HW_LAT[(p.intra, kind)][proto], HW_LAT[("net", kind)][proto]
    base = BASE_LAT[kind][proto]
    if algo == "tree":
        passes = 2 if collective == "allreduce" else 1
        return base + passes * ((n // m - 1) * intra + math.log2(m) * net)
    if algo == "hierarchical":                     # rings inside domains, then across them
        return base + 2 * (n // m - 1) * intra + 2 * (m - 1) * net
    if collective in ("allreduce", "reducescatter", "allgather"):
        steps = 2 * (n - 1) if collective == "allreduce" else n - 1
        inter = (2 if collective == "allreduce" else 1) * (m - 1)
        return base + (steps - inter) * intra + inter * net
    if collective == "alltoall":
        return base + (n - 1) * (net if m > 1 else intra)
    if collective == "sendrecv":
        return base + (net if m > 1 else intra)
    return base + (n - m) * intra + (m - 1) * net       # broadcast, reduce: a chain


def _bus_gbs(p: Profile, collective: str, n: int, size: int, proto: int) -> float:
    """busbw (GB/s) the bandwidth term gives at this size and protocol, NCCL's refinements
    applied: protocol efficiency, per-channel ceilings, fewer channels for small messages."""
    factor = BUS_FACTOR[collective](n)
    raw = factor / p.seconds_per_byte / 1e9 if p.seconds_per_byte > 0 else math.inf
    nodes = min(p.islands, 3) - 1
    if p.algorithm == "nvls":
        return raw * NVLS_EFFICIENCY.get(p.arch, 0.0) * (NVLS_CHANNELS - 1) / NVLS_CHANNELS
    if p.algorithm in ("direct", "pairwise"):
        return raw * (0.5 if proto == 0 else 1.0)
    # A channel is worth opening for one buffer step of data: small messages use fewer.
    used = min(p.channels, max(1, math.ceil(size / CHANNEL_BYTES)))
    raw *= used / p.channels
    ll_cap = LL_MAX_BW[p.arch][nodes]
    if p.algorithm == "tree":
        if proto == 0:
            return min(raw / 3.8, ll_cap)
        if proto == 1:
            return min(raw * (7 / 9 if p.islands == 1 else 120 / 128),
                       used * LL128_TREE_CH[p.arch])
        return raw * 0.92
    if proto == 0:
        return min(raw * 0.5, ll_cap)
    if proto == 1:
        return min(raw * 0.92, used * LL128_RING_CH[p.arch])
    return raw


def evaluate(p: Profile, group: RankGroup, collective: str, size: int,
             protocol: str | None = None) -> Cost:
    """The cost of one size from a profile; the fastest protocol unless one is named."""
    n = len(group.ranks)
    options = (2,) if p.algorithm == "nvls" else (0, 2) if p.algorithm in (
        "direct", "pairwise") else (0, 1, 2)
    if protocol is not None:
        if PROTOCOLS.index(protocol) not in options:
            raise CostError(f"{p.algorithm} has no {protocol} protocol")
        options = (PROTOCOLS.index(protocol),)
    best = None
    factor = BUS_FACTOR[collective](n) if n > 1 else 0.0
    for proto in options:
        latency = LAUNCH + (_latency_us(p, collective, n, proto) * 1e-6 if n > 1 else 0.0)
        bus = _bus_gbs(p, collective, n, size, proto) * 1e9 if n > 1 else math.inf
        time = latency + (size * factor / bus if bus > 0 else math.inf)
        if best is None or time < best[0]:
            best = (time, proto, latency)
    time, proto, latency = best
    algbw = size / time
    return Cost(collective, group.name, n, size, p.algorithm, PROTOCOLS[proto], time, algbw,
                algbw * factor, p.bottleneck[0], p.bottleneck[1], latency, p.classes)


def candidates(system: System, group: RankGroup, collective: str) -> list[str]:
    """The algorithms ``auto`` weighs for this collective on this group."""
    ranks = group.ranks
    out = []
    for algo in sch.SUPPORTED[collective]:
        if algo == "nvls" and (len(ranks) < 2 or system.locality.nvlink_agents(ranks) is None):
            continue
        if algo == "hierarchical":
            domains = sch.nvlink_domains(system, ranks)
            if len(domains) < 2 or len({len(d) for d in domains}) != 1 or len(domains[0]) < 2:
                continue
        if algo in ("direct", "pairwise") and collective == "alltoall":
            if algo == "pairwise":
                continue         # same loads as direct: one pass over every pair
        out.append(algo)
    return out


def sweep(system: System, group: RankGroup, collective: str, sizes: Iterable[int],
          algorithm: str = "auto", protocol: str | None = None) -> list[Cost]:
    """One row per size: the named algorithm, or the fastest one for ``auto``."""
    if collective not in sch.COLLECTIVES:
        raise CostError(f"unknown collective '{collective}'")
    if algorithm == "auto":
        algos = candidates(system, group, collective)
    elif algorithm in sch.SUPPORTED[collective]:
        algos = [algorithm]
    else:
        raise CostError(f"{collective} has no '{algorithm}' algorithm (one of "
                        f"{', '.join(sch.SUPPORTED[collective])}, or auto)")
    if collective in ("alltoall", "sendrecv") and len(group.ranks) < 2:
        raise CostError(f"{collective} needs at least 2 ranks")
    if algorithm == "nvls" and system.locality.nvlink_agents(group.ranks) is None:
        raise CostError("NVLS needs every rank of the group in one NVLink domain whose "
                        "switches all have 'reduction = true'")
    res = Resources(system, _gpu_facts(system, group.ranks)[0])
    profiles = [profile(system, group, collective, a, res) for a in algos]
    rows = []
    for size in sizes:
        found = [evaluate(p, group, collective, size, protocol) for p in profiles
                 if protocol is None or p.algorithm != "nvls" or protocol == "Simple"]
        if not found:
            raise CostError(f"no algorithm runs {collective} with the {protocol} protocol")
        rows.append(min(found, key=lambda c: (c.time, c.algorithm)))
    return rows


def cost(system: System, group: RankGroup, collective: str, size: int,
         algorithm: str = "auto", protocol: str | None = None) -> Cost:
    """The predicted cost of one collective of ``size`` bytes on ``group``."""
    return sweep(system, group, collective, [size], algorithm, protocol)[0]


def cost_of(system: System, sched: sch.Schedule) -> Cost:
    """The predicted cost of a planned schedule (its algorithm, group and size)."""
    return cost(system, sched.group, sched.collective, sched.bytes, sched.algorithm)
