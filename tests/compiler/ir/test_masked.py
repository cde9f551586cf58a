"""ir/masked.py: ``isolate``'s degraded system (the failed switch kept unreached, the healthy
views shared) must cost exactly what the full ``degrade`` costs, for every failure class of
every bundled cluster that has a scale-out fabric, on small sizes; and it must refuse the
faults whose views it cannot share."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.analysis.blast import _reference, _step, classes
from topoc.compiler.ir.degrade import Faults, _select, degrade, mask
from topoc.compiler.ir.masked import isolate

from ...conftest import library_file

#: Every bundled file with a scale-out network, at a small size of its own parameter.
CLUSTERS = [("a100_cluster.topo", {"nodes": 4}), ("a100_superpod.topo", {"nodes": 40}),
            ("aws_p4de.topo", None), ("aws_p5.topo", None), ("aws_p5en.topo", None),
            ("aws_p6_b200.topo", None), ("gcp_a3_mega.topo", None),
            ("h100_cluster.topo", {"nodes": 4}), ("h100_fourtier.topo", {"nodes": 8}),
            ("h100_roce_cluster.topo", None), ("h100_sharp_cluster.topo", {"nodes": 4}),
            ("h100_superpod.topo", {"nodes": 64}), ("nvl72_cluster.topo", {"racks": 2}),
            ("nvl72_fourtier.topo", {"racks": 4}), ("nvl72_superpod.topo", {"racks": 8})]


def _full(name, defines, example):
    """The reference all-reduce and every strategy's step after a full degrade, on a system
    loaded afresh (no view or route of any other system)."""
    after = degrade(topoc.load(library_file(name), defines), Faults((example,))).system
    return _reference(after, 2**30), {p.name: _step(after, p.name) for p in after.parallels}


@pytest.mark.parametrize("name,defines", CLUSTERS, ids=[c[0] for c in CLUSTERS])
def test_isolate_costs_what_a_full_degrade_costs(name, defines):
    system = topoc.load(library_file(name), defines)
    _reference(system, 2**30)              # the healthy views and routes isolate shares
    used = 0
    for (what, _), members in classes(system).items():
        result = isolate(system, mask(system, _select(system, members[0], "--fail")))
        if result is None:
            continue
        used += 1
        after = result.system
        assert len(after.gpus) == len(system.gpus)
        full = degrade(system, Faults((members[0],)))
        assert {x.id for x in result.lost} == {x.id for x in full.lost}, members[0]
        assert (_reference(after, 2**30), {p.name: _step(after, p.name)
                                           for p in after.parallels}) == \
            _full(name, defines, members[0]), members[0]
    # in every bundled fabric some switch can go without changing a distance from the NICs
    assert used, f"isolate took no class of {name}"


def test_isolate_refuses_what_changes_the_shared_views():
    system = topoc.load(library_file("nvl72_fourtier.topo"), {"racks": 4})
    for example in ("cluster.rack0.tray0.sc0.gpu0", "cluster.rack0.tray0.nic0",
                    "cluster.rack0.tray0"):
        assert isolate(system, mask(system, _select(system, example, "--fail"))) is None
    # an NVLink switch chip or tray leaves the rack's 72 GPUs one domain: only its switch
    # list (and, for chip 0, the smallest id that names it) changes
    for example in ("cluster.rack0.nvswitch_tray0.chip0", "cluster.rack0.nvswitch_tray0"):
        after = isolate(system, mask(system, _select(system, example, "--fail")))
        assert after is not None
        loc = after.system.locality
        root = loc.domain_root[0]
        assert root != system.locality.domain_root[0] and len(loc.domain_switches[root]) < 18
        assert system.locality.domain_root[0] == "cluster.rack0.nvswitch_tray0.chip0"
    # at 4 racks (one pod) a spine is its aggregation switches' one way down, and an
    # aggregation switch its core's: their distances from the NICs would change, so both are
    # degraded in full; a leaf's spines keep the other racks' leaves
    for example in ("cluster.pod0.spine0", "cluster.agg0.row0.sw0"):
        assert isolate(system, mask(system, _select(system, example, "--fail"))) is None
    assert isolate(system, mask(system, _select(system, "cluster.leaf0", "--fail"))) \
        is not None
