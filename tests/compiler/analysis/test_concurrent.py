"""A traffic line's groups run at the same time (compiler/analysis/concurrent.py): where they
share links after a failure the line slows down, and healthy groups on links of their own keep
the figures they have alone."""

from __future__ import annotations

from collections import defaultdict

import attrs
import pytest

import topoc
from tests.conftest import library_file
from topoc.compiler.analysis.concurrent import neighbours
from topoc.compiler.analysis.strategy import _alone, _costed, _groups, step
from topoc.compiler.collectives.cost import group_loads
from topoc.compiler.collectives.coster import coster
from topoc.compiler.ir.degrade import Faults, degrade
from topoc.compiler.ir.groups import RankGroup, rank_groups


def _cluster(nodes: int = 4):
    return topoc.load(library_file("h100_cluster.topo"), {"nodes": nodes})


def _line(report, dim):
    return next(f for f in report.flows if f.dim == dim)


@pytest.mark.parametrize("fault", ["cluster.leaf0", "cluster.leaf3", "cluster.node1.pcie5"])
def test_a_lost_rail_slows_the_data_parallel_line_and_the_step(fault):
    system = _cluster()
    p = system.parallel("train")
    healthy = step(system, p)
    after = step(degrade(_cluster(), Faults((fault,))).system, p)
    # the rail's GPUs reach the network over another GPU's NIC (PXN), a NIC whose own
    # data-parallel group sends at the same moment: both wait for it
    assert _line(after, "dp").cost.time > 1.8 * _line(healthy, "dp").cost.time
    assert after.per_step > 1.3 * healthy.per_step
    assert "shares links with" in _line(after, "dp").note


def test_the_line_costs_what_every_group_with_every_other_groups_load_costs():
    """The neighbours of the representative are the groups that matter: costing every group
    of the line with the loads of all the others (a pass over the whole line) gives the same
    slowest time."""
    after = degrade(_cluster(), Faults(("cluster.leaf3",))).system
    p = after.parallel("train")
    f = next(x for x in p.flows if x.dim == "dp")
    groups = [RankGroup(f"dp:{i}", tuple(g)) for i, g in enumerate(rank_groups(p, "dp"))]
    alone = [_alone(after, f, g, None, None) for g in groups]
    loads = [{r: b * f.bytes for r, b in group_loads(after, g, f.collective, a.algorithm).items()}
             for g, a in zip(groups, alone)]
    total = defaultdict(float)
    for per in loads:
        for r, b in per.items():
            total[r] += b
    times = []
    for g, a, per in zip(groups, alone, loads):
        background = {r: (total[r] - b) / f.bytes for r, b in per.items() if total[r] > b}
        times.append(coster(after, g, f.collective, a.algorithm, protocol=a.protocol,
                            background=background or None)(f.bytes).time if background
                     else a.time)
    assert max(times) > 1.8 * min(times)
    assert _line(step(after, p), "dp").cost.time == pytest.approx(max(times), rel=1e-12)


@pytest.mark.parametrize("name,defines", [("h100_cluster.topo", {"nodes": 4}),
                                          ("gb200_nvl72.topo", None),
                                          ("nvl72_cluster.topo", {"racks": 2}),
                                          ("dgx_h100.topo", None)])
def test_healthy_groups_on_links_of_their_own_cost_what_they_cost_alone(name, defines):
    system = topoc.load(library_file(name), defines)
    for p in system.parallels:
        report = step(system, p)
        for f, line in zip(p.flows, report.flows):
            count, size, kinds, ids = _groups(system, p, f.dim, None, None)
            if size < 2:
                continue
            alone, _ = _costed(system, f, kinds, ids, None)      # no strategy: groups alone
            assert line.cost == alone, (p.name, f.dim)
            assert "shares links" not in line.note


def test_neighbours_are_the_groups_in_the_sampled_islands():
    system = _cluster()
    p = system.parallel("train")
    g = RankGroup("dp:0", tuple(rank_groups(p, "dp")[0]))
    found = neighbours(system, p, "dp", g)
    assert found[0] is g
    island = system.locality.island
    ours = {island[r] for r in g.ranks}
    every = [RankGroup(f"dp:{i}", tuple(x)) for i, x in enumerate(rank_groups(p, "dp"))]
    assert sorted(h.name for h in found) == sorted(
        h.name for h in every if {island[r] for r in h.ranks} & ours)
    assert all(attrs.evolve(h, name="") in {attrs.evolve(e, name="") for e in every}
               for h in found)


@pytest.mark.parametrize("order", [("tp", "cp", "dp", "pp"), ("pp", "dp", "cp", "tp"),
                                   ("cp", "tp", "pp", "dp"), ("dp", "pp", "tp", "cp")])
@pytest.mark.parametrize("dim", ["tp", "cp", "dp", "pp", "dpcp"])
def test_each_rank_finds_its_group_by_arithmetic(order, dim):
    from topoc.compiler.analysis.concurrent import _index
    from topoc.compiler.ir.groups import group_translates

    base = _cluster(8).parallel("train")
    sizes = {"tp": 2, "cp": 2, "dp": 4, "pp": 4}
    p = attrs.evolve(base, sizes=tuple((k, sizes.get(k, v)) for k, v in base.sizes),
                     order=order)
    at = _index(p, dim, *group_translates(p, dim))
    for i, g in enumerate(rank_groups(p, dim)):
        assert all(at(r) == (i, min(g)) for r in g)
