"""topoc's hierarchical all-reduce: reduce-scatter then all-gather inside each NVLink domain,
an all-reduce across domains per local index. NCCL does not run it: it is selectable by name
and never what ``auto`` picks. Terms: the ring's hops, 2(L-1) inside and 2(m-1) across."""

from __future__ import annotations

from .. import orders
from ..loads import Loads
from ..tuning import Profile, tree_hops
from .base import SAMPLE_ISLANDS, Algorithm, CostError, Group, Shape
from .ring import RING_STEP_SHARE, pipelined_bus

def shape(g: Group) -> Shape:
    """One round of each phase and its number of rounds."""
    system, ranks = g.system, g.ranks
    domains = orders.nvlink_domains(system, ranks)
    if len({len(d) for d in domains}) != 1:      # as schedule refuses it, never an IndexError
        raise CostError("hierarchical all-reduce needs the same number of ranks in every "
                        f"NVLink domain (found {sorted({len(d) for d in domains})})")
    m, L = len(domains), len(domains[0])
    gpu = [x.id for x in system.gpus]
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


HIERARCHICAL = Algorithm(
    "hierarchical", "hierarchical",
    collectives=("allreduce",), protocols=("LL", "LL128", "Simple"),
    shape=shape, latency=latency, bus=pipelined_bus,
    net_steps=lambda p, c: 2.0 * (p.islands - 1),
    planned=("allreduce",), step_share=RING_STEP_SHARE, owner="topoc")
