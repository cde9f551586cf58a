"""ir/reisland.py: a degraded system's islands and NVLink domains patched from the healthy
system's must equal what a freshly loaded system's locality pass finds after the same
failure, field by field (the tables' order too), for every failure class of every bundled
cluster (small sizes), a cut NVLink and a failed GPU and switch together; and the patch must
really be taken."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.analysis.blast import classes
from topoc.compiler.ir.degrade import Faults, degrade
from topoc.compiler.ir.reisland import ShiftedRanks

from ...conftest import library_file
from .test_relocate import FILES


def _fields(system):
    loc = system.locality
    return (loc.gpu_index.tolist(), loc.island, loc.island_ranks, loc.domain_root,
            list(loc.domain_switches.items()), loc._domains.tolist(),
            [x.tolist() for x in loc._host_ends], dict(loc.rank_of),
            [loc.rank_of.get(g.id) for g in system.gpus], loc.p2p_labels.tolist(),
            loc.host_labels.tolist())


def _compare(name, defines, faults, p2p=False):
    """``p2p``: the healthy system's peer-to-peer sets made first (then the degraded
    system's are patched from them, else made when asked)."""
    system = topoc.load(library_file(name), defines)
    system.locality
    if p2p:
        system.locality.p2p_labels
    after = degrade(system, faults).system
    assert isinstance(after.locality.rank_of, ShiftedRanks)
    assert ("p2p_labels" in after.locality.__dict__) == p2p
    fresh = degrade(topoc.load(library_file(name), defines), faults).system
    assert not isinstance(fresh.locality.rank_of, ShiftedRanks)
    assert _fields(after) == _fields(fresh), faults


@pytest.mark.parametrize("name,defines", FILES, ids=[c[0] for c in FILES])
def test_patched_islands_are_a_fresh_systems(name, defines):
    system = topoc.load(library_file(name), defines)
    for k, ((what, _), members) in enumerate(classes(system).items()):
        _compare(name, defines, Faults((members[0],)), p2p=k % 2 == 0)


@pytest.mark.parametrize("faults", [
    # an NVLink cut between a GPU and a switch chip: the domain keeps its name
    Faults(("cluster.rack1.tray0.sc0.gpu0<->cluster.rack1.nvswitch_tray0.chip0",)),
    # the rack's first GPU (its domain's name) and a switch chip down together
    Faults(("cluster.rack1.tray0.sc0.gpu0", "cluster.rack1.nvswitch_tray3.chip1")),
    # every NVSwitch tray of a rack: its domain splits into one per GPU pair
    Faults(("cluster.rack0.nvswitch_tray*",)),
    # two racks' hosts
    Faults(("cluster.rack0.tray17", "cluster.rack1.tray2")),
])
def test_patched_islands_after_cuts_and_several_failures(faults):
    _compare("nvl72_cluster.topo", {"racks": 2}, faults)
    _compare("nvl72_cluster.topo", {"racks": 2}, faults, p2p=True)


def test_only_the_touched_islands_are_joined_again(monkeypatch):
    """A GPU's failure on an NVL72 cluster joins the links of its rack only (the healthy
    system's island labels, which its locality pass does not keep, made once before)."""
    from topoc.compiler.ir import locality, reisland

    system = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 4})
    system.locality
    reisland._healthy(system)
    sizes = []
    real = locality._components
    monkeypatch.setattr(locality, "_components",
                        lambda label, a, b: sizes.append(len(label)) or real(label, a, b))
    after = degrade(system, Faults(("cluster.rack2.tray3.sc1.gpu0",))).system
    after.locality
    rack = len([d for d in system.devices if d.id.startswith("cluster.rack2.")])
    assert sizes and max(sizes) <= rack
