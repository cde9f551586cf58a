"""ir/relocate.py: a degraded system's locality facts patched from the healthy system's (the
host parts the failure touches searched again, the others copied) must equal the facts a
freshly loaded system finds after the same failure, for every failure class of every bundled
cluster (small sizes), and the patch must really be taken."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.analysis.blast import _reference, classes
from topoc.compiler.collectives.algos.base import hosts
from topoc.compiler.ir.degrade import Faults, degrade

from ...conftest import library_file
from .test_masked import CLUSTERS

#: Single machines too: their failures touch the one host part there is.
FILES = CLUSTERS + [("dgx_h100.topo", None), ("gb200_nvl72.topo", None),
                    ("hgx_b200.topo", None), ("pcie_server.topo", None)]


def _facts(system):
    loc = system.locality
    n = len(system.gpus)
    return (loc.gpu_hosts, [loc.pcie_switch(r) for r in range(n)], loc._ids("nic"),
            loc._ids("pcie_switch"), sorted(range(n), key=lambda r: loc.order_keys[r]),
            sorted(range(n), key=loc.key), hosts(system, range(n)), list(loc.order_keys),
            loc.nic_index.tolist())


@pytest.mark.parametrize("name,defines", FILES, ids=[c[0] for c in FILES])
def test_patched_locality_is_a_fresh_systems(name, defines):
    system = topoc.load(library_file(name), defines)
    _reference(system, 2**30)               # the healthy facts the patch copies
    system.locality.order_keys
    patched = 0
    for (what, _), members in classes(system).items():
        after = degrade(system, Faults((members[0],))).system
        if "locality.base" not in after.memo:
            continue
        patched += 1
        fresh = degrade(topoc.load(library_file(name), defines), Faults((members[0],)))
        assert "locality.base" not in fresh.system.memo
        assert _facts(after) == _facts(fresh.system), members[0]
    assert patched


def test_the_patch_searches_only_the_touched_host_part(monkeypatch):
    """A GPU's failure on an NVL72 rack searches its own superchip again, not every GPU's."""
    from topoc.compiler.ir import locality, relocate

    system = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 2})
    system.locality.order_keys
    after = degrade(system, Faults(("cluster.rack1.tray3.sc1.gpu0",))).system
    starts = []
    real = locality.nearest_by_bfs
    monkeypatch.setattr(locality, "nearest_by_bfs",
                        lambda start, *a: starts.append(start) or real(start, *a))
    socket, nearest, own, _ = after.locality.gpu_hosts
    gpus = {s for s in starts if after.device(s).kind == "gpu"}
    assert gpus == {"cluster.rack1.tray3.sc1.gpu1"}
    assert len(socket) == len(system.gpus) - 1
    assert relocate.Base is type(after.memo["locality.base"])


def test_order_keys_start_from_the_healthy_systems(monkeypatch):
    """A degraded system's order keys read the healthy system's sockets and switches by
    index (``relocate.key_devices``) and check the natural order only of the pairs the
    healthy system did not (``relocate.key_checked``): a GPU's failure on a 4-node H100
    cluster (sockets and PCIe switches) compares no pair of untouched nodes again."""
    from topoc.compiler.ir import locality, relocate

    system = topoc.load(library_file("h100_cluster.topo"), {"nodes": 4})
    healthy_keys = system.locality.order_keys
    assert set(system.locality.memo["order.by_index"]) == {0, 1}
    after = degrade(system, Faults(("cluster.node2.gpu5",))).system
    compared = []
    real = locality._natural_less
    monkeypatch.setattr(locality, "_natural_less",
                        lambda a, b, same: compared.append((a, b)) or real(a, b, same))
    keys = after.locality.order_keys
    assert relocate.key_devices(after.locality, 0, after.locality.gpu_hosts[0]) is not None
    assert all(".node2." in a + b for a, b in compared)
    assert len(keys) == len(healthy_keys) - 1


@pytest.mark.parametrize("name,defines", FILES, ids=[c[0] for c in FILES])
def test_every_ranks_pcie_switch_at_once_is_the_rank_by_rank_search(name, defines):
    """``relocate.pcie_switches`` on a healthy system (the host links' ends in numpy) gives
    each rank the switch ``Locality.pcie_switch`` finds by its host search."""
    from topoc.compiler.ir import relocate

    system = topoc.load(library_file(name), defines)
    loc = system.locality
    found = relocate.pcie_switches(loc, loc._ids("pcie_switch"))
    assert found == [loc.pcie_switch(r) for r in range(len(system.gpus))]
    if loc._has_pcie_switches:
        assert any(found)
