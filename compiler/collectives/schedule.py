"""Stage: a collective on a rank group to a compact ``Schedule`` (``schedule``).

A schedule is stored as its algorithm, its orders (rings per channel, trees, domains) and its
chunking; ``Schedule.rounds()`` materialises the steps on demand, so a ring over 73,728 ranks
costs its order, not its 10^10 steps. Orders are topology-aware: positions are sorted so that
islands (nodes, racks), sockets and PCIe switches stay together, and across islands each
channel's ring leaves and enters every island through the same rail.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from . import algorithms as alg
from ..base.gcpause import gc_paused
from ..base.units import byte_count
from ..ir.system import COLLECTIVES, System
from .cost import CostError, sweep
from .orders import SUPPORTED, islands, nvlink_domains, ring_orders, tree_parents
from ..ir.groups import RankGroup

#: Steps a schedule materialises at most (about 1 KiB of memory and 280 bytes of JSON each).
MAX_TRANSFERS = 2_000_000
#: Below this many bytes the fallback rules take the tree for all-reduce (latency-bound sizes).
TREE_BELOW = 256 * 1024
PIPELINE = 4          # chunks per tree / chain, for pipelining
MAX_CHANNELS = 64


class ScheduleError(ValueError):
    """A request the system cannot serve (NVLS without a reducing switch, ...)."""


@attrs.frozen
class Schedule:
    """A collective on a group: algorithm, orders and chunking; steps come from ``rounds()``."""

    collective: str
    algorithm: str
    group: RankGroup
    devices: tuple[str, ...]
    bytes: int
    chunks: int
    channels: int = 1
    root: int | None = None
    agents: tuple[str, ...] = ()
    rings: tuple[tuple[int, ...], ...] = ()
    trees: tuple[tuple[int, ...], ...] = ()
    domains: tuple[tuple[int, ...], ...] = ()

    @property
    def n(self) -> int:
        """Number of ranks in the group."""
        return len(self.group.ranks)

    @property
    def result_buf(self) -> str:
        """Where the result is read: ``out`` for all-to-all and send/recv, else ``in``."""
        return "out" if self.collective in ("alltoall", "sendrecv") else "in"

    def slot_bytes(self, chunk: int) -> int:
        """Bytes of one slot: the size split evenly, the first slots taking the remainder."""
        base, extra = divmod(self.bytes, self.chunks)
        return base + (1 if chunk < extra else 0)

    def owned(self, position: int) -> range:
        """The slots a position owns (reduce-scatter result, all-gather input)."""
        k = self.chunks // self.n
        return range(position * k, (position + 1) * k)

    def transfer_count(self) -> int:
        """How many steps ``rounds()`` would materialise, counted without materialising them."""
        n, k, C = self.n, self.chunks, self.channels
        two_phase = self.collective == "allreduce"
        if self.algorithm == "ring":
            if self.collective in ("broadcast", "reduce"):
                return (n - 1) * k
            return C * n * (n - 1) * (2 if two_phase else 1)
        if self.algorithm == "tree":
            return (n - 1) * k * (2 if two_phase else 1)
        if self.algorithm == "nvls":
            return k * (2 * n if two_phase else n + 1)
        if self.algorithm == "hierarchical":
            m, L = len(self.domains), len(self.domains[0])
            f = k // (m * L)
            return 2 * m * m * f * L * (L - 1) + 2 * L * m * (m - 1) * f
        return (n - 1) * k if self.collective == "sendrecv" else n * k

    def rounds(self, position: int | None = None) -> alg.Rounds:
        """Every round's steps, materialised now; with ``position``, only the steps that group
        position sends or receives (generated directly, same rounds). Refused past
        ``MAX_TRANSFERS``."""
        if position is None:
            self._check_size(self.transfer_count(), "")
            return _ROUNDS[self.algorithm](self, None)
        rounds = _ROUNDS[self.algorithm](self, position)
        self._check_size(sum(map(len, rounds)), f" for position {position}")
        return rounds

    def _check_size(self, count: int, which: str) -> None:
        if count > MAX_TRANSFERS:
            raise ScheduleError(
                f"{self.algorithm} {self.collective} over {self.n} ranks has {count:,} transfers"
                f"{which}; topoc lists at most {MAX_TRANSFERS:,}. Its time: topoc cost; its "
                "orders: --format nccl; one rank's steps: --rank R; or a smaller group")


def _ring_rounds(s: Schedule, only: int | None) -> alg.Rounds:
    n, C = s.n, s.channels
    if s.collective in ("broadcast", "reduce"):
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


def _tree_rounds(s: Schedule, only: int | None) -> alg.Rounds:
    if s.collective == "allreduce":       # the chunks split evenly over every channel's 2 trees
        per = s.chunks // len(s.trees)
        parts = [range(i * per, (i + 1) * per) for i in range(len(s.trees))]
        up = alg.merge(*(alg.tree_reduce(t, p, only) for t, p in zip(s.trees, parts)))
        down = alg.merge(*(alg.tree_broadcast(t, p, only) for t, p in zip(s.trees, parts)))
        return up + down
    if s.collective == "broadcast":
        return alg.tree_broadcast(s.trees[0], range(s.chunks), only)
    return alg.tree_reduce(s.trees[0], range(s.chunks), only)


def _nvls_rounds(s: Schedule, only: int | None) -> alg.Rounds:
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


def _hierarchical_rounds(s: Schedule, only: int | None) -> alg.Rounds:
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


_ROUNDS = {
    "ring": _ring_rounds,
    "tree": _tree_rounds,
    "nvls": _nvls_rounds,
    "hierarchical": _hierarchical_rounds,
    "direct": lambda s, only: alg.sendrecv(s.n, s.chunks, only) if s.collective == "sendrecv"
    else alg.alltoall_direct(s.n, s.chunks // s.n, only),
    "pairwise": lambda s, only: alg.alltoall_pairwise(s.n, s.chunks // s.n, only),
}


# ---- the stage -------------------------------------------------------------------------------


def choose_algorithm(system: System, group: RankGroup, collective: str, nbytes: int) -> str:
    """``auto``: the algorithm the cost model predicts fastest (``collectives.cost``), as NCCL's
    tuner picks; pairwise all-to-all and direct send/recv, which have no rival. Should the cost
    model refuse, the rules of thumb decide among NCCL's algorithms: NVLS inside a reducing
    NVLink domain, the tree for small all-reduces across islands, else the ring."""
    if collective == "sendrecv":
        return "direct"
    if collective == "alltoall":
        return "pairwise"
    try:
        return sweep(system, group, collective, [nbytes], among=SUPPORTED[collective])[0].algorithm
    except CostError:
        pass
    if len(group.ranks) > 1 and system.locality.nvlink_agents(group.ranks):
        return "nvls"
    if collective == "allreduce" and nbytes < TREE_BELOW and len(islands(system, group.ranks)) > 1:
        return "tree"
    return "ring"                # hierarchical is topoc's own: never picked, only named


@gc_paused()
def schedule(system: System, group: RankGroup, collective: str, algorithm: str = "auto",
             nbytes: int = 2**30, channels: int | None = None, chunks: int | None = None,
             root: int = 0) -> Schedule:
    """Plan ``collective`` over ``group``; raises ScheduleError for impossible requests,
    TypeError for arguments of the wrong type and ValueError for a size that is not a finite,
    positive whole number of bytes."""
    if not isinstance(system, System) or not isinstance(group, RankGroup):
        raise TypeError(f"schedule needs a System and a RankGroup, not "
                        f"{type(system).__name__} and {type(group).__name__}")
    for name, value in (("channels", channels), ("chunks", chunks), ("root", root)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"{name} must be a whole number, not {type(value).__name__}")
    if not isinstance(collective, str) or not isinstance(algorithm, str):
        raise TypeError("collective and algorithm are names (strings)")
    nbytes = byte_count(nbytes, "nbytes")
    n = len(group.ranks)
    if collective not in COLLECTIVES:
        raise ScheduleError(f"unknown collective '{collective}' (one of {', '.join(COLLECTIVES)})")
    if n < 1:
        raise ScheduleError("the group is empty")
    if collective in ("alltoall", "sendrecv") and n < 2:
        raise ScheduleError(f"{collective} needs at least 2 ranks")
    if not 0 <= root < n:
        raise ScheduleError(f"root {root} is not a position of the group (0..{n - 1})")
    if nbytes < 1:
        raise ScheduleError("the size must be at least 1 byte")
    if algorithm == "auto":
        algorithm = choose_algorithm(system, group, collective, nbytes)
    if algorithm not in SUPPORTED[collective]:
        raise ScheduleError(f"{collective} has no '{algorithm}' algorithm here (one of "
                            f"{', '.join(SUPPORTED[collective])}, or auto)")
    channels = channels or (2 if algorithm == "ring" and collective != "broadcast" and
                            collective != "reduce" else 1)
    if not 1 <= channels <= MAX_CHANNELS:
        raise ScheduleError(f"channels must be 1..{MAX_CHANNELS}")
    devices = tuple(system.gpus[r].id for r in group.ranks)
    kw: dict = {"root": root if collective in ("broadcast", "reduce") else None}
    if algorithm == "ring":
        kw["rings"] = tuple(ring_orders(system, group.ranks, channels))
        natural = PIPELINE * channels if collective in ("broadcast", "reduce") else n * channels
    elif algorithm == "tree":
        kw["trees"] = tuple(tree_parents(system, group.ranks, root, channels))
        natural = 2 * PIPELINE * channels
    elif algorithm == "nvls":
        agents = system.locality.nvlink_agents(group.ranks)
        if agents is None:
            raise ScheduleError("NVLS needs every rank of the group in one NVLink domain whose "
                                "switches all have 'reduction = true'")
        kw["agents"] = agents
        natural = n * math.ceil(len(agents) / n)
    elif algorithm == "hierarchical":
        domains = nvlink_domains(system, group.ranks)
        if len({len(d) for d in domains}) != 1:
            raise ScheduleError("hierarchical all-reduce needs the same number of ranks in every "
                                f"NVLink domain (found {sorted({len(d) for d in domains})})")
        kw["domains"] = tuple(domains)
        natural = len(domains) * len(domains[0])
    else:
        natural = n if collective == "alltoall" else 1
    chunks = chunks or natural
    step = {"ring": n * channels if collective not in ("broadcast", "reduce") else 1,
            "tree": 2 * channels if collective == "allreduce" else 1, "hierarchical": natural,
            "nvls": n if collective in ("reducescatter", "allgather") else 1,
            "direct": n if collective == "alltoall" else 1,
            "pairwise": n}[algorithm]
    if chunks % step or chunks < 1:
        raise ScheduleError(f"{algorithm} {collective} over {n} ranks needs a chunk count that is a "
                            f"multiple of {step}, not {chunks}")
    if algorithm == "ring" and collective not in ("broadcast", "reduce") and chunks != natural:
        raise ScheduleError(f"ring {collective} uses one chunk per rank and channel "
                            f"({natural}); change --channels instead")
    if chunks > 1_000_000:
        raise ScheduleError("more than 1,000,000 chunks")
    return Schedule(collective, algorithm, group, devices, nbytes, chunks, channels, **kw)
