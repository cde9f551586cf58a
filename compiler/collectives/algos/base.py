"""The record every collective algorithm is, and what its terms share.

An ``Algorithm`` says which collectives it serves (costed, and planned step by step), its
protocols, when NCCL may pick it (per release, from NCCL's source, and on which topologies),
and its terms: the size-independent latency, the bandwidth refinements, the network steps and
message pipeline, and the link loads its schedule puts on the graph. The cost model
(``compiler.collectives.cost``) reads nothing else about an algorithm, so adding one is a
module under ``algos/`` and a line in the registry (``algos/__init__.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import attrs

from ...base.arrays import unique
from ...ir.system import System
from .. import orders
from ..loads import Loads, Resources
from ..tuning import BUS_FACTOR, PROTOCOLS, Profile, arch_index
from ..versions import Nccl

#: Groups spanning more islands are costed on the orders over their first SAMPLE_ISLANDS
#: islands (cost.py's module docstring says why that suffices).
SAMPLE_ISLANDS = 4
#: A span of NCCL releases, (first, first one without) as (2, MINOR) tuples; None: open.
Span = tuple[tuple[int, ...], "tuple[int, ...] | None"]
#: Loads of one phase (bytes per unit size) and how many rounds of it run.
Phase = tuple[Loads, float]


def since(first: tuple[int, ...], until: tuple[int, ...] | None = None) -> tuple[Span, ...]:
    """The releases from ``first`` up to (not including) ``until``."""
    return ((first, until),)


@attrs.frozen
class Group:
    """What an algorithm's loads and eligibility read of the group: the system, its ranks,
    the collective, the routing resources and the islands sampled (``SAMPLE_ISLANDS``)."""

    system: System
    ranks: tuple[int, ...]
    collective: str
    res: Resources | None = None
    sample: tuple[int, ...] = ()
    nccl: Nccl | None = None
    #: what the other groups of the same traffic line put on the resources at the same time
    #: (bytes per unit of this group's size; ``loads.crowding``); None: the group alone
    background: dict | None = attrs.field(default=None, eq=False)


@attrs.frozen
class Shape:
    """An algorithm's loads on a group: its phases; NVLS-tree also its NVLS part and network
    part apart (``nvls``, ``net``: seconds per byte) and the network part NCCL charges when it
    chooses (``select``)."""

    phases: tuple[Phase, ...]
    nvls: float | None = None
    net: float | None = None
    select: float | None = None


def _zero(*_args) -> float:
    return 0.0


class ScheduleError(ValueError):
    """A request the system cannot serve (NVLS without a reducing switch, ...)."""


#: Chunks per tree or chain, for pipelining (the schedule stage's default).
PIPELINE = 4


@attrs.frozen(eq=False)
class Plan:
    """How the schedule stage lays an algorithm out step by step (``schedule.Schedule``):
    its orders and natural chunk count on a group (``layout``: keyword fields of the schedule,
    and the chunks), the multiple the chunk count must be (``step``), its channels by default,
    whether the chunk count is fixed at the natural one (rings), how many steps it has
    (``transfers``, counted without materialising them) and its rounds (``rounds``: of one
    position, or of all when None)."""

    layout: Callable[[System, Sequence[int], str, int, int], tuple[dict, int]]
    step: Callable[[int, int, str, int], int]
    transfers: Callable[..., int]
    rounds: Callable[..., list]
    channels: Callable[[str], int] = lambda collective: 1
    fixed_chunks: Callable[[str], bool] = lambda collective: False
    #: the natural chunk count when the group's size and the channels alone give it (rings: a
    #: chunk per rank and channel), so a schedule past the chunk bound is refused before any
    #: order is laid out (589,824 ranks were refused after their ring orders, 21.6 s of CPU in
    #: all); None: only ``layout`` knows
    chunks: Callable[[int, int, str], int | None] = lambda n, count, collective: None


@attrs.frozen(eq=False)
class Algorithm:
    """One collective algorithm (a registered record: compared by identity)."""

    name: str                           # as the CLI and every output name it
    title: str                          # as the docs name it
    collectives: tuple[str, ...]        # what the cost model prices it for
    protocols: tuple[str, ...]          # what it runs with (of tuning.PROTOCOLS)
    shape: Callable[[Group], Shape]     # its link loads
    latency: Callable[[Profile, str, int, int], float]   # us: base and per-hop, no transport
    bus: Callable[[Profile, str, int, int, int, float], float]  # busbw GB/s from the raw one
    net_steps: Callable[[Profile, str], float]            # network steps on the critical path
    planned: tuple[str, ...] = ()       # what the schedule stage lays out step by step
    plan: Plan | None = None            # how it lays them out (None: priced only)
    #: the collectives NCCL may pick it for, each with the releases that had it; empty: not an
    #: algorithm NCCL picks (topoc's own, a named variant, a serving engine's)
    nccl: dict[str, tuple[Span, ...]] = attrs.Factory(dict)
    #: where NCCL may pick it on this group (topology conditions), given the release
    eligible: Callable[[Group], bool] = lambda g: True
    step_share: float = 1.0             # of a transport's per-step cost the pipeline exposes
    ring_thresholds: bool = False       # NCCL scales its thread thresholds by the rank count
    pipeline: Callable[[Profile, str, int, int, int], float] = _zero   # seconds, messages.py
    fill: Callable[[Profile, str, int, int], float] = _zero             # seconds, NVLS
    #: hosts whose NVLS start-up its latency pays, from the group (None: the islands)
    hosts: Callable[[System, Sequence[int]], int] | None = None
    #: whether NCCL's choice adds the net plugin's declared latency on its network steps
    declares: Callable[[Nccl], bool] = lambda v: True
    #: the share of its bandwidth NCCL's own choice credits it with on this group (1: all;
    #: the time reported keeps the whole bandwidth)
    credit: Callable[[System, Sequence[int]], float] = lambda system, ranks: 1.0
    #: the factor NCCL's own choice puts on its latency at this size (ring's plateau)
    plateau: Callable[[Profile, str, int, int, int], float] = lambda p, c, n, size, proto: 1.0
    #: the hop latency (us) of ``latency`` a call of this size does not wait for when calls run
    #: back to back, as nccl-tests times them (ring all-reduce's empty LL steps); NCCL's own
    #: choice charges it whole
    idle: Callable[[Profile, str, int, int, int], float] = lambda p, c, n, size, proto: 0.0
    owner: str = "NCCL"                 # whose algorithm it is: NCCL, topoc, an engine

    def protocol_indices(self) -> tuple[int, ...]:
        return tuple(PROTOCOLS.index(p) for p in self.protocols)

    def nccl_runs(self, collective: str, release: tuple[int, ...]) -> bool:
        """Whether NCCL ``release`` had this algorithm for ``collective``."""
        return any(first <= release[:len(first)] and (until is None or release < until)
                   for first, until in self.nccl.get(collective, ()))


# --- what the terms of several algorithms read of a group ---------------------------------

def gpu_ids(system: System) -> list[str]:
    """Each rank's device id, made once per system: every algorithm's loads index it by rank,
    and making it per call cost a pass over every GPU of the world for a group of a few."""
    found = system.memo.get("gpu_ids")
    if found is None:
        found = system.memo["gpu_ids"] = [x.id for x in system.gpus]
    return found


def one_per_island(system: System, ranks: Sequence[int]) -> bool:
    """Every rank of the group on an island of its own (NCCL's PAT condition, nNodes ==
    nRanks); a group of more ranks than the system has islands is not, without a pass over
    its ranks."""
    loc = system.locality
    if len(ranks) > len(loc.island_ranks):      # more ranks than islands: some share one
        return False
    return len({loc.island[r] for r in ranks}) == len(ranks) > 1


def island_agents(system: System, ranks: Sequence[int]):
    """Each island's reducing NVLink switches, or None when some island has none (said at the
    first such island, without asking the rest)."""
    found = []
    for part in orders.island_parts(system, ranks):
        agents = system.locality.nvlink_agents([ranks[p] for p in part])
        if agents is None:
            return None
        found.append(agents)
    return found


def hosts(system: System, ranks: Sequence[int]) -> int:
    """Hosts among the group's GPUs: sets of GPUs joined by PCIe, C2C and socket links (one
    OS image each: a DGX is one host, an NVL72 rack 36 Grace hosts), counted as the distinct
    host parts (``Locality.host_labels``) of the group's GPUs."""
    loc = system.locality
    if loc.system.devices is system.devices:
        # the host parts' labels in numpy (a search over 590,000 GPUs' host links took a
        # second): the GPUs' distinct labels
        import numpy as np

        index = loc.gpu_index[np.asarray(ranks, dtype=np.int64)] if len(ranks) else []
        return len(unique(loc.host_labels[index])) if len(ranks) else 0
    return hosts_by_search(system, ranks)


