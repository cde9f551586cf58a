"""NCCL's NVLS (NVLink SHARP): every GPU sends its data to the NVLink switches, which reduce
(or copy) it and multicast the result back; one host (HGX) or a multi-host NVLink domain
(NVL72). Terms: NVLS's latency per host (hwLat[NVLINK][NVLS], fitted per host on NVL72), plus
hwLat[NET][NVLS] across islands; nvlsEfficiency and the channel NCCL keeps for
synchronisation; the pipeline's fill and drain on one host (NVLS_FILL_LOOPS)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...ir.system import System
from .. import algorithms as alg
from .. import orders
from ..loads import Loads
from ..tuning import (BUS_FACTOR, NVLS_CHANNELS, NVLS_EFFICIENCY, NVLS_FILL_LOOPS, NVLS_LAT_NET,
                      NVLS_MAX_HEADS, NVLS_NCHANNELS, Profile, nvls_chunk)
from .base import (Algorithm, CostError, Group, Plan, ScheduleError, Shape, arch_of, hosts,
                   raw_gbs, since)

#: Single-island groups this small run rings, not NVLS: NCCL disables NVLS on 2 GPUs or fewer
#: (nvls.cc: gpuCount <= 2) and its model prefers the ring up to 4 Hopper and 5 Blackwell GPUs
#: (NCCL 2.27: a ring on 4 H200 and 5 B200, NVLS on 6 B200 and 8 H100; ml-engineering).
NVLS_RING_UP_TO = {2: 4, 3: 5}


def nvls_loads(g: Group, agents: Sequence[str]) -> Loads:
    system, ranks, collective = g.system, g.ranks, g.collective
    loads = Loads(g.res)
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


def shape(g: Group) -> Shape:
    agents = g.system.locality.nvlink_agents(g.ranks)
    if agents is None:
        raise CostError(NO_SWITCHES)
    return Shape(((nvls_loads(g, agents), 1.0),))


def latency(p: Profile, collective: str, n: int, proto: int) -> float:
    return p.nccl.nvls_lat * p.hosts + (NVLS_LAT_NET if p.islands > 1 else 0.0)


def bus(p: Profile, collective: str, n: int, size: int, proto: int, raw: float) -> float:
    return raw * (NVLS_EFFICIENCY.get(p.arch, 0.0) * (NVLS_CHANNELS - 1) / NVLS_CHANNELS)


def fill_seconds(p: Profile, collective: str, n: int, size: int) -> float:
    """What NVLS's pipeline fill and drain add to a one-host NVLS all-reduce: NVLS_FILL_LOOPS
    loops of channels x heads x chunk bytes (NCCL's chunk shrinks with the size, so the fill
    does too) at NVLS's bandwidth. Multi-host NVLink domains (NVL72) are left out: their NVLS
    latency per host was fitted on rows that already hold their fill (docs/cost.md)."""
    if collective != "allreduce" or p.hosts != 1 or p.islands != 1:
        return 0.0
    concurrent = NVLS_NCHANNELS.get(p.arch, 16) * min(n, NVLS_MAX_HEADS)
    loop = concurrent * nvls_chunk(size, concurrent)
    gbs = bus(p, collective, n, size, 2, raw_gbs(p, collective, n)) * 1e9
    return NVLS_FILL_LOOPS * min(size, loop) * BUS_FACTOR[collective](n) / gbs if gbs > 0 \
        else 0.0


def min_ranks(system: System, ranks: Sequence[int]) -> int:
    """The largest single-island group NCCL leaves on rings rather than NVLS."""
    if orders.island_count(system, ranks) > 1:
        return 2
    return NVLS_RING_UP_TO.get(arch_of(system, ranks), 2)


def eligible(g: Group) -> bool:
    return len(g.ranks) > min_ranks(g.system, g.ranks) and \
        g.system.locality.nvlink_agents(g.ranks) is not None


NO_SWITCHES = ("NVLS needs every rank of the group in one NVLink domain whose switches all "
               "have 'reduction = true'")


def layout(system: System, ranks: Sequence[int], collective: str, count: int,
           root: int) -> tuple[dict, int]:
    """The group's reducing NVLink switches as agents; slots spread over them."""
    agents = system.locality.nvlink_agents(ranks)
    if agents is None:
        raise ScheduleError(NO_SWITCHES)
    return {"agents": agents}, len(ranks) * math.ceil(len(agents) / len(ranks))


def transfers(s) -> int:
    return s.chunks * (2 * s.n if s.collective == "allreduce" else s.n + 1)


def rounds(s, only: int | None) -> alg.Rounds:
    n = s.n
    agents = [n + a for a in range(len(s.agents))]
    everyone, slots = range(n), range(s.chunks)
    if s.collective == "allreduce":
        return alg.star(agents, everyone, slots, "reduce", None, only=only)
    if s.collective == "reducescatter":
        k = s.chunks // n
        return alg.star(agents, everyone, slots, "reduce", lambda c: [c // k], only=only)
    if s.collective == "allgather":
        k = s.chunks // n
        steps = alg.star(agents, everyone, slots, "copy", None, only=only)
        steps[0] = [st for st in steps[0] if st[2] // k == st[0]]   # owners send their slots
        return steps
    if s.collective == "broadcast":
        return alg.star(agents, everyone, slots, "copy", None, src_ranks=[s.root], only=only)
    return alg.star(agents, everyone, slots, "reduce", lambda c: [s.root], only=only)


PLAN = Plan(layout, lambda n, count, collective, natural:
            n if collective in ("reducescatter", "allgather") else 1, transfers, rounds)


NVLS = Algorithm(
    "nvls", "NVLS",
    collectives=("allreduce", "reducescatter", "allgather", "broadcast", "reduce"),
    protocols=("Simple",),
    shape=shape, latency=latency, bus=bus, net_steps=lambda p, c: 1.0,
    planned=("allreduce", "reducescatter", "allgather", "broadcast", "reduce"), plan=PLAN,
    # NCCL_ALGO_NVLS appears at v2.17.1-1 (src/include/devcomm.h). tuning.cc lets it serve
    # reduce-scatter and all-gather at v2.17.1-1 (lines 143-144) and from v2.19.3-1 (lines
    # 168-169), not at v2.18.x (v2.18.3-1 lines 168-169: ring only); broadcast and reduce
    # run rings only in every release.
    nccl={"allreduce": since((2, 17)),
          "reducescatter": (((2, 17), (2, 18)), ((2, 19), None)),
          "allgather": (((2, 17), (2, 18)), ((2, 19), None))},
    eligible=eligible, fill=fill_seconds, hosts=hosts)
