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
from .incidence import add_edge_data, edge_data
from .system import System


@gc_paused()
def graph(system: System) -> nx.MultiGraph:
    """Build the link graph of ``system`` (linear in devices plus links).

    The adjacency is filled directly, as ``add_nodes_from`` and ``add_edges_from`` would fill
    it for these (distinct, already known) nodes and (uniquely keyed) edges: the same dicts in
    the same order, without networkx's per-edge checks, which cost more than the dicts
    themselves (tests/compiler/ir/test_graph_fast.py compares the two)."""
    g = nx.MultiGraph(name=system.name)
    node, adj = g._node, g._adj
    for d in system.devices:
        if d.id not in node:
            adj[d.id] = {}
            node[d.id] = {"kind": d.kind, "model": d.model.name}
    for link in system.links:
        u, v = link.src, link.dst
        if u not in node or v not in node:      # never for an elaborated system; be exact
            g.add_edge(u, v, link.id, **edge_data(link))
            continue
        near = adj[u]
        keys = near.get(v)
        if keys is None:
            keys = near[v] = {}
            adj[v][u] = keys
        add_edge_data(keys, link)
    return g


def graph_reference(system: System) -> nx.MultiGraph:
    """The same graph through networkx's public API (the definition ``graph`` keeps to)."""
    g = nx.MultiGraph(name=system.name)
    g.add_nodes_from((d.id, {"kind": d.kind, "model": d.model.name}) for d in system.devices)
    g.add_edges_from(
        (link.src, link.dst, link.id, {"link": link, "cls": link.cls, "lanes": link.lanes,
                                       "bandwidth": link.bandwidth, "latency": link.latency})
        for link in system.links)
    return g


system.VIEWS["graph"] = graph
