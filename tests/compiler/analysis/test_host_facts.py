"""diff's per-host facts read from the link arrays (``compiler.analysis.host_facts``) equal
what each device's own ``Link`` objects say: NVLink lanes and direct GPU peers, each GPU's
NIC, PCIe switch and CPU, each NIC's PCIe switch and CPU, on designs and imported dumps."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

import topoc
from topoc.compiler.analysis import host_facts
from topoc.compiler.analysis.host_facts import by_kind, gpu_facts, nic_facts
from topoc.compiler.ir.hosts import hosts
from topoc.importers.detect import load_any

from ...conftest import LIBRARY

CASES = [("nvidia/dgx1_v100.topo", None), ("nvidia/dgx_h100.topo", None),
         ("nvidia/pcie_server.topo", None), ("nvidia/aws_p5.topo", None),
         ("nvidia/gb200_nvl72.topo", None), ("nvidia/h100_nvl_server.topo", None),
         ("nvidia/h100_cluster.topo", {"nodes": 4}), ("hwloc/nvidiaDGX2.xml", None),
         ("hwloc/24em64t-2n6c2t-pci.xml", None)]


def _load(name, defines):
    if name.startswith("hwloc/"):
        return load_any(str(LIBRARY.parent / "tests" / "fixtures" / name), None, ())[0]
    return topoc.load(LIBRARY / name, defines=defines)


def _by_links(system, kinds):
    """The facts as diff read them before: each GPU's and NIC's own links."""
    pos = {d.id: i for k in kinds for i, d in enumerate(kinds[k])}
    rank_of = {g.id: r for r, g in enumerate(system.gpus)}
    loc = system.locality
    gpus = []
    for g in kinds.get("gpu", ()):
        lanes, pair = 0, Counter()
        for link in system.links_of(g.id):
            if link.cls == "nvlink":
                lanes += link.lanes
                other = link.dst if link.src == g.id else link.src
                if other in rank_of:
                    pair[other] += link.lanes
        r = rank_of[g.id]
        gpus.append({"model": g.model.name, "lanes": lanes,
                     "peers": sorted((pos[o], n) for o, n in pair.items() if o in pos),
                     "nic": pos.get(loc.nic(r)), "switch": pos.get(loc.pcie_switch(r)),
                     "cpu": pos.get(loc.socket(r))})
    adj = defaultdict(list)
    for d in pos:
        for ln in system.links_of(d):
            other = ln.dst if ln.src == d else ln.src
            if ln.cls == "pcie" and other in pos:
                adj[d].append(other)
    kind = {d.id: d.kind for k in kinds for d in kinds[k]}
    # the search is host_facts' own; what is checked is the adjacency read from the arrays
    nics = host_facts.nic_places(kinds.get("nic", ()), adj.__getitem__, kind, pos)
    return gpus, nics


@pytest.mark.parametrize("name,defines", CASES, ids=[c[0] for c in CASES])
def test_facts_from_arrays_equal_the_links(name, defines):
    system = _load(name, defines)
    checked = 0
    for host in hosts(system):
        kinds = by_kind(system, host.devices)
        gpus, nics = _by_links(system, kinds)
        assert gpu_facts(system, kinds) == gpus
        assert nic_facts(system, kinds) == nics
        checked += len(gpus) + len(nics)
    assert checked
