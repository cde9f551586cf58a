"""NCCL's ring: every channel's ring passes a chunk per step, 2(n-1) steps for all-reduce, n-1
for reduce-scatter and all-gather; broadcast and reduce run one pipelined chain. Inside an
island the ring follows NVLink (or PCIe); across islands NCCL's rings go NET -> GPUs -> NET,
one crossing per island (orders.py). Terms: tuning.cc's ring base and per-hop latencies, LL's
half of the bus bandwidth from NCCL 2.21 (a quarter, or a third, up to 2.20: Nccl.ring_ll_share)
under llMaxBws, LL128's 92 % under perChMaxRingLL128Bws,
fewer channels for small messages (channels_used, thresholds times the rank count)."""

from __future__ import annotations

import math

from collections.abc import Sequence

from ...ir.system import System
from .. import algorithms as alg
from .. import messages, orders
from ..constants import value
from ..loads import Loads
from ..tuning import LL_CHANNEL_GBS, Profile, channels_used, ll_cap, per_channel, tree_hops
from .base import PIPELINE, Algorithm, Group, Plan, Shape, channels, gpu_ids, since

#: The share of a transport's per-step cost a ring exposes: none, its pipeline hides each step's
#: transport work behind the next chunk (constants.py: TCPXO's all-gather rings, +121 % at 8 MiB
#: with half of it exposed).
RING_STEP_SHARE = value("ring_step_share")


def ring_loads(g: Group, n: int) -> tuple[Loads, float]:
    """One round of every channel's ring (bytes per unit size) and the number of rounds."""
    system, ranks, collective = g.system, g.sample, g.collective
    loads = Loads(g.res)
    gpu = gpu_ids(system)
    if collective in ("broadcast", "reduce"):
        ring = orders.ring_orders(system, ranks, 1)[0]
        for a, b in zip(ring, ring[1:]):
            loads.add(gpu[ranks[a]], gpu[ranks[b]], 1.0)
        return loads, 1.0
    count = channels(system, ranks, orders.mesh_lanes(system, ranks))
    for ch, ring in enumerate(orders.ring_orders(system, ranks, count)):
        for i, a in enumerate(ring):
            loads.add(gpu[ranks[a]], gpu[ranks[ring[(i + 1) % len(ring)]]],
                      1.0 / (n * count), ch)
    rounds = 2 * (n - 1) if collective == "allreduce" else n - 1
    return loads, float(rounds)


def shape(g: Group) -> Shape:
    return Shape((ring_loads(g, len(g.ranks)),))


def chain_latency(p: Profile, collective: str, n: int, proto: int) -> float:
    """A ring's latency (us): its steps inside islands at the intra-island hop, its network
    steps at the network hop; broadcast and reduce a chain through every rank."""
    base, intra, net = tree_hops(p, "ring", proto)
    m = p.islands
    if collective in ("allreduce", "reducescatter", "allgather"):
        if m > 1:     # tuning.cc: intraLat = max(intraLat, netOverhead), x3 for Simple
            intra = max(intra, p.net_overhead * (3 if proto == 2 else 1))
        steps = 2 * (n - 1) if collective == "allreduce" else n - 1
        inter = (2 if collective == "allreduce" else 1) * (m - 1)
        return base + (steps - inter) * intra + inter * net
    return base + (n - m) * intra + (m - 1) * net       # broadcast, reduce: a chain


def net_steps(p: Profile, collective: str) -> float:
    """A ring's network steps: 2(m-1) for all-reduce, m-1 for one pass."""
    return (2 if collective == "allreduce" else 1) * (p.islands - 1)


def pipelined_bus(p: Profile, collective: str, n: int, size: int, proto: int, raw: float,
                  scaled: bool = False) -> float:
    """busbw (GB/s) of a ring-like pipeline at this size: fewer channels for small messages,
    LL at half the bus (a quarter or a third up to 2.20) under llMaxBws and, up to 2.20, a
    fitted per-channel ceiling, LL128 at 92 % under its per-channel ceiling."""
    used = channels_used(p, n, size, proto, scaled)
    raw *= used / p.channels
    if proto == 0:     # tuning.cc: LL moves 8 of every 16 bytes, and more sync for reductions
        ll = p.nccl.ring_ll_share or (
            0.25 if p.islands > 1 or collective in ("allreduce", "reduce") else 1 / 3)
        ll_channels = used * LL_CHANNEL_GBS if p.nccl.ll_channel_cap else math.inf
        return min(raw * ll, ll_cap(p), ll_channels)
    if proto == 1:
        return min(raw * 0.92, used * per_channel(p, 0))
    return raw


