"""NCCL's double binary tree: every channel's two trees, each carrying half the data up
(reduce) and down (broadcast); inside an island a chain, between islands a binary tree of
island heads (orders.tree_parents). NCCL builds trees across nodes only and runs them for
all-reduce; topoc also plans and costs tree broadcast and reduce by name. Terms: tuning.cc's
tree base and per-hop latencies (log2 of the islands between them), the tree correction
factor, LL at 1/3.8, LL128 at 7/9 (one node) or 120/128 under perChMaxTreeLL128Bws, Simple at
92 % under perChMaxTreeBws."""

from __future__ import annotations

import math

from collections.abc import Sequence

from ...ir.system import System
from .. import algorithms as alg
from .. import messages, orders
from ..constants import value
from ..loads import Loads
from ..tuning import TREE_CORRECTION, Profile, channels_used, ll_cap, per_channel, tree_hops
from .base import PIPELINE, Algorithm, Group, Plan, Shape, channels, gpu_ids, hosts, since


#: Sizes (log2 of bytes / 64) below which NCCL corrects a tree's bandwidth (tuning.cc).
TREE_CORRECTED = 23


def tree_loads(g: Group) -> Loads:
    """Every channel's two trees, each carrying its share of the data up and down."""
    system, ranks, collective = g.system, g.sample, g.collective
    loads = Loads(g.res)
    gpu = gpu_ids(system)
    rooted = collective in ("broadcast", "reduce")
    count = 1 if rooted else channels(system, ranks, 1)
    trees = orders.tree_parents(system, ranks, 0, count)
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


def shape(g: Group) -> Shape:
    return Shape(((tree_loads(g), 1.0),))


def latency(p: Profile, collective: str, n: int, proto: int) -> float:
    base, intra, net = tree_hops(p, "tree", proto)
    passes = 2 if collective == "allreduce" else 1
    # tuning.cc: 2 ((nRanks/nNodes - 1) intraLat + log2i(nNodes) interLat), log2i rounding down
    return base + passes * ((n // p.islands - 1) * intra + int(math.log2(p.islands)) * net)


def log_steps(p: Profile, collective: str) -> float:
    """A tree's network steps: up and down log2(m) for all-reduce, one way otherwise."""
    return (2 if collective == "allreduce" else 1) * math.ceil(math.log2(p.islands))


def bus(p: Profile, collective: str, n: int, size: int, proto: int, raw: float) -> float:
    used = channels_used(p, n, size, proto)
    raw *= used / p.channels
    # tuning.cc ncclTopoGetAlgoTime applies the correction for logSize = log2i(nBytes >> 6) in
    # [0, 23) only: not under 64 B, nor from 512 MiB (the table's 24th entry is NVLS-tree's)
    log_size = int(math.log2(size >> 6)) if size >> 6 else -1
    if collective == "allreduce" and 0 <= log_size < TREE_CORRECTED:
        raw *= TREE_CORRECTION[proto][log_size]
    if proto == 0:
        return min(raw / 3.8, ll_cap(p))
    if proto == 1:
        return min(raw * (7 / 9 if p.islands == 1 else 120 / 128),
                   used * per_channel(p, 1))
    return min(raw * 0.92, used * per_channel(p, 2))


def eligible(g: Group) -> bool:
    """NCCL builds trees across nodes only (NVIDIA/nccl#211), multi-host NVLink islands
    (NVL72 racks) included: with MNNVL a node is an NVLink domain (init.cc counts nNodes by the
    ring's first rank per domain) and tuning.cc disables no algorithm for MNNVL (its only
    disables: NVLS-tree on one node, CollNet without the plugin, CollNet-direct without
    NVSwitch). How NCCL weighs it there: ``credit``."""
    return orders.island_count(g.system, g.ranks) >= 2


#: Fitted: the share of the tree's bandwidth NCCL's own choice credits across multi-host NVLink
#: islands. Published NVL72 runs at 20 racks (CoreWeave, 512 MiB to 8 GiB) have a ring's fixed
#: cost (about 4.6 ms, NCCL's LL128 ring latency on 1,440 ranks is 5.6), where topoc's tree
#: would take a third to a half of their time: NCCL's model there prices the tree lower than
#: the links do (its tree graph inside a 72-GPU domain is not modelled). A ring is chosen at
#: every one of those sizes while the credit is under 0.36 (the 512 MiB row); a third is
#: taken. The ring's latency grows with the rank count (tuning.cc: (nsteps - nInterSteps) x
#: intraLat, nsteps = 2 (nRanks - 1)), the tree's with log2 of the racks, so from about 100
#: racks the tree wins below a few GiB and from a few hundred at every size.
MNNVL_TREE_CREDIT = value("mnnvl_tree_credit")


def credit(system: System, ranks: Sequence[int]) -> float:
    """NCCL's credit to the tree's bandwidth when it chooses: ``MNNVL_TREE_CREDIT`` across
    multi-host NVLink islands, else all of it."""
    return MNNVL_TREE_CREDIT if orders.island_count(system, ranks) >= 2 and \
        hosts(system, orders.first_island_ranks(system, ranks)) > 1 else 1.0


def layout(system: System, ranks: Sequence[int], collective: str, count: int,
           root: int) -> tuple[dict, int]:
    """Every channel's two trees (one, rooted at ``root``, for broadcast and reduce)."""
    return {"trees": tuple(orders.tree_parents(system, ranks, root, count))}, \
        2 * PIPELINE * count


def transfers(s) -> int:
    return (s.n - 1) * s.chunks * (2 if s.collective == "allreduce" else 1)


def rounds(s, only: int | None) -> alg.Rounds:
    if s.collective == "allreduce":       # the chunks split evenly over every channel's 2 trees
        per = s.chunks // len(s.trees)
        parts = [range(i * per, (i + 1) * per) for i in range(len(s.trees))]
        up = alg.merge(*(alg.tree_reduce(t, p, only) for t, p in zip(s.trees, parts)))
        down = alg.merge(*(alg.tree_broadcast(t, p, only) for t, p in zip(s.trees, parts)))
        return up + down
    if s.collective == "broadcast":
        return alg.tree_broadcast(s.trees[0], range(s.chunks), only)
    return alg.tree_reduce(s.trees[0], range(s.chunks), only)


PLAN = Plan(layout, lambda n, count, collective, natural:
            2 * count if collective == "allreduce" else 1, transfers, rounds)


TREE = Algorithm(
    "tree", "tree",
    collectives=("allreduce", "broadcast", "reduce"),
    protocols=("LL", "LL128", "Simple"),
    shape=shape, latency=latency, bus=bus, net_steps=log_steps,
    planned=("allreduce", "broadcast", "reduce"), plan=PLAN,
    # tuning.cc (v2.10.3-1 .. v2.30.7-1): broadcast and reduce run rings only
    nccl={"allreduce": since((2, 0))},
    eligible=eligible, credit=credit, pipeline=messages.tree_seconds)
