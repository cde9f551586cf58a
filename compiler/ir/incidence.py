"""Derived view: each device's links, without the networkx graph (``System.incidence``).

Lint's way back to a user's line and the cost model's per-GPU facts ask for the links of a
handful of devices; building the whole networkx graph for them costs more than every check
together on a large cluster. This view is one pass over the links, a list per device, and
``System.links_of`` reads it (or the graph, when something already built it) in the graph's
own order: by neighbour in the order each first appeared, then in declaration order.
"""

from __future__ import annotations

from ..base.gcpause import gc_paused
from . import system
from .system import Link, System


@gc_paused()
def incidence(system: System) -> dict[str, list[Link]]:
    """Device id -> the links with it at one end, in declaration order (a self-loop once)."""
    out: dict[str, list[Link]] = {}
    for link in system.links:
        found = out.get(link.src)
        if found is None:
            found = out[link.src] = []
        found.append(link)
        if link.dst != link.src:
            found = out.get(link.dst)
            if found is None:
                found = out[link.dst] = []
            found.append(link)
    return out


system.VIEWS["incidence"] = incidence
