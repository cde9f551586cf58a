"""Stage: the System IR as a networkx link graph (``graph``).

One node per device (attributes ``kind`` and ``model``), one edge per link keyed by the link id,
with the lanes already aggregated: ``link`` (the IR object), ``cls``, ``lanes``, ``bandwidth``
(bytes/s per direction, all lanes) and ``latency`` (s). A MultiGraph, because two link types can
join the same pair of devices.
"""

from __future__ import annotations

import networkx as nx

from ..base.gcpause import gc_paused
from . import system
from .system import System


@gc_paused()
def graph(system: System) -> nx.MultiGraph:
    """Build the link graph of ``system`` (linear in devices plus links)."""
    g = nx.MultiGraph(name=system.name)
    g.add_nodes_from((d.id, {"kind": d.kind, "model": d.model.name}) for d in system.devices)
    g.add_edges_from(
        (link.src, link.dst, link.id, {"link": link, "cls": link.cls, "lanes": link.lanes,
                                       "bandwidth": link.bandwidth, "latency": link.latency})
        for link in system.links)
    return g


system.VIEWS["graph"] = graph
