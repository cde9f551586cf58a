"""Stage: a collective's predicted time, algbw and busbw on a rank group: the model behind
the one door (``coster.cost_collective``), which alone chooses among its options.

time = launch + latency(algorithm, protocol) + bytes / bandwidth, in the manner of NCCL's
tuning model (src/graph/tuning.cc): per-algorithm base latencies plus per-hop hardware
latencies, protocol efficiencies and ceilings; each algorithm's terms and link loads are its
record's (``algos``), and NCCL's choice is the least time by NCCL's own model (``choose``). The
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
``tuning`` and, per release, ``versions``; network transports in ``transports``; the
algorithms in ``algos``; details and the fitted constants: docs/cost.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import attrs

from . import algos, orders, transports, tuners
from ..ir.system import SCALEOUT_CLASSES, System, device_indices
from .loads import Resources, crowding, totals
from .paths import NoRoute
from ..ir.groups import RankGroup
from .algos.base import SAMPLE_ISLANDS, CostError, Group
from .versions import GRAPH_SAVES_US, Nccl, nccl as nccl_profile
from .tuning import BUS_FACTOR, PROTOCOLS, Profile, arch_index, net_overhead_us

__all__ = ["SAMPLE_ISLANDS", "BUS_FACTOR", "Cost", "CostError", "profile", "options", "choose",
           "auto_algorithms"]


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
    latency: float           # the part of ``time`` that is not the bytes' (algos.idle_us)
    classes: tuple[str, ...] = ()   # link classes the transfers cross
    #: how the row was chosen: ``nccl`` (NCCL's model), ``tuner`` (the net plugin's table),
    #: ``fastest`` or ``forced`` (an algorithm named); empty where no chooser ran
    choice: str = ""
    #: what the chooser weighed: (algorithm, protocol, the time NCCL's model gives it, the
    #: predicted time), by NCCL's time; empty for a forced algorithm with its protocol named
    weighed: tuple[tuple[str, str, float, float], ...] = ()


def _sample(system: System, ranks: Sequence[int]) -> tuple[int, ...]:
    """The group's ranks in its first SAMPLE_ISLANDS islands (all of them if fewer), the
    island count's parity kept."""
    return orders.sample_islands(system, ranks, SAMPLE_ISLANDS)


def _gpu_facts(system: System, ranks: Sequence[int]) -> tuple[int | None, int]:
    """Compute capability and NVLink lanes of the group's first GPU (groups are uniform)."""
    first = system.gpus[ranks[0]]
    if "cost.nvlink_lanes" not in system.memo and system.has_view("incidence"):
        # a system whose incidence is made (the routers make it before the first group is
        # costed; a degraded one shares the healthy one's): one GPU's links, not a pass over
        # every link (a self-loop is listed once, as the array counts it)
        return first.model.attr("sm"), sum(x.lanes for x in system.incidence.get(first.id, ())
                                           if x.cls == "nvlink")
    loc = system.locality
    at = loc.gpu_index[ranks[0]] if loc.system.devices is system.devices else \
        device_indices(system)[first.id]
    return first.model.attr("sm"), int(_nvlink_lanes(system)[at])


def _nvlink_lanes(system: System):
    """Each device's NVLink lanes (a link joining a device to itself counted once), in numpy
    by device index, made once per system over the links' integer ends: the plan costs a
    thousand groups, and a pass over every link per group was most of its time at 8,192
    racks."""
    found = system.memo.get("cost.nvlink_lanes")
    if found is None:
        import numpy as np

        src, dst, lanes = system.ends.arrays(lambda t: t.cls == "nvlink",
                                             ("src", "dst", "lanes"))
        n = len(system.devices)
        weights = lanes.astype(np.int64)
        loops = src == dst
        found = np.bincount(src, weights, n) + np.bincount(dst, weights, n) \
            - np.bincount(src[loops], weights[loops], n)
        found = system.memo["cost.nvlink_lanes"] = found.astype(np.int64)
    return found


def _first_scaleout(system: System):
    """Each device's first scale-out link in declaration order (-1: none) and every such
    link's type code, made once per system (as ``_nvlink_lanes``)."""
    found = system.memo.get("cost.first_scaleout")
    if found is None:
        import numpy as np

        src, dst, codes = system.ends.arrays(lambda t: t.cls in ("infiniband", "ethernet"),
                                             ("src", "dst", "type"))
        n = len(system.devices)
        first = np.full(n, len(src), dtype=np.int64)
        order = np.arange(len(src), dtype=np.int64)
        np.minimum.at(first, src, order)
        np.minimum.at(first, dst, order)
        first[first == len(src)] = -1
        found = system.memo["cost.first_scaleout"] = (first, codes.copy())
    return found


