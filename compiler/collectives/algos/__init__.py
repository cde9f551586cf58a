"""The registry of collective algorithms: one record each (``base.Algorithm``), one module
each. The cost model, the schedule stage, the CLI and the reports read algorithms from here;
adding one is a module and a line in ``REGISTRY``. A serving engine's own all-reduce kernels
(one-shot and two-shot all-reduce, ``oneshot.py``) are records with ``owner="engine"`` and no
NCCL releases: selectable by name and by an engine's rule (``collectives.engines``), never
NCCL's.

The functions below are the terms every algorithm's time is made of, each dispatched to the
record: the size-independent latency (``latency_us``; the one NCCL's own choice sees,
``selection_us``), the bandwidth (``bus_gbs``), the network's message pipeline
(``pipeline_seconds``) and NVLS's fill (``fill_seconds``).
"""

from __future__ import annotations

from ..tuning import PROTOCOLS, Profile
from .alltoall import DIRECT, PAIRWISE
from .base import Algorithm, CostError, raw_gbs
from .collnet import COLLNET_CHAIN
from .hierarchical import HIERARCHICAL
from .nvls import NVLS
from .nvlstree import NVLS_TREE
from .oneshot import MULTIMEM, ONESHOT, TWOSHOT
from .pat import PAT
from .ring import RING
from .tree import TREE

#: Every algorithm, in the order the CLI lists them and ``auto`` weighs them.
REGISTRY: dict[str, Algorithm] = {a.name: a for a in (
    RING, TREE, NVLS, HIERARCHICAL, DIRECT, PAIRWISE, NVLS_TREE, PAT, COLLNET_CHAIN, ONESHOT,
    TWOSHOT, MULTIMEM)}


def get(name: str) -> Algorithm:
    """The record named ``name`` (KeyError when none is)."""
    return REGISTRY[name]


def costed(collective: str) -> tuple[str, ...]:
    """The algorithms the cost model prices for ``collective``, in registry order."""
    return tuple(a.name for a in REGISTRY.values() if collective in a.collectives)


def planned(collective: str) -> tuple[str, ...]:
    """The algorithms the schedule stage lays out for ``collective``."""
    return tuple(a.name for a in REGISTRY.values() if collective in a.planned)


def not_nccl() -> frozenset[str]:
    """Algorithms NCCL never runs (topoc's own, an engine's): selectable by name only."""
    return frozenset(a.name for a in REGISTRY.values() if a.owner != "NCCL")


def protocols(name: str) -> tuple[int, ...]:
    """Indices into PROTOCOLS of the protocols ``name`` runs with."""
    return REGISTRY[name].protocol_indices()


def _transport_us(p: Profile, a: Algorithm, collective: str, proto: int) -> float:
    """What the network's transport adds (transports.py): once per operation, and per network
    step of the bulk protocols (LL128, Simple), of which a ring's pipeline exposes a share."""
    t = p.transport
    if t is None or p.islands < 2:
        return 0.0
    if proto == 0:
        return t.op_us
    return t.op_us + t.step_us * a.net_steps(p, collective) * a.step_share


def latency_us(p: Profile, collective: str, n: int, proto: int) -> float:
    """The size-independent time in us: NCCL's base latency plus per-hop latencies on the
    critical path (protocol index ``proto``: 0 LL, 1 LL128, 2 Simple), and the transport's."""
    a = REGISTRY[p.algorithm]
    return a.latency(p, collective, n, proto) + _transport_us(p, a, collective, proto)


def selection_us(p: Profile, collective: str, n: int, proto: int) -> float:
    """The latency ``auto`` compares, as NCCL's own choice sees it (ncclTopoGetAlgoTime): the
    per-hop latencies of ``latency_us`` and, on every network step, the latency the net plugin
    declares, twice for Simple (tuning.cc: interLat += graphs[a]->latencyInter, "also add the
    flush extra latency"), in place of what the transport really adds (fitted, and unknown to
    NCCL). So ``auto`` runs what NCCL would choose and reports the time the transport gives
    it."""
    a = REGISTRY[p.algorithm]
    lat = a.latency(p, collective, n, proto)
    if not a.declares(p.nccl):
        return lat      # NCCL 2.18 charges NVLS-tree no network latency of the plugin's
    t = p.transport
    if t is not None and p.islands > 1 and t.declared_us:
        lat += t.declared_us * a.net_steps(p, collective) * (2 if proto == 2 else 1)
    return lat


def plateau(p: Profile, collective: str, n: int, size: int, proto: int) -> float:
    """The factor NCCL's choice puts on the profile's latency at this size (1 for most)."""
    return REGISTRY[p.algorithm].plateau(p, collective, n, size, proto)


def idle_us(p: Profile, collective: str, n: int, size: int, proto: int) -> float:
    """The part of ``latency_us`` a call of ``size`` bytes does not wait for when calls run back
    to back (0 for most: ``Algorithm.idle``)."""
    return REGISTRY[p.algorithm].idle(p, collective, n, size, proto)


def net_steps(p: Profile, collective: str) -> float:
    """Network steps on the critical path of the profile's algorithm."""
    return REGISTRY[p.algorithm].net_steps(p, collective)


def bus_gbs(p: Profile, collective: str, n: int, size: int, proto: int) -> float:
    """busbw (GB/s) the bandwidth term gives at this size and protocol, NCCL's refinements
    applied: protocol efficiency, per-channel ceilings, fewer channels for small messages."""
    return REGISTRY[p.algorithm].bus(p, collective, n, size, proto, raw_gbs(p, collective, n))


def pipeline_seconds(p: Profile, collective: str, n: int, size: int, proto: int) -> float:
    """The least time the group's messages across islands take (messages.py; 0 where the
    transport charges nothing per message)."""
    return REGISTRY[p.algorithm].pipeline(p, collective, n, size, proto)


def fill_seconds(p: Profile, collective: str, n: int, size: int) -> float:
    """What a pipeline's fill and drain add (NVLS on one host; 0 elsewhere)."""
    return REGISTRY[p.algorithm].fill(p, collective, n, size)


__all__ = ["REGISTRY", "Algorithm", "CostError", "PROTOCOLS", "RING", "TREE", "NVLS",
           "NVLS_TREE", "PAT", "COLLNET_CHAIN", "ONESHOT", "TWOSHOT", "MULTIMEM", "DIRECT", "PAIRWISE", "HIERARCHICAL", "get", "costed", "planned",
           "not_nccl", "protocols", "latency_us", "selection_us", "idle_us", "net_steps", "bus_gbs",
           "pipeline_seconds", "fill_seconds"]
