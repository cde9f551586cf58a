"""ir.instances: the instance table against prefix tests of every id, and the degraded
system's fault ranks (``degrade.fault_ranks``, what the cost model samples) against the
prefix test ``orders`` makes without them, for every failure class of sized clusters."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.analysis.blast import _degraded, classes
from topoc.compiler.ir.degrade import FAULT_RANKS, holders_of
from topoc.compiler.ir.instances import instances

from ...conftest import library_file

SIZED = [("nvl72_fourtier.topo", {"racks": 4}), ("h100_fourtier.topo", {"nodes": 8}),
         ("nvl72_cluster.topo", {"racks": 2}), ("h100_cluster.topo", {"nodes": 4}),
         ("aws_p5.topo", None)]


@pytest.mark.parametrize("name,defines", SIZED, ids=[n for n, _ in SIZED])
def test_under_is_the_prefix_test(name, defines):
    system = topoc.load(library_file(name), defines)
    tree = instances(system)
    ids = [d.id for d in system.devices]
    assert set(tree.names) == {p for i in ids for p in holders_of(i)}
    for k, inst in enumerate(tree.names[::5]):
        names = {inst, tree.names[-1 - k], "not.an.instance"}
        prefixes = tuple(n + "." for n in names)
        assert tree.under(names).tolist() == [i.startswith(prefixes) for i in ids]
        rows = list(range(0, len(ids), 3))
        assert tree.under(names, rows).tolist() == [ids[r].startswith(prefixes) for r in rows]


@pytest.mark.parametrize("name,defines", SIZED, ids=[n for n, _ in SIZED])
def test_fault_ranks_are_the_prefix_test(name, defines):
    system = topoc.load(library_file(name), defines)
    for members in classes(system).values():            # classes makes the table
        after = _degraded(system, members[0]).system
        prefixes = tuple(t + "." for t in after.memo["faults"])
        assert after.memo[FAULT_RANKS].tolist() == \
            [g.id.startswith(prefixes) for g in after.gpus], members[0]


@pytest.mark.parametrize("name,defines", SIZED, ids=[n for n, _ in SIZED])
def test_shared_levels_and_hosts_are_a_fresh_systems(name, defines):
    """What ``degrade`` hands a degraded system from the healthy one where blast made the
    instance table and the levels (the hosts still holding a device, the distances from the
    NICs where ``levels_kept`` holds) equals what a freshly loaded system computes."""
    from topoc.compiler.ir.degrade import Faults, degrade
    from topoc.compiler.ir.summary import level_array

    system = topoc.load(library_file(name), defines)
    level_array(system)
    system.levels
    shared = 0
    for members in classes(system).values():
        result = _degraded(system, members[0])
        after = result.system
        fresh = degrade(topoc.load(library_file(name), defines), Faults((members[0],))).system
        assert after.hosts == fresh.hosts, members[0]
        if "level_array" in after.memo and after.devices is not system.devices:
            shared += 1
            assert after.memo["level_array"].tolist() == level_array(fresh).tolist()
            assert after.levels == fresh.levels, members[0]
    assert shared, "no class shared the levels"