def _transport(system: System, ranks: Sequence[int]) -> transports.Transport | None:
    """The transport of the group's network: that of the first rank's NIC (None when the
    group has no NIC; a uniform fabric is assumed, as nccl-tests' systems are)."""
    nic = system.locality.nic(ranks[0])
    if not nic:
        return None
    loc = system.locality
    at = int(loc.nic_index[ranks[0]]) if loc.system.devices is system.devices else \
        device_indices(system)[nic]
    device = system.devices[at]
    # the class of the NIC's first scale-out link in declaration order (links_of's first)
    first, codes = _first_scaleout(system)
    link = int(first[at])
    return transports.of_nic(device.model, system.ends.types[int(codes[link])].cls
                             if link >= 0 else "infiniband")


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


def _net_overhead(system: System, rank: int) -> float:
    """tuning.cc's getNetOverhead for the CPU the rank's GPU hangs off (1 us without one)."""
    cpu = system.locality.socket(rank)
    if not cpu:
        return net_overhead_us(None, None)
    model = system.device(cpu).model
    return net_overhead_us(model.attr("vendor"), model.attr("arch"))


def profile(system: System, group: RankGroup, collective: str, algorithm: str,
            res: Resources | None = None, nccl: Nccl | None = None,
            plugin: str | None = None, background: dict | None = None) -> Profile:
    """The size-independent part of the cost of ``algorithm`` (a registered record's name) on
    ``group`` (``plugin``: the net plugin's release, transports.with_plugin); ``background``:
    what other groups running at the same time put on the links (``loads.crowding``)."""
    record = algos.get(algorithm)
    ranks = group.ranks
    n = len(ranks)
    sm, lanes = _gpu_facts(system, ranks)
    res = res or Resources.of(system, sm)
    loc = system.locality
    islands = orders.island_count(system, ranks)
    sample = _sample(system, ranks)
    nccl = nccl or nccl_profile()
    shape = record.shape(Group(system, tuple(ranks), collective, res, sample, nccl,
                               background))
    crowd = crowding(shape.phases, background)
    timed = [(t * rounds, which) for (loads, rounds) in shape.phases
             for t, which in [loads.busiest(crowd)]]
    total = sum(t for t, _ in timed)
    slowest = max(timed, key=lambda p: p[0])[1]
    example = res.example[slowest] if slowest is not None else ("", "")
    classes = tuple(sorted({res.example[r][1] for loads, _ in shape.phases for r in loads.bytes}))
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
    host_count = record.hosts(system, ranks) if record.hosts is not None else islands
    arch = arch_index(sm)
    if arch == 3 and not nccl.blackwell_tables:
        arch = 2                 # before 2.25 NCCL indexed Blackwell as Hopper
    # channels at full size: NVLink lanes inside an island, NCCL's net channels across them
    channels = orders.net_channels(system, ranks) if islands > 1 else max(2, lanes)
    if shape.nvls is not None:
        total = shape.nvls            # the network part travels in net_seconds_per_byte
    return Profile(algorithm, total, (example[1], example[0]), intra, islands, host_count,
                   channels, arch, classes, declared[True], declared[False],
                   n // islands, nccl,
                   transports.with_plugin(_transport(system, ranks), plugin)
                   if islands > 1 else None, shape.select, shape.net,
                   _nic_bytes_per_s(system, ranks[0]) if islands > 1 else 0.0,
                   record.credit(system, ranks), _net_overhead(system, ranks[0]))


def group_loads(system: System, group: RankGroup, collective: str, algorithm: str,
                nccl: Nccl | None = None) -> dict[tuple, float]:
    """Bytes per unit size ``algorithm`` puts on each shared resource when it runs
    ``collective`` on ``group`` (its orders over the islands sampled, as ``profile`` costs
    it): what one group of a traffic line adds to the links the others use at the same time."""
    record = algos.get(algorithm)
    sm, _ = _gpu_facts(system, group.ranks)
    res = Resources.of(system, sm)
    try:
        shape = record.shape(Group(system, tuple(group.ranks), collective, res,
                                   _sample(system, group.ranks), nccl or nccl_profile()))
    except NoRoute as exc:
        raise CostError(f"{exc}: the group's GPUs are not all linked to each other") from None
    return totals(shape.phases)


