"""Point-to-point algorithms: all-to-all and send/recv as NCCL runs them (``direct``: every
peer at once over its p2p channels; a pipeline stage's send to the next), and the pairwise
all-to-all schedule (round s: rank i with rank i + s), a named variant with direct's loads that
``auto`` never picks. Terms: one step at the ring's hop (the network's across islands), the
transport's p2p fraction across islands, LL at half the bus."""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.system import System
from .. import algorithms as alg
from .. import messages, orders
from ..loads import Loads
from ..tuning import Profile, tree_hops
from .base import Algorithm, CostError, Group, Plan, Shape, gpu_ids, since

ALLTOALL_MAX_RANKS = 256    # all-to-all loads are counted pair by pair over two islands


def direct_loads(g: Group) -> Loads:
    """Send/recv along the group; all-to-all: every rank sends 1/n of its buffer to every
    rank at once (NCCL's p2p channels serve the peers concurrently). Across more than two
    islands the all-to-all is counted on the first island's ranks: their traffic inside the
    island, and to and from one other island standing for all m - 1 (uniform islands and a
    uniform fabric make every island's NICs carry the same), so the count does not grow with
    the island count."""
    system, ranks = g.system, g.ranks
    loads = Loads(g.res)
    gpu = gpu_ids(system)
    if g.collective == "sendrecv":
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


def shape(g: Group) -> Shape:
    counted = sum(len(p) for p in orders.island_parts(g.system, g.ranks)[:2])
    if g.collective == "alltoall" and counted > ALLTOALL_MAX_RANKS:
        raise CostError(f"all-to-all cost is modelled up to {ALLTOALL_MAX_RANKS} ranks in "
                        f"two islands (the group has {counted})")
    return Shape(((direct_loads(g), 1.0),))


def latency(p: Profile, collective: str, n: int, proto: int) -> float:
    """Every peer at once (p2p channels): one step each way."""
    base, intra, net = tree_hops(p, "ring", proto)
    return base + (net if p.islands > 1 else intra)


def bus(p: Profile, collective: str, n: int, size: int, proto: int, raw: float) -> float:
    if p.transport is not None and p.islands > 1:
        raw *= p.transport.p2p_efficiency
    return raw * (0.5 if proto == 0 else 1.0)


def _pairwise_pipeline(p: Profile, collective: str, n: int, size: int, proto: int) -> float:
    return messages.alltoall_seconds(p, collective, n, size, proto, ll=False)


def layout(system: System, ranks: Sequence[int], collective: str, count: int,
           root: int) -> tuple[dict, int]:
    """No orders: a block per peer for all-to-all, one slot a stage for send/recv."""
    return {}, len(ranks) if collective == "alltoall" else 1


def transfers(s) -> int:
    return (s.n - 1) * s.chunks if s.collective == "sendrecv" else s.n * s.chunks


def direct_rounds(s, only: int | None) -> alg.Rounds:
    if s.collective == "sendrecv":
        return alg.sendrecv(s.n, s.chunks, only)
    return alg.alltoall_direct(s.n, s.chunks // s.n, only)


DIRECT_PLAN = Plan(layout, lambda n, count, collective, natural:
                   n if collective == "alltoall" else 1, transfers, direct_rounds)
PAIRWISE_PLAN = Plan(layout, lambda n, count, collective, natural: n, transfers,
                     lambda s, only: alg.alltoall_pairwise(s.n, s.chunks // s.n, only))


DIRECT = Algorithm(
    "direct", "direct (p2p)",
    collectives=("alltoall", "sendrecv"), protocols=("LL", "Simple"),
    shape=shape, latency=latency, bus=bus, net_steps=lambda p, c: 1.0,
    planned=("alltoall", "sendrecv"), plan=DIRECT_PLAN,
    # ncclSend/ncclRecv arrived in NCCL 2.7; all-to-all is grouped send/recv
    nccl={"alltoall": since((2, 7)), "sendrecv": since((2, 7))},
    pipeline=messages.alltoall_seconds)

PAIRWISE = Algorithm(
    "pairwise", "pairwise all-to-all",
    collectives=("alltoall",), protocols=("LL", "Simple"),
    shape=shape, latency=latency, bus=bus, net_steps=lambda p, c: 1.0,
    planned=("alltoall",), plan=PAIRWISE_PLAN, pipeline=_pairwise_pipeline)   # NCCL's p2p in another order
