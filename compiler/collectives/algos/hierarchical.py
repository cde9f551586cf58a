"""topoc's hierarchical all-reduce: reduce-scatter then all-gather inside each NVLink domain,
an all-reduce across domains per local index. NCCL does not run it: it is selectable by name
and never what ``auto`` picks. Terms: the ring's hops, 2(L-1) inside and 2(m-1) across."""

from __future__ import annotations

from collections.abc import Sequence

from ...ir.system import System
from .. import algorithms as alg
from .. import orders
from ..loads import Loads
from ..tuning import Profile, tree_hops
from .base import SAMPLE_ISLANDS, Algorithm, CostError, Group, Plan, ScheduleError, Shape, gpu_ids
from .ring import RING_STEP_SHARE, pipelined_bus

def _uneven(domains) -> str:
    """Why the domains cannot be used ('' when they can)."""
    if len({len(d) for d in domains}) != 1:
        return ("hierarchical all-reduce needs the same number of ranks in every NVLink "
                f"domain (found {sorted({len(d) for d in domains})})")
    return ""


def shape(g: Group) -> Shape:
    """One round of each phase and its number of rounds."""
    system, ranks = g.system, g.ranks
    domains = orders.nvlink_domains(system, ranks)
    if _uneven(domains):      # as schedule refuses it, never an IndexError
        raise CostError(_uneven(domains))
    m, L = len(domains), len(domains[0])
    gpu = gpu_ids(system)
    inside, across = Loads(g.res), Loads(g.res)
    sample = domains[:SAMPLE_ISLANDS]
    for k, d in enumerate(sample):
        nxt = sample[(k + 1) % len(sample)]
        for i, a in enumerate(d):
            inside.add(gpu[ranks[a]], gpu[ranks[d[(i + 1) % L]]], 1.0 / L)
            across.add(gpu[ranks[a]], gpu[ranks[nxt[i]]], 1.0 / (L * m))
    return Shape(((inside, 2.0 * (L - 1)), (across, 2.0 * (m - 1))))


def latency(p: Profile, collective: str, n: int, proto: int) -> float:
    """Rings inside domains, then across them."""
    base, intra, net = tree_hops(p, "ring", proto)
    return base + 2 * (n // p.islands - 1) * intra + 2 * (p.islands - 1) * net


def layout(system: System, ranks: Sequence[int], collective: str, count: int,
           root: int) -> tuple[dict, int]:
    domains = orders.nvlink_domains(system, ranks)
    if _uneven(domains):
        raise ScheduleError(_uneven(domains))
    return {"domains": tuple(domains)}, len(domains) * len(domains[0])


def transfers(s) -> int:
    m, L = len(s.domains), len(s.domains[0])
    f = s.chunks // (m * L)
    return 2 * m * m * f * L * (L - 1) + 2 * L * m * (m - 1) * f


def rounds(s, only: int | None) -> alg.Rounds:
    m, L = len(s.domains), len(s.domains[0])
    f = s.chunks // (m * L)          # slots per logical piece (pipelining)

    def piece(x: int) -> list[int]:
        return list(range(x * f, (x + 1) * f))
    # Position l of every domain owns pieces l*m .. l*m + m-1: one run of slots.
    local = {p: l for d in s.domains for l, p in enumerate(d)}

    def blocks(p: int) -> range:
        return range(local[p] * m * f, (local[p] + 1) * m * f)
    rs = alg.merge(*(alg.ring_reduce_scatter(d, blocks, only) for d in s.domains))
    across = []
    for l in range(L):
        order = [d[l] for d in s.domains]
        own = {d[l]: piece(l * m + k) for k, d in enumerate(s.domains)}
        across.append(alg.ring_reduce_scatter(order, own.__getitem__, only)
                      + alg.ring_all_gather(order, own.__getitem__, only))
    ag = alg.merge(*(alg.ring_all_gather(d, blocks, only) for d in s.domains))
    return rs + alg.merge(*across) + ag


PLAN = Plan(layout, lambda n, count, collective, natural: natural, transfers, rounds)


HIERARCHICAL = Algorithm(
    "hierarchical", "hierarchical",
    collectives=("allreduce",), protocols=("LL", "LL128", "Simple"),
    shape=shape, latency=latency, bus=pipelined_bus,
    net_steps=lambda p, c: 2.0 * (p.islands - 1),
    planned=("allreduce",), plan=PLAN, step_share=RING_STEP_SHARE, owner="topoc")
