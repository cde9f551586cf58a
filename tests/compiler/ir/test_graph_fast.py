"""The link graph built straight into networkx's dicts is the graph its public API builds:
same nodes, attributes, adjacency order and edge data, on every library system."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.ir.graph import graph, graph_reference

from ...conftest import LIBRARY

FILES = sorted(p for p in LIBRARY.rglob("*.topo") if "\nsystem " in p.read_text())


def _shape(g):
    return (g.graph, list(g.nodes(data=True)),
            [(u, list((v, list(keys.items())) for v, keys in near.items()))
             for u, near in g.adj.items()])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_fast_graph_is_the_reference_graph(path):
    system = topoc.load(path)
    fast, ref = graph(system), graph_reference(system)
    assert _shape(fast) == _shape(ref)
    assert fast.number_of_edges() == ref.number_of_edges() == len(system.links)
    # the edge data dicts are shared by both directions, as networkx shares them
    for u, v, k in list(ref.edges(keys=True))[:50]:
        assert fast[u][v][k] is fast[v][u][k]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_links_of_without_the_graph_lists_what_the_graph_lists(path):
    system = topoc.load(path)
    ids = [d.id for d in system.devices[:200]] + ["no.such.device"]
    light = {i: [lk.id for lk in system.links_of(i)] for i in ids}
    assert not system.has_view("graph")
    system.graph
    assert system.has_view("graph")
    assert light == {i: [lk.id for lk in system.links_of(i)] for i in ids}


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_lazy_adjacency_is_the_graphs_adjacency(path):
    """The router reads ``System.adjacency`` instead of the graph: every device's entry holds
    the graph's neighbours, keys and edge data in the graph's order, and the graph is not
    built for it."""
    from topoc.compiler.ir.incidence import Adjacency
    system = topoc.load(path)
    adj = system.adjacency
    assert isinstance(adj, Adjacency) and not system.has_view("graph")
    ref = graph_reference(system)
    for d in system.devices:
        assert d.id in adj
        assert [(v, list(keys.items())) for v, keys in adj[d.id].items()] == \
            [(v, list(keys.items())) for v, keys in ref.adj[d.id].items()]
    assert "no.such.device" not in adj
    with pytest.raises(KeyError):
        adj["no.such.device"]
