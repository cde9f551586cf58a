"""Stage: a collective's predicted time, algbw and busbw on a rank group (``cost``).

time = launch + latency(algorithm, protocol) + bytes / bandwidth, in the manner of NCCL's
tuning model (src/graph/tuning.cc): per-algorithm base latencies plus per-hop hardware
latencies, protocol efficiencies and ceilings, and ``auto`` takes the fastest prediction. The
bandwidth is not a per-system constant: it comes from the schedule's transfers routed over the
link graph (``compiler.loads``), so transfers that share a link bundle share its bandwidth. A
pipelined schedule is limited by its busiest bundle: each phase costs the bytes that bundle
carries over its capacity (for a ring: one round's load times the number of rounds).

Where a net plugin charges each message a cost of its own (EFA), the network's message
pipeline (``messages``) bounds the size-dependent term from below; that term never shrinks
as the size grows (``_transfer_seconds``).

algbw = size / time; busbw = algbw times the factor nccl-tests uses (PERFORMANCE.md):
all-reduce 2(n-1)/n; reduce-scatter, all-gather, all-to-all (n-1)/n; broadcast, reduce,
send/recv 1. ``size`` is the whole buffer, as nccl-tests' size column.

Groups spanning more than ``SAMPLE_ISLANDS`` islands are costed on the orders over their first
islands: topology-aware orders repeat the same pattern from island to island, so one round's
busiest bundle is the same; the round and hop counts come from the whole group. This is what
makes a 73,728-rank all-reduce cost seconds rather than 10^10 steps. NCCL's tables live in
``tuning`` and, per release, ``versions``; network transports in ``transports``; CollNet over
SHARP in ``collnet``; details and the fitted constants: docs/cost.md.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Iterable, Sequence

import attrs

from . import algorithms as alg
from . import orders
from ..base.gcpause import gc_paused
from ..base.units import byte_count
from ..ir.system import COLLECTIVES, SCALEOUT_CLASSES, System
from .loads import Loads, Resources
from ..ir.groups import RankGroup
from .paths import NoRoute
from . import collnet, messages, transports, tuners
from .versions import GRAPH_SAVES_US, Nccl, UnknownVersion, nccl as nccl_profile
from .tuning import (BUS_FACTOR, NVLS_NCHANNELS, PROTOCOLS, Profile, arch_index,  # noqa: F401
                     bus_gbs, latency_us, nvls_fill_seconds, selection_us)

SAMPLE_ISLANDS = 4
ALLTOALL_MAX_RANKS = 256    # all-to-all loads are counted pair by pair over two islands

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


def _nvls_tree_loads(res: Resources, system, ranks, agents_of, inter: float = 1.0,
                     intra: float = 1.0) -> Loads:
    """NCCL's NVLS-tree all-reduce: NVLS inside every island (each GPU up to its island's
    switches and back) and, between islands, two trees per channel headed at the channel's
    GPU of every island (NCCL's channels spread over the NICs, two per NIC)."""
    loads = Loads(res)
    gpu = [g.id for g in system.gpus]
    parts = orders.islands(system, ranks)
    for part in parts if intra else ():
        agents = agents_of([ranks[p] for p in part])
        for p in part:
            for agent in agents:
                loads.add(gpu[ranks[p]], agent, intra / len(agents))
                loads.add(agent, gpu[ranks[p]], intra / len(agents))
    channels = nvls_tree_channels(system, ranks)
    pairs = alg.double_btree(len(parts))
    share = inter * 0.5 / channels       # two trees per channel
    for c in range(channels):
        heads = [part[(c * len(part) // channels) % len(part)] for part in parts]
        for island_parent in pairs:
            for i, up in enumerate(island_parent):
                if up >= 0:
                    a, b = gpu[ranks[heads[i]]], gpu[ranks[heads[up]]]
                    loads.add(a, b, share, c)
                    loads.add(b, a, share, c)
    return loads


def nvls_tree_channels(system: System, ranks: Sequence[int]) -> int:
    """NVLS-tree's channels: NCCL's NVLS channel count, each headed at its own GPU of every
    island and so its own NIC, bounded by two per NIC of the first island (a multi-node NVLink
    rack has 72 NICs, far more than 16 ring channels use)."""
    sm = system.gpus[ranks[0]].model.attr("sm")
    loc = system.locality
    first = loc.island[ranks[0]]
    nics = {loc.nic(r) for r in ranks if loc.island[r] == first} - {""}
    return max(2, min(NVLS_NCHANNELS.get(arch_index(sm), 16), orders.CHANNELS_PER_NIC * len(nics)))


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
    """Send/recv along the group; all-to-all: every rank sends 1/n of its buffer to every
    rank at once (NCCL's p2p channels serve the peers concurrently). Across more than two
    islands the all-to-all is counted on the first island's ranks: their traffic inside the
    island, and to and from one other island standing for all m - 1 (uniform islands and a
    uniform fabric make every island's NICs carry the same), so the count does not grow with
    the island count."""
    loads = Loads(res)
    gpu = [g.id for g in system.gpus]
    if collective == "sendrecv":
        for a, b in zip(ranks, ranks[1:]):
            loads.add(gpu[a], gpu[b], 1.0)
        return loads
    n = len(ranks)
    parts = orders.islands_ranks(system, ranks)
    if len(parts) <= 2:
        for a in ranks:
            for b in ranks:
                loads.add(gpu[a], gpu[b], 1.0 / n)
        return loads
    home, other, far = parts[0], parts[1], (len(parts) - 1) / n
    for a in home:
        for b in home:
            loads.add(gpu[a], gpu[b], 1.0 / n)
        for b in other:
            loads.add(gpu[a], gpu[b], far)
            loads.add(gpu[b], gpu[a], far)
    return loads


def _hierarchical_loads(res, system, ranks) -> list[tuple[Loads, float]]:
    """Reduce-scatter then all-gather inside each NVLink domain, an all-reduce across domains
    per local index: one round of each phase and its number of rounds."""
    domains = orders.nvlink_domains(system, ranks)
    if len({len(d) for d in domains}) != 1:      # as schedule refuses it, never an IndexError
        raise CostError("hierarchical all-reduce needs the same number of ranks in every "
                        f"NVLink domain (found {sorted({len(d) for d in domains})})")
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


#: Single-island groups this small run rings, not NVLS: NCCL disables NVLS on 2 GPUs or fewer
#: (nvls.cc: gpuCount <= 2) and its model prefers the ring up to 4 Hopper and 5 Blackwell GPUs
#: (NCCL 2.27: a ring on 4 H200 and 5 B200, NVLS on 6 B200 and 8 H100; ml-engineering).
NVLS_RING_UP_TO = {2: 4, 3: 5}


def _nvls_min_ranks(system: System, ranks: Sequence[int]) -> int:
    """The largest single-island group ``auto`` leaves on rings rather than NVLS."""
    if len(orders.islands(system, ranks)) > 1:
        return 2
    return NVLS_RING_UP_TO.get(arch_index(system.gpus[ranks[0]].model.attr("sm")), 2)


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


def _transport(system: System, ranks: Sequence[int]) -> transports.Transport | None:
    """The transport of the group's network: that of the first rank's NIC (None when the
    group has no NIC; a uniform fabric is assumed, as nccl-tests' systems are)."""
    nic = system.locality.nic(ranks[0])
    if not nic:
        return None
    device = system.device(nic)
    classes = [link.cls for link in system.links_of(nic) if link.cls in ("infiniband",
                                                                        "ethernet")]
    return transports.of_nic(device.model, classes[0] if classes else "infiniband")


def _nic_bytes_per_s(system: System, rank: int) -> float:
    """What one GPU's NICs (all it drives, pooled: ``Locality.nics``) carry across the network,
    bytes/s at their transport's fraction of the declared rate (0 without a NIC)."""
    total = 0.0
    for nic in system.locality.nics(rank):
        model = system.device(nic).model
        for link in system.links_of(nic):
            if link.cls in SCALEOUT_CLASSES:
                total += link.bandwidth * transports.of_nic(model, link.cls).efficiency
                break
    return total


def profile(system: System, group: RankGroup, collective: str, algorithm: str,
            res: Resources | None = None, nccl: Nccl | None = None,
            plugin: str | None = None) -> Profile:
    """The size-independent part of the cost of ``algorithm`` on ``group`` (``plugin``: the
    net plugin's release, transports.with_plugin)."""
    ranks = group.ranks
    n = len(ranks)
    sm, lanes = _gpu_facts(system, ranks)
    res = res or Resources.of(system, sm)
    loc = system.locality
    islands = len({loc.island[r] for r in ranks})
    sample = _sample(system, ranks)
    select = None
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
        # the network part apart: NVLS's efficiency is a property of the NVLink SHARP part,
        # not of the NICs (tuning.cc: min(intraBw x nvlsEfficiency, interBw, ...))
        net = _nvls_tree_loads(res, system, sample, loc.nvlink_agents, 1.0, 0.0).busiest()[0]
        if islands > 2 and (nccl or nccl_profile()).nvls_tree_ch is None:
            # tuning.cc before 2.28 charges NVLS-tree half the inter-node bandwidth beyond two
            # nodes when it chooses (docs/cost.md); ``auto`` chooses with NCCL's charge and
            # reports the time the links give. Loads scale with their bytes: twice ``net``.
            select = 2.0 * net
        nvls_part = _nvls_tree_loads(res, system, sample, loc.nvlink_agents, 0.0).busiest()[0]
    elif algorithm == "collnetchain":
        if islands < 2 or not collnet.sharp_fabric(system, ranks):
            raise CostError("CollNet needs two or more islands on network switches that all "
                            "declare 'sharp = true'")
        phases = [(collnet.chain_loads(res, system, sample), 1.0)]
    elif algorithm == "hierarchical":
        phases = _hierarchical_loads(res, system, ranks)
    else:
        counted = sum(len(p) for p in orders.islands_ranks(system, ranks)[:2])
        if collective == "alltoall" and counted > ALLTOALL_MAX_RANKS:
            raise CostError(f"all-to-all cost is modelled up to {ALLTOALL_MAX_RANKS} ranks in "
                            f"two islands (the group has {counted})")
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
    nccl = nccl or nccl_profile()
    arch = arch_index(sm)
    if arch == 3 and not nccl.blackwell_tables:
        arch = 2                 # before 2.25 NCCL indexed Blackwell as Hopper
    # channels at full size: NVLink lanes inside an island, NCCL's net channels across them
    channels = orders.net_channels(system, ranks) if islands > 1 else max(2, lanes)
    if algorithm == "nvlstree":
        total = nvls_part             # the network part travels in net_seconds_per_byte
    return Profile(algorithm, total, (example[1], example[0]), intra, islands, hosts,
                   channels, arch, classes, declared[True], declared[False],
                   n // islands, nccl,
                   transports.with_plugin(_transport(system, ranks), plugin)
                   if islands > 1 else None, select,
                   net if algorithm == "nvlstree" else None,
                   _nic_bytes_per_s(system, ranks[0]) if islands > 1 else 0.0)


def protocols(algorithm: str) -> tuple[int, ...]:
    """Indices into PROTOCOLS of the protocols NCCL runs ``algorithm`` with: Simple only for
    NVLS, NVLS-tree and PAT; no LL128 for the point-to-point algorithms."""
    if algorithm in ("nvls", "nvlstree", "pat", "collnetchain"):
        return (2,)
    return (0, 2) if algorithm in ("direct", "pairwise") else (0, 1, 2)


def _transfer_seconds(p: Profile, collective: str, n: int, size: int, proto: int,
                      factor: float) -> float:
    """The size-dependent part of a call's time: the bandwidth term, or the network's message
    pipeline where the plugin's per-message costs bound it (messages.py); and never less than
    for half the size, a quarter, ... (down to 4 KiB). NCCL's per-size refinements (fewer
    channels for small messages, the tree correction factor rising from 0.6 at 2 MiB to 0.8 at
    4 MiB for LL128) would otherwise let a 4 MiB tree all-reduce finish before a 2 MiB one
    (h100_cluster, 256 ranks: 165 us against 185), which no run does: it could send the
    larger message as the smaller one's channels would."""
    worst, at = 0.0, size
    while True:
        bus = bus_gbs(p, collective, n, at, proto) * 1e9
        t = at * factor / bus if bus > 0 else math.inf
        t = max(t, messages.pipeline_seconds(p, collective, n, at, proto)) + \
            nvls_fill_seconds(p, collective, n, at)
        worst = max(worst, t)
        at //= 2
        if at < 4096:
            return worst


def options(p: Profile, group: RankGroup, collective: str, size: int,
            protocol: str | None = None, graph: bool = False) -> list[tuple[float, Cost]]:
    """Every protocol of the profile's algorithm (or the one named) at one size: the time
    NCCL's own model gives it when choosing (``selection_us``, and for NVLS-tree beyond two
    nodes before 2.28 NCCL's halved bandwidth), with the predicted cost."""
    n = len(group.ranks)
    allowed = protocols(p.algorithm)
    if protocol is not None:
        if PROTOCOLS.index(protocol) not in allowed:
            raise CostError(f"{p.algorithm} has no {protocol} protocol")
        allowed = (PROTOCOLS.index(protocol),)
    elif p.intra == "pci":
        # tuning.cc enables LL128 by default only where the graph inside a node runs over
        # NVLink (typeIntra <= PATH_NVB), not on PCIe-only servers; NCCL_PROTO can force it
        allowed = tuple(x for x in allowed if PROTOCOLS[x] != "LL128")
    if p.transport is not None and p.islands > 1:
        allowed = tuple(x for x in allowed if PROTOCOLS[x] in p.transport.protocols)
        if not allowed:
            raise CostError(f"the {p.transport.name} transport runs only "
                            f"{', '.join(p.transport.protocols)} across nodes")
    factor = BUS_FACTOR[collective](n) if n > 1 else 0.0
    launch = (p.nccl.launch_us - (GRAPH_SAVES_US if graph else 0.0)) * 1e-6
    charged = p if p.select_seconds_per_byte is None else \
        attrs.evolve(p, net_seconds_per_byte=p.select_seconds_per_byte)
    out = []
    for proto in allowed:
        if n > 1:
            latency = launch + latency_us(p, collective, n, proto) * 1e-6
            chosen_lat = launch + selection_us(p, collective, n, proto) * 1e-6
            chosen_bus = bus_gbs(charged, collective, n, size, proto) * 1e9
        else:       # one rank: no bytes move (factor 0)
            latency = chosen_lat = launch
            chosen_bus = math.inf
        time = latency + (_transfer_seconds(p, collective, n, size, proto, factor) if n > 1
                          else 0.0)
        chosen = chosen_lat + (size * factor / chosen_bus if chosen_bus > 0 else math.inf)
        algbw = size / time
        out.append((chosen, Cost(collective, group.name, n, size, p.algorithm, PROTOCOLS[proto],
                                 time, algbw, algbw * factor, p.bottleneck[0], p.bottleneck[1],
                                 latency, p.classes)))
    return out


def choose(found: Iterable[tuple[float, Cost]], tuner: tuple[str, int] | None = None,
           collective: str = "") -> Cost:
    """What NCCL runs among ``options``: the tuner plugin's pick where its table covers the
    call (``tuner``: its name and the group's node count, from ``_tuner``), else the least time
    by NCCL's own model (ties by name)."""
    found = list(found)
    if tuner is not None and found:
        first = found[0][1]
        picked = tuners.choice(tuner[0], collective, first.size, first.ranks, tuner[1],
                               {(c.algorithm, c.protocol) for _, c in found})
        if picked is not None:
            return next(c for _, c in found if (c.algorithm, c.protocol) == picked)
    return min(found, key=lambda o: (o[0], o[1].algorithm, o[1].protocol))[1]


def _tuner(system: System, ranks: Sequence[int]) -> tuple[str, int] | None:
    """The tuner plugin the group's network names (its first NIC's model ``tuner``) and the
    group's node (island) count, or None."""
    nic = system.locality.nic(ranks[0])
    name = system.device(nic).model.attr("tuner") if nic else None
    return (name, len(orders.islands(system, ranks))) if name else None


def _tuner_loads(profiles: Sequence[Profile], version: Nccl) -> bool:
    """Whether a tuner plugin runs at all: NCCL loads tuners from 2.19 (its ext-tuner
    interface, NVIDIA/nccl v2.19.3-1), and the net plugin's release must ship one
    (transports.EFA_RELEASES: aws-ofi-nccl's from v1.8.0-aws)."""
    if version.release < (2, 19):
        return False
    return all(p.transport is None or p.transport.tuner for p in profiles)


def cost_at(p: Profile, group: RankGroup, collective: str, size: int,
            protocol: str | None = None, graph: bool = False) -> Cost:
    """The cost of one size from a profile: the protocol NCCL would choose unless one is
    named."""
    return choose(options(p, group, collective, size, protocol, graph))


def auto_algorithms(system: System, group: RankGroup, collective: str,
                    among: Sequence[str] = (), nccl: Nccl | None = None) -> list[str]:
    """The algorithms ``auto`` weighs for this collective on this group: NCCL's own (ring,
    tree, NVLS, NVLS-tree, direct), where the topology allows them; ``among`` narrows them."""
    ranks = group.ranks
    out = []
    for algo in among or orders.COSTED[collective]:
        if algo in orders.NOT_NCCL:
            continue                     # selectable by name; never what NCCL would run
        if collective in ("broadcast", "reduce") and algo != "ring":
            continue                     # tuning.cc: broadcast and reduce run rings only
        if algo == "nvls" and (len(ranks) <= _nvls_min_ranks(system, ranks) or
                               system.locality.nvlink_agents(ranks) is None):
            continue
        if algo == "pat" and (not _one_per_island(system, ranks) or
                              not (nccl or nccl_profile()).pat):
            continue                     # NCCL enables PAT with one GPU per node only (2.23+)
        if algo in ("tree", "nvlstree"):
            parts = orders.islands_ranks(system, ranks)
            if len(parts) < 2:
                continue                 # NCCL builds trees across nodes only (NVIDIA/nccl#211)
            if _hosts(system, parts[0]) > 1 and (algo == "tree" or len(parts) > 2):
                continue                 # multi-node NVLink islands: NCCL runs rings, and
                                         # NVLS-tree across two of them (docs/cost.md)
        if algo == "nvlstree" and _island_agents(system, ranks) is None:
            continue
        if algo == "collnetchain" and (len(orders.islands(system, ranks)) < 2 or
                                       not collnet.sharp_fabric(system, ranks)):
            continue                     # CollNet where the fabric declares SHARP
        if algo == "collnetchain" and collective != "allreduce":
            continue
        if algo in ("direct", "pairwise") and collective == "alltoall":
            if algo == "pairwise":
                continue         # same loads as direct: one pass over every pair
        out.append(algo)
    return out


@gc_paused()
def sweep(system: System, group: RankGroup, collective: str, sizes: Iterable[int],
          algorithm: str = "auto", protocol: str | None = None,
          among: Sequence[str] = (), nccl: str | None = None,
          graph: bool = False, plugin: str | None = None) -> list[Cost]:
    """One row per size: the named algorithm, or for ``auto`` the fastest of NCCL's (those in
    ``among`` when given: the schedule stage asks only for what it can plan). ``nccl`` names
    the release whose tables apply (versions.py; the latest when None); ``graph`` costs
    CUDA-graph launches (nccl-tests -G); ``plugin`` the net plugin's release (aws-ofi-nccl,
    transports.with_plugin; the latest when None). A size that is not a finite, positive
    whole number of bytes is ValueError (TypeError when no number), before any work."""
    sizes = [byte_count(size, "a size") for size in sizes]
    try:
        version = nccl_profile(nccl)
        if plugin not in (None, "", "latest"):
            transports.plugin_release(plugin)
    except (UnknownVersion, transports.UnknownPlugin) as exc:
        raise CostError(str(exc)) from None
    if collective not in COLLECTIVES:
        raise CostError(f"unknown collective '{collective}'")
    if algorithm == "auto":
        algos = auto_algorithms(system, group, collective, among, version)
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
    res = Resources.of(system, _gpu_facts(system, group.ranks)[0])
    try:
        profiles = [profile(system, group, collective, a, res, version, plugin) for a in algos]
    except NoRoute as exc:
        raise CostError(f"{exc}: the group's GPUs are not all linked to each other") from None
    profiles = [p for p in profiles
                if protocol is None or PROTOCOLS.index(protocol) in protocols(p.algorithm)]
    tuner = _tuner(system, group.ranks) if algorithm == "auto" and protocol is None else None
    if tuner and not _tuner_loads(profiles, version):
        tuner = None
    rows = []
    for size in sizes:
        found = [o for p in profiles for o in options(p, group, collective, size, protocol, graph)]
        if not found:
            raise CostError(f"no algorithm runs {collective} with the {protocol} protocol")
        rows.append(choose(found, tuner, collective))
    return rows


@gc_paused()
def cost(system: System, group: RankGroup, collective: str, size: int,
         algorithm: str = "auto", protocol: str | None = None, nccl: str | None = None,
         graph: bool = False, plugin: str | None = None) -> Cost:
    """The predicted cost of one collective of ``size`` bytes on ``group`` (``nccl`` and
    ``graph`` as in ``sweep``)."""
    return sweep(system, group, collective, [size], algorithm, protocol, nccl=nccl,
                 graph=graph, plugin=plugin)[0]



#: Resources (routes and link bundles, a cache that only grows) per system and SM count, shared
#: by every ``coster``.
_RESOURCES: dict[tuple, tuple] = {}


def coster(system: System, group: RankGroup, collective: str) -> Callable[[int], Cost]:
    """``sweep``'s answer one size at a time, its size-independent part (algorithms, routes,
    loads) computed once: ``coster(...)(size)`` equals ``sweep(..., [size])[0]``. The plan
    search asks one group for many sizes."""
    algos = auto_algorithms(system, group, collective, ())
    if collective in ("alltoall", "sendrecv") and len(group.ranks) < 2:
        raise CostError(f"{collective} needs at least 2 ranks")
    sm = _gpu_facts(system, group.ranks)[0]
    hit = _RESOURCES.get((id(system), sm))
    if hit is None or hit[0]() is not system:
        hit = _RESOURCES[id(system), sm] = (weakref.ref(system), Resources(system, sm))
    try:
        profiles = [profile(system, group, collective, a, hit[1]) for a in algos]
    except NoRoute as exc:
        raise CostError(f"{exc}: the group's GPUs are not all linked to each other") from None

    tuner = _tuner(system, group.ranks)

    def at(size: int) -> Cost:
        return choose((o for p in profiles for o in options(p, group, collective, size)), tuner,
                      collective)
    return at
