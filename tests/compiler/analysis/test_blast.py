"""blast (compiler/analysis/blast.py) against the full recomputation: each degraded system
starts from the healthy system's surviving least-cost paths and shares the healthy views the
faults leave as they were (``ir.masked.isolate`` for a switch of the fabric, ``degrade``'s
shared incidence, levels and reach labels otherwise), which must give what a fresh degrade
and fresh searches give, for every failure class of every bundled cluster (small sizes)."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.analysis.blast import _reference, _step, blast
from topoc.compiler.ir.degrade import Faults, degrade

from ...conftest import library_file
from ..ir.test_masked import CLUSTERS


@pytest.mark.parametrize("name,defines", [*CLUSTERS, ("gb200_nvl72.topo", None)],
                         ids=[c[0] for c in CLUSTERS] + ["gb200_nvl72.topo"])
def test_blast_gives_what_a_fresh_degrade_gives(name, defines):
    system = topoc.load(library_file(name), defines)
    parallel = system.parallels[0].name if system.parallels else None
    for d in blast(system, parallel):
        fresh = topoc.load(library_file(name), defines)     # no view or route of another
        after = degrade(fresh, Faults((d.example,))).system
        time_after, connected = _reference(after, 2**30)
        assert (d.time_after, d.connected) == (time_after, connected), d.example
        if not d.replan and parallel is not None:
            assert d.step_after == _step(after, parallel), d.example


def test_a_system_already_split_is_said_so_and_only_a_split_part_is_partitioned():
    """A GB200 tray's two Superchips share no link: the healthy system is two parts, so a
    NIC's or a GPU's loss partitions nothing that was joined; cutting a GPU's C2C link from
    its Grace splits its Superchip."""
    from topoc.backends import blast_table
    from topoc.compiler.analysis.blast import _splits, gpu_parts

    system = topoc.load(library_file("gb200_tray.topo"))
    found = blast(system)
    assert found and all(d.parts_before == 2 and d.connected for d in found)
    text = blast_table.table(system.name, 4, 2**30, None, found)
    assert "already split into 2 parts" in text and "partitioned" not in text.split("\n", 3)[3]
    assert '"parts": 2' in blast_table.document(system.name, 4, 2**30, None, found)
    cut = degrade(topoc.load(library_file("gb200_tray.topo")),
                  Faults(("tray.sc0.gpu0<->tray.sc0.cpu",))).system
    assert _splits(gpu_parts(system), cut)
    healthy = topoc.load(library_file("h100_cluster.topo"), {"nodes": 2})
    assert all(d.parts_before == 1 for d in blast(healthy))
