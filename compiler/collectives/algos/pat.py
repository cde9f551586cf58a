"""NCCL's PAT (Parallel Aggregated Trees) for reduce-scatter and all-gather, with one GPU per
node: a ring's bytes in log2(n) latency steps. NCCL_ALGO_PAT appears at v2.23.4-1
(src/include/nccl_common.h line 61); tuning.cc enables it only where nNodes == nRanks
("PAT only supports 1 GPU per node", v2.23.4-1 line 112) and for Simple (line 179)."""

from __future__ import annotations

import math

from ..tuning import BASE_LAT, HW_LAT, Profile
from .base import Algorithm, CostError, Group, Shape, one_per_island, since
from .ring import pipelined_bus, ring_loads
from .tree import log_steps


def shape(g: Group) -> Shape:
    if not one_per_island(g.system, g.ranks):
        raise CostError("PAT runs with one GPU per node (island), as NCCL uses it")
    return Shape((ring_loads(g, len(g.ranks)),))


def latency(p: Profile, collective: str, n: int, proto: int) -> float:
    """log2(n) network steps at the ring's network hop."""
    return BASE_LAT["ring"][proto] * p.nccl.base_scale + \
        math.ceil(math.log2(n)) * HW_LAT[("net", "ring")][proto]


PAT = Algorithm(
    "pat", "PAT",
    collectives=("reducescatter", "allgather"), protocols=("Simple",),
    shape=shape, latency=latency, bus=pipelined_bus, net_steps=log_steps,
    nccl={"reducescatter": since((2, 23)), "allgather": since((2, 23))},
    eligible=lambda g: one_per_island(g.system, g.ranks))