def _transfer_seconds(p: Profile, collective: str, n: int, size: int, proto: int,
                      factor: float) -> float:
    """The size-dependent part of a call's time: the bandwidth term, or the network's message
    pipeline where the plugin's per-message costs bound it (messages.py); and never less than
    for any smaller size (from 4 KiB): it could send the larger message as the smaller one's
    channels would. NCCL's per-size refinements would otherwise let a larger message finish
    first: the tree correction factor, a step in log2 of the size, rising from 0.6 at 2 MiB to
    0.8 at 4 MiB for LL128 (h100_cluster, 256 ranks: a tree all-reduce at 4 MiB in 165 us, at
    2 MiB in 185). Between two powers of two every refinement is constant or grows with the
    size (channels_used), so the worst smaller size is the size itself or one just under a
    power of two: those are the sizes weighed (and, as before, the size halved down to 4 KiB)."""
    def at(bytes_: int) -> float:
        bus = algos.bus_gbs(p, collective, n, bytes_, proto) * 1e9
        t = bytes_ * factor / bus if bus > 0 else math.inf
        return max(t, algos.pipeline_seconds(p, collective, n, bytes_, proto)) + \
            algos.fill_seconds(p, collective, n, bytes_)
    worst, half = at(size), size // 2
    while half >= 4096:
        worst = max(worst, at(half))
        half //= 2
    edge = 8192
    while edge <= size:
        worst = max(worst, at(edge - 1))
        edge *= 2
    return worst


def options(p: Profile, group: RankGroup, collective: str, size: int,
            protocol: str | None = None, graph: bool = False) -> list[tuple[float, Cost]]:
    """Every protocol of the profile's algorithm (or the one named) at one size: the time
    NCCL's own model gives it when choosing (``selection_us``, and for NVLS-tree beyond two
    nodes before 2.28 NCCL's halved bandwidth), with the predicted cost."""
    n = len(group.ranks)
    allowed = algos.protocols(p.algorithm)
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
            latency = launch + (algos.latency_us(p, collective, n, proto) -
                                algos.idle_us(p, collective, n, size, proto)) * 1e-6
            chosen_lat = launch + algos.selection_us(p, collective, n, proto) * 1e-6 * \
                algos.plateau(p, collective, n, size, proto)
            chosen_bus = algos.bus_gbs(charged, collective, n, size, proto) * 1e9 * p.credit
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


def weighed(found: Iterable[tuple[float, Cost]]) -> tuple[tuple[str, str, float, float], ...]:
    """``options`` as ``Cost.weighed`` records them: by NCCL's time, ties by name."""
    return tuple(sorted(((c.algorithm, c.protocol, t, c.time) for t, c in found),
                        key=lambda w: (w[2], w[0], w[1])))


def choose(found: Iterable[tuple[float, Cost]], tuner: tuple[str, int] | None = None,
           collective: str = "") -> Cost:
    """What NCCL runs among ``options``: the tuner plugin's pick where its table covers the
    call (``tuner``: its name and the group's node count, from ``_tuner``), else the least time
    by NCCL's own model (ties by name); the row says which (``choice``) and what was weighed."""
    found = list(found)
    why = weighed(found)
    if tuner is not None and found:
        first = found[0][1]
        picked = tuners.choice(tuner[0], collective, first.size, first.ranks, tuner[1],
                               {(c.algorithm, c.protocol) for _, c in found})
        if picked is not None:
            return attrs.evolve(next(c for _, c in found if (c.algorithm, c.protocol) == picked),
                                choice="tuner", weighed=why)
    best = min(found, key=lambda o: (o[0], o[1].algorithm, o[1].protocol))[1]
    return attrs.evolve(best, choice="nccl", weighed=why)


def _tuner(system: System, ranks: Sequence[int]) -> tuple[str, int] | None:
    """The tuner plugin the group's network names (its first NIC's model ``tuner``) and the
    group's node (island) count, or None."""
    nic = system.locality.nic(ranks[0])
    name = system.device(nic).model.attr("tuner") if nic else None
    return (name, orders.island_count(system, ranks)) if name else None


def _tuner_loads(profiles: Sequence[Profile], version: Nccl) -> bool:
    """Whether a tuner plugin runs at all: NCCL loads tuners from 2.19 (its ext-tuner
    interface, NVIDIA/nccl v2.19.3-1), and the net plugin's release must ship one
    (transports.EFA_RELEASES: aws-ofi-nccl's from v1.8.0-aws)."""
    if version.release < (2, 19):
        return False
    return all(p.transport is None or p.transport.tuner for p in profiles)


def auto_algorithms(system: System, group: RankGroup, collective: str,
                    among: Sequence[str] = (), nccl: Nccl | None = None) -> list[str]:
    """The algorithms NCCL may pick for this collective on this group: those whose record
    says the release had them for the collective (``Algorithm.nccl``) and whose topology
    conditions hold (``Algorithm.eligible``); ``among`` narrows them."""
    version = nccl or nccl_profile()
    g = Group(system, tuple(group.ranks), collective, nccl=version)
    out = []
    for name in among or algos.costed(collective):
        record = algos.get(name)
        if record.nccl_runs(collective, version.release) and record.eligible(g):
            out.append(name)
    return out
