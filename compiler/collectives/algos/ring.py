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


#: The bytes a ring all-reduce's LL chunk is a whole number of: 16 from NCCL 2.22 (all_reduce.h
#: runRing: ``alignUp(divUp(remCount, nranks), 16/sizeof(T))``, v2.22.3-1 to v2.30.7-1); before
#: it 8 per thread (v2.19.3-1 ``minChunkSize = nthreads * (calcBytePerGrain() / sizeof(T))``;
#: v2.20.5-1, v2.21.5-1 enqueue.cc computeCollAlignCount ``NCCL_LL_ALIGNMENT_PER_THREAD /
#: typeSize * nThreads``) with the 96 threads enqueue.cc leaves a one-channel call of a few KiB
#: (it halves NCCL_LL_MAX_NTHREADS, 512, while the bytes are under threads x 8 x nRanks, down to
#: 64, then raises a count under three warps to three: ``nt/WARP_SIZE < 3 ? 3*WARP_SIZE : nt``,
#: v2.18.3-1 to v2.21.5-1).
LL_CHUNK_ALIGN = 16
LL_CHUNK_ALIGN_OLD = 96 * 8


def data_chunks(p: Profile, n: int, size: int) -> int:
    """How many of a ring all-reduce's n chunks carry data on LL: each rank's chunk is ``size /
    n`` rounded up to the alignment, so a call of fewer than n alignments leaves the last
    chunks empty. At most ceil(size / alignment) carry data (exactly that where size / n is
    within one alignment, as at 8 B to 128 B on 8 ranks); the bound keeps the count growing
    with the size."""
    align = LL_CHUNK_ALIGN if p.nccl.release >= (2, 22) else LL_CHUNK_ALIGN_OLD
    return max(1, min(n, -(-size // align)))


def idle(p: Profile, collective: str, n: int, size: int, proto: int) -> float:
    """The hop latency (us) a ring all-reduce on LL does not wait for when calls run back to
    back (nccl-tests' loop) and only m < n - 1 chunks carry data. An empty LL step neither
    reads nor waits for its flags (prims_ll.h LLGenericOp: ``while (nelem > 0)``, v2.18.3-1 to
    v2.30.7-1), so a rank waits only for the chunks with data: the rank that sends chunk 0
    first gets its result back n hops later (n - 1 to reduce it, one to return it), and its
    next call's kernel starts then, while the last ranks still copy. With m chunks a rank spans
    n + m - 1 hops from its first wait to its last, against the 2(n - 1) of full chunks; the
    8 B all-reduce of an 8-GPU node runs 8 of 14 hops (aws-samples' p5 and DeepEP#303's H20:
    12.9 and 12.5 us at 8 B, 15.6 and 15.7 us at 1 KiB). NCCL's own choice charges every hop."""
    steps = 2 * (n - 1)
    if collective != "allreduce" or proto != 0 or n < 3:
        return 0.0
    window = n + data_chunks(p, n, size) - 1
    if window >= steps:
        return 0.0
    base = tree_hops(p, "ring", proto)[0]
    return (chain_latency(p, collective, n, proto) - base) * (steps - window) / steps


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
    plateau=plateau, idle=idle)
