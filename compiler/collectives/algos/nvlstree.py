"""NCCL's NVLS-tree all-reduce: NVLS inside each island (every GPU up to its island's switches
and back) and, between islands, two trees per channel headed at the channel's GPU of every
island. Terms: NVLS's latency per host and 2 log2(islands) x hwLat[NET][NVLS_TREE] (2.18:
2 (islands - 1)); the NVLS part at NVLS's efficiency, the network part at the links' rate
(tuning.cc: bw = min(intraBw x nvlsEfficiency, interBw, perChMaxNVLSTreeBw)); before 2.28 NCCL
charges it half the network bandwidth beyond two nodes when it chooses."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...ir.system import System
from .. import algorithms as alg
from .. import messages, orders
from ..loads import Loads, crowding
from ..tuning import BUS_FACTOR, NVLS_CHANNELS, NVLS_EFFICIENCY, NVLS_NCHANNELS, Profile
from .base import Algorithm, CostError, Group, Shape, arch_of, gpu_ids, hosts, island_agents, since
from .tree import log_steps


def nvls_tree_channels(system: System, ranks: Sequence[int]) -> int:
    """NVLS-tree's channels: NCCL's NVLS channel count, each headed at its own GPU of every
    island and so its own NIC, bounded by two per NIC of the first island (a multi-node NVLink
    rack has 72 NICs, far more than 16 ring channels use)."""
    loc = system.locality
    first = loc.island[ranks[0]]
    nics = {loc.nic(r) for r in ranks if loc.island[r] == first} - {""}
    return max(2, min(NVLS_NCHANNELS.get(arch_of(system, ranks), 16),
                      orders.CHANNELS_PER_NIC * len(nics)))


def nvls_tree_loads(g: Group, inter: float = 1.0, intra: float = 1.0) -> Loads:
    """NVLS in every island and the trees between islands, each part weighted."""
    system, ranks = g.system, g.sample
    agents_of = system.locality.nvlink_agents
    loads = Loads(g.res)
    gpu = gpu_ids(system)
    parts = orders.islands(system, ranks)
    for part in parts if intra else ():
        agents = agents_of([ranks[p] for p in part])
        for p in part:
            for agent in agents:
                loads.add(gpu[ranks[p]], agent, intra / len(agents))
                loads.add(agent, gpu[ranks[p]], intra / len(agents))
    count = nvls_tree_channels(system, ranks)
    pairs = alg.double_btree(len(parts))
    share = inter * 0.5 / count       # two trees per channel
    for c in range(count):
        heads = [part[(c * len(part) // count) % len(part)] for part in parts]
        for island_parent in pairs:
            for i, up in enumerate(island_parent):
                if up >= 0:
                    a, b = gpu[ranks[heads[i]]], gpu[ranks[heads[up]]]
                    loads.add(a, b, share, c)
                    loads.add(b, a, share, c)
    return loads


def shape(g: Group) -> Shape:
    islands = len({g.system.locality.island[r] for r in g.ranks})
    if islands < 2 or island_agents(g.system, g.ranks) is None:
        raise CostError("NVLS-tree needs two or more islands, each one NVLink domain of "
                        "reducing switches")
    whole = nvls_tree_loads(g)
    crowd = crowding(((whole, 1.0),), g.background)
    # the network part apart: NVLS's efficiency is a property of the NVLink SHARP part,
    # not of the NICs (tuning.cc: min(intraBw x nvlsEfficiency, interBw, ...))
    net = nvls_tree_loads(g, 1.0, 0.0).busiest(crowd)[0]
    select = None
    if islands > 2 and g.nccl.nvls_tree_ch is None:
        # tuning.cc before 2.28 charges NVLS-tree half the inter-node bandwidth beyond two
        # nodes when it chooses (docs/cost.md); ``auto`` chooses with NCCL's charge and
        # reports the time the links give. Loads scale with their bytes: twice ``net``.
        select = 2.0 * net
    nvls_part = nvls_tree_loads(g, 0.0).busiest(crowd)[0]
    return Shape(((whole, 1.0),), nvls_part, net, select)


def latency(p: Profile, collective: str, n: int, proto: int) -> float:
    v = p.nccl
    # tuning.cc: 2 log2i(nNodes) interLat, log2i rounding down; 2.18: 2(m-1)
    levels = int(math.log2(p.islands)) if v.nvls_tree_declared else p.islands - 1
    return v.nvls_lat * p.hosts + 2 * levels * v.nvls_tree_net


def bus(p: Profile, collective: str, n: int, size: int, proto: int, raw: float) -> float:
    factor = BUS_FACTOR[collective](n)
    raw *= NVLS_EFFICIENCY.get(p.arch, 0.0) * (NVLS_CHANNELS - 1) / NVLS_CHANNELS
    if p.island_ranks > 1:
        # Fitted: every GPU's NVLS part moves the whole buffer whatever the node count, so
        # NVLS-tree reaches its islands' NVLS busbw, not that scaled to n ranks' factor.
        raw *= BUS_FACTOR[collective](p.island_ranks) / factor
    if p.net_seconds_per_byte:
        # the trees between islands at the links' rate: NVLS's efficiency is not theirs
        raw = min(raw, factor / p.net_seconds_per_byte / 1e9)
    return raw


def eligible(g: Group) -> bool:
    """Across islands of reducing NVLink switches; over multi-host NVLink islands (NVL72) NCCL
    runs NVLS-tree across two of them only (docs/cost.md)."""
    count = orders.island_count(g.system, g.ranks)
    if count < 2 or (hosts(g.system, orders.first_island_ranks(g.system, g.ranks)) > 1 and
                     count > 2):
        return False
    return island_agents(g.system, g.ranks) is not None


NVLS_TREE = Algorithm(
    "nvlstree", "NVLS-tree",
    collectives=("allreduce",), protocols=("Simple",),
    shape=shape, latency=latency, bus=bus, net_steps=log_steps,
    # NCCL_ALGO_NVLS_TREE appears at v2.18.1-1 (src/include/devcomm.h); tuning.cc disables it
    # on one node (v2.18.3-1 line 260)
    nccl={"allreduce": since((2, 18))},
    eligible=eligible, pipeline=messages.nvls_tree_seconds,
    hosts=lambda system, ranks: hosts(system, orders.first_island_ranks(system, ranks)),
    declares=lambda v: v.nvls_tree_declared)