def bus(p: Profile, collective: str, n: int, size: int, proto: int, raw: float) -> float:
    return pipelined_bus(p, collective, n, size, proto, raw, scaled=True)


def plateau(p: Profile, collective: str, n: int, size: int, proto: int) -> float:
    """NCCL's choice charges a multi-node Simple ring all-reduce its latency x1.4 (x1.9 before
    Ampere) once every rank's share of a channel is 64 bytes or more (ncclTopoGetAlgoTime,
    v2.18 to 2.30: "Plateau effect of ring"); the time reported keeps the latency."""
    if proto == 2 and p.islands > 1 and collective == "allreduce" and \
            size // (p.channels * n) >= 64:
        return 1.9 if p.arch < 1 else 1.4
    return 1.0


ROOTED = ("broadcast", "reduce")


def layout(system: System, ranks: Sequence[int], collective: str, count: int,
           root: int) -> tuple[dict, int]:
    """Every channel's ring; a chunk per rank and channel (a pipelined chain for broadcast
    and reduce)."""
    rings = tuple(orders.ring_orders(system, ranks, count))
    return {"rings": rings}, natural(len(ranks), count, collective)


def natural(n: int, count: int, collective: str) -> int:
    """A chunk per rank and channel (a pipelined chain for broadcast and reduce)."""
    return PIPELINE * count if collective in ROOTED else n * count


def transfers(s) -> int:
    n, k = s.n, s.chunks
    if s.collective in ROOTED:
        return (n - 1) * k
    return s.channels * n * (n - 1) * (2 if s.collective == "allreduce" else 1)


def rounds(s, only: int | None) -> alg.Rounds:
    n, C = s.n, s.channels
    if s.collective in ROOTED:
        head = s.rings[0].index(s.root)
        order = list(s.rings[0][head:] + s.rings[0][:head])
        slots = range(s.chunks)
        if s.collective == "broadcast":
            return alg.chain(order, slots, "copy", only)
        return alg.chain(order[1:] + order[:1], slots, "reduce", only)
    phases_rs, phases_ag = [], []
    for ch, ring in enumerate(s.rings):
        def block(p: int, ch: int = ch) -> list[int]:
            return [p * C + ch]
        if s.collective in ("allreduce", "reducescatter"):
            phases_rs.append(alg.ring_reduce_scatter(ring, block, only))
        if s.collective in ("allreduce", "allgather"):
            phases_ag.append(alg.ring_all_gather(ring, block, only))
    return alg.merge(*phases_rs) + alg.merge(*phases_ag)


PLAN = Plan(layout, lambda n, count, collective, natural:
            1 if collective in ROOTED else n * count,
            transfers, rounds, channels=lambda collective: 1 if collective in ROOTED else 2,
            fixed_chunks=lambda collective: collective not in ROOTED, chunks=natural)


RING = Algorithm(
    "ring", "ring",
    collectives=("allreduce", "reducescatter", "allgather", "broadcast", "reduce"),
    protocols=("LL", "LL128", "Simple"),
    shape=shape, latency=chain_latency, bus=bus, net_steps=net_steps,
    planned=("allreduce", "reducescatter", "allgather", "broadcast", "reduce"), plan=PLAN,
    # NCCL has had rings for every collective since before 2.10 (tuning.cc at v2.10.3-1
    # enables NCCL_ALGO_RING everywhere; broadcast and reduce run rings only)
    nccl={c: since((2, 0)) for c in ("allreduce", "reducescatter", "allgather", "broadcast",
                                     "reduce")},
    step_share=RING_STEP_SHARE, ring_thresholds=True, pipeline=messages.ring_seconds,
    plateau=plateau)
