"""NCCL's PAT (Parallel Aggregated Trees) for reduce-scatter and all-gather, with one GPU per
node: a ring's bytes at three quarters of the rate, a latency in log2 of the nodes and a linear
part. NCCL_ALGO_PAT appears at v2.23.4-1 (src/include/nccl_common.h line 61); tuning.cc enables
it only where nNodes == nRanks ("PAT only supports 1 GPU per node", v2.23.4-1 line 112) and for
Simple (line 179)."""

from __future__ import annotations

import math

from ..tuning import HW_LAT, Profile
from .base import Algorithm, CostError, Group, Shape, one_per_island, since
from .ring import pipelined_bus, ring_loads

#: tuning.cc (v2.23.4-1 to v2.30): PAT's base latency (8 us; baseLatencies[PAT] from 2.28), its
#: log2i(nNodes) network steps at interLat / 3.5 ("Log latency"), interLat the tree's network
#: hop since ppn is 1, and nRanks x 2.8 us ("Still a linear part"); busBw *= .75.
PAT_BASE_US = 8.0
PAT_LOG_DIVISOR = 3.5
PAT_PER_RANK_US = 2.8
PAT_BANDWIDTH = 0.75
from .tree import log_steps


def shape(g: Group) -> Shape:
    if not one_per_island(g.system, g.ranks):
        raise CostError("PAT runs with one GPU per node (island), as NCCL uses it")
    return Shape((ring_loads(g, len(g.ranks)),))


def latency(p: Profile, collective: str, n: int, proto: int) -> float:
    """NCCL's: 8 + log2i(nNodes) x interLat / 3.5 + nRanks x 2.8 us (tuning.cc, PAT)."""
    inter = HW_LAT[("net", "tree")][proto] + p.net_declared
    return PAT_BASE_US + int(math.log2(p.islands)) * inter / PAT_LOG_DIVISOR + \
        n * PAT_PER_RANK_US


def bus(p: Profile, collective: str, n: int, size: int, proto: int, raw: float) -> float:
    """A ring's pipeline at three quarters (tuning.cc: ``if (a == NCCL_ALGO_PAT) busBw *=
    .75``)."""
    return PAT_BANDWIDTH * pipelined_bus(p, collective, n, size, proto, raw)


PAT = Algorithm(
    "pat", "PAT",
    collectives=("reducescatter", "allgather"), protocols=("Simple",),
    shape=shape, latency=latency, bus=bus, net_steps=log_steps,
    nccl={"reducescatter": since((2, 23)), "allgather": since((2, 23))},
    eligible=lambda g: one_per_island(g.system, g.ranks))
