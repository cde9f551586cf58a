"""Stage: a collective on a rank group to a compact ``Schedule`` (``schedule``).

A schedule is stored as its algorithm, its orders (rings per channel, trees, domains) and its
chunking; ``Schedule.rounds()`` materialises the steps on demand, so a ring over 73,728 ranks
costs its order, not its 10^10 steps. Orders are topology-aware: positions are sorted so that
islands (nodes, racks), sockets and PCIe switches stay together, and across islands each
channel's ring leaves and enters every island through the same rail.
"""

from __future__ import annotations

import attrs

from . import algorithms as alg
from ..base.gcpause import gc_paused
from ..base.units import byte_count
from ..ir.system import COLLECTIVES, System
from . import algos
from .cost import CostError
from .coster import sweep
from .algos import DIRECT, NVLS, PAIRWISE, RING, TREE
from .algos.base import ScheduleError
from .orders import islands
from ..ir.groups import RankGroup

#: The algorithms the schedule stage lays out, per collective (the registry's ``planned``).
SUPPORTED = {c: algos.planned(c) for c in COLLECTIVES}

#: Steps a schedule materialises at most (about 1 KiB of memory and 280 bytes of JSON each).
MAX_TRANSFERS = 2_000_000
#: Below this many bytes the fallback rules take the tree for all-reduce (latency-bound sizes).
TREE_BELOW = 256 * 1024
MAX_CHANNELS = 64
#: Chunks a schedule has at most.
MAX_CHUNKS = 1_000_000


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
        return algos.get(self.algorithm).plan.transfers(self)

    def rounds(self, position: int | None = None) -> alg.Rounds:
        """Every round's steps, materialised now; with ``position``, only the steps that group
        position sends or receives (generated directly, same rounds). Refused past
        ``MAX_TRANSFERS``."""
        if position is None:
            self._check_size(self.transfer_count(), "")
            return algos.get(self.algorithm).plan.rounds(self, None)
        rounds = algos.get(self.algorithm).plan.rounds(self, position)
        self._check_size(sum(map(len, rounds)), f" for position {position}")
        return rounds

    def _check_size(self, count: int, which: str) -> None:
        if count > MAX_TRANSFERS:
            raise ScheduleError(
                f"{self.algorithm} {self.collective} over {self.n} ranks has {count:,} transfers"
                f"{which}; topoc lists at most {MAX_TRANSFERS:,}. Its time: topoc cost; its "
                "orders: --format nccl; one rank's steps: --rank R; or a smaller group")


# ---- the stage -------------------------------------------------------------------------------


def choose_algorithm(system: System, group: RankGroup, collective: str, nbytes: int) -> str:
    """``auto``: the algorithm the cost model predicts fastest (``collectives.cost``), as NCCL's
    tuner picks; pairwise all-to-all and direct send/recv, which have no rival. Should the cost
    model refuse, the rules of thumb decide among NCCL's algorithms: NVLS inside a reducing
    NVLink domain, the tree for small all-reduces across islands, else the ring."""
    if collective == "sendrecv":
        return DIRECT.name
    if collective == "alltoall":
        return PAIRWISE.name
    try:
        return sweep(system, group, collective, [nbytes], among=SUPPORTED[collective])[0].algorithm
    except CostError:
        pass
    if len(group.ranks) > 1 and system.locality.nvlink_agents(group.ranks):
        return NVLS.name
    if collective == "allreduce" and nbytes < TREE_BELOW and len(islands(system, group.ranks)) > 1:
        return TREE.name
    return RING.name             # hierarchical is topoc's own: never picked, only named


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
    plan = algos.get(algorithm).plan
    channels = channels or plan.channels(collective)
    if not 1 <= channels <= MAX_CHANNELS:
        raise ScheduleError(f"channels must be 1..{MAX_CHANNELS}")
    known = plan.chunks(n, channels, collective) if chunks is None else None
    if known is not None and known > MAX_CHUNKS and \
            not known % plan.step(n, channels, collective, known):
        # the count the layout below would give and refuse (checked before the work)
        raise ScheduleError(f"more than {MAX_CHUNKS:,} chunks")
    devices = tuple(system.gpus[r].id for r in group.ranks)
    kw: dict = {"root": root if collective in ("broadcast", "reduce") else None}
    orders_kw, natural = plan.layout(system, group.ranks, collective, channels, root)
    kw.update(orders_kw)
    chunks = chunks or natural
    step = plan.step(n, channels, collective, natural)
    if chunks % step or chunks < 1:
        raise ScheduleError(f"{algorithm} {collective} over {n} ranks needs a chunk count that is a "
                            f"multiple of {step}, not {chunks}")
    if plan.fixed_chunks(collective) and chunks != natural:
        raise ScheduleError(f"{algorithm} {collective} uses one chunk per rank and channel "
                            f"({natural}); change --channels instead")
    if chunks > MAX_CHUNKS:
        raise ScheduleError(f"more than {MAX_CHUNKS:,} chunks")
    return Schedule(collective, algorithm, group, devices, nbytes, chunks, channels, **kw)
