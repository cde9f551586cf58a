"""Stage: every step of a schedule placed on real links (``route``).

The paths come from ``collectives.paths``; this stage only places a schedule's transfers on
them, so it sits above the scheduler and the cost model sits below it.
"""

from __future__ import annotations

import math
import attrs
import networkx as nx

from ..ir.system import System

from .paths import NoRoute, RailRouter, Router
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
    router = router or RailRouter(system)
    devs = participants(sched)
    out = []
    for steps in sched.rounds(position):
        out.append([Transfer(s, d, sc, dc, op, sb, db, sched.slot_bytes(sc),
                             router.path(devs[s], devs[d], sc))
                    for s, d, sc, dc, op, sb, db in steps])
    return out