def hosts_by_search(system: System, ranks: Sequence[int]) -> int:
    """``hosts`` by a search over the host links from each GPU (for a locality view of
    another system's devices, and as the check of the labels' count)."""
    adj = system.locality.host_adj
    seen: set[str] = set()
    count = 0
    for r in ranks:
        start = system.gpus[r].id
        if start in seen:
            continue
        count += 1
        frontier = [start]
        seen.add(start)
        while frontier:
            for other in adj[frontier.pop()]:
                if other not in seen:
                    seen.add(other)
                    frontier.append(other)
    return count


def arch_of(system: System, ranks: Sequence[int]) -> int:
    """NCCL's compute-capability index of the group's first GPU."""
    return arch_index(system.gpus[ranks[0]].model.attr("sm"))


def channels(system: System, ranks: Sequence[int], inside: int) -> int:
    """Channels across islands as NCCL opens them (two per NIC), ``inside`` one island."""
    return orders.net_channels(system, ranks) if orders.island_count(system, ranks) > 1 \
        else inside


class CostError(ValueError):
    """A request the cost model cannot answer (too large an all-to-all, no algorithm)."""


def raw_gbs(p: Profile, collective: str, n: int) -> float:
    """busbw (GB/s) of the profile's Simple protocol on every channel, before any refinement."""
    factor = BUS_FACTOR[collective](n)
    return factor / p.seconds_per_byte / 1e9 if p.seconds_per_byte > 0 else math.inf
