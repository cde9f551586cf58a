"""Stage: every step of a schedule placed on real links (``route``).

The paths come from ``collectives.paths``; this stage only places a schedule's transfers on
them, so it sits above the scheduler and the cost model sits below it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import attrs
import networkx as nx

from ..ir.system import System

from .paths import ECMP_BUCKETS, NoRoute, RailRouter, Router
from .schedule import Schedule

@attrs.frozen
class Transfer:
    """One step placed on links: participants, slots, buffers, bytes and the link ids crossed."""

    src: int
    dst: int
    src_chunk: int
    dst_chunk: int
    op: str
    src_buf: str
    dst_buf: str
    bytes: int
    links: tuple[str, ...]


def participants(sched: Schedule) -> tuple[str, ...]:
    """Device ids of positions 0..n-1 (the group) then n.. (agents)."""
    return sched.devices + sched.agents


def route(system: System, sched: Schedule, router: Router | RailRouter | None = None,
          position: int | None = None) -> list[list[Transfer]]:
    """Every round of ``sched`` with each step's bytes and links, over the rails NCCL would use
    (``RailRouter``); with ``position`` only the steps that position sends or receives are
    routed (every round is kept, maybe empty)."""
    return [[Transfer(*step) for step in steps]
            for steps in routed_steps(system, sched, router, position)]


def routed_steps(system: System, sched: Schedule, router: Router | RailRouter | None = None,
                 position: int | None = None) -> Iterator[list[tuple]]:
    """``route``'s rounds one at a time, each step a tuple of ``Transfer``'s fields (no object
    per step: a 512-rank ring has a million). A step's links are looked up once per sender,
    receiver and ECMP bucket: a path depends on the flow only through ``flow %
    ECMP_BUCKETS`` (``paths.Router.path``), and a ring sends the same pair every round."""
    router = router or RailRouter(system)
    devs = participants(sched)
    paths: dict[tuple[int, int, int], tuple[str, ...]] = {}
    base, extra = divmod(sched.bytes, sched.chunks)     # ``Schedule.slot_bytes``
    for steps in sched.rounds(position):
        out = []
        for s, d, sc, dc, op, sb, db in steps:
            key = (s, d, sc % ECMP_BUCKETS)
            links = paths.get(key)
            if links is None:
                links = paths[key] = router.path(devs[s], devs[d], sc)
            out.append((s, d, sc, dc, op, sb, db, base + (1 if sc < extra else 0), links))
        yield out
