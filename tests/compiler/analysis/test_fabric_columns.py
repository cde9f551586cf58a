"""The fabric view's cable columns (``CableTable``) and what reads them agree with the plain
passes over ``Cable`` objects they replace, on library files of every fabric shape: the
cables themselves (against the one-link-at-a-time pass), each switch's children, the wire
ends' port numbers, the NVLink blocks, and the ibsim, ibdiagnet and Kubernetes texts."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

import topoc
from topoc.backends import ibsim, k8s, slurm
from topoc.compiler.analysis import fabric as fab_mod
from topoc.compiler.analysis.diff import diff

from ...conftest import library_file

#: Files and sizes: rail-optimised NVL72 racks over four tiers, DGX nodes over three, a
#: two-tier NVL72 superpod and a single DGX node (no fabric).
CASES = [("nvl72_fourtier.topo", {"racks": 24}), ("h100_fourtier.topo", {"nodes": 96}),
         ("nvl72_superpod.topo", {}), ("dgx_h100.topo", {})]


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def system(request):
    name, defines = request.param
    return topoc.load(library_file(name), defines=defines)


def test_cables_are_those_of_the_pass_link_by_link(system):
    fab = fab_mod.fabric(system)
    # the same ends, kept devices and links through the plain pass: same cables, same order
    index = {d.id: i for i, d in enumerate(system.devices)}
    ends = {index[h.device]: f"{h.host}/{h.index}" for h in fab.hcas}
    ends.update({index[s.device]: s.name for s in fab.switches})
    kept = np.zeros(len(system.devices), dtype=np.bool_)
    kept[list(ends)] = True
    src, dst, codes, lanes = system.ends.arrays(
        lambda t: t.cls in fab_mod.SCALEOUT_CLASSES, ("src", "dst", "type", "lanes"))
    plain = fab_mod._cables_by_name(ends, src, dst, codes, lanes, system.ends.types, kept)
    assert fab.cables == plain
    assert fab_mod.CableTable.of(plain) == fab.table
    assert fab.table.natural_order or not fab.cables


def test_children_are_those_of_the_pass_over_cables(system):
    fab = fab_mod.fabric(system)
    assert fab.children() == fab._children_by_name()
    for s in fab.switches[:20]:
        below = _below(fab, s.name)         # once a switch: a walk per host was quadratic
        assert fab.hosts_below(s.name) == tuple(h.name for h in fab.hosts if h.name in below)


def _below(fab, switch: str) -> set[str]:
    down = fab._children_by_name()
    out, stack = set(), [switch]
    while stack:
        for c in down.get(stack.pop(), ()):
            if "/" in c:
                out.add(c.split("/", 1)[0])
            else:
                stack.append(c)
    return out


def test_wire_ends_number_ports_in_cable_order(system):
    """Each end numbers its wires from 1 in cable order, each wire's two ends the same
    wire; against a count per end over the ``Cable`` objects."""
    fab = fab_mod.fabric(system)
    expected, next_port = [], defaultdict(lambda: 1)
    for c in fab.cables:
        for _ in range(c.count):
            expected.append(fab_mod.Wire(c.a, next_port[c.a], c.b, next_port[c.b], c.rate,
                                         c.cls))
            next_port[c.a] += 1
            next_port[c.b] += 1
    assert fab_mod.wiring(fab) == tuple(expected)


def test_blocks_are_the_domains_in_rank_order(system):
    fab = fab_mod.fabric(system)
    host_of = {d: h.name for h in fab.hosts for d in h.devices}
    loc = system.locality
    order: dict[str, list[str]] = {}
    for rank, g in enumerate(system.gpus):
        if g.id in host_of:
            names = order.setdefault(loc.domain_root[rank] or g.id, [])
            if host_of[g.id] not in names:
                names.append(host_of[g.id])
    assert fab.blocks == tuple(map(tuple, order.values()))


def test_exports_from_columns_are_the_per_wire_ones(system):
    """ibsim and ibdiagnet without ``--ports`` (the columns) against an empty ports map
    (the per-wire pass, which numbers every cable from each end's lowest free port)."""
    fab = fab_mod.fabric(system)
    if not fab.switches:
        with pytest.raises(ibsim.ExportError):
            ibsim.render_ibsim(fab)
        return
    assert ibsim.render_ibsim(fab, "f") == ibsim.render_ibsim(fab, "f", {})
    assert ibsim.render_ibdiagnet(fab, "f") == ibsim.render_ibdiagnet(fab, "f", {})


def test_kubernetes_labels_from_columns_are_the_per_cable_ones(system):
    fab = fab_mod.fabric(system)
    assert k8s._up_and_leaves(fab) == k8s._up_and_leaves_by_name(fab)


def test_a_table_made_from_cables_reads_as_they_do(system):
    """A fabric whose table is made from its ``Cable`` objects (as diff renames B's HCAs)
    has no natural order to lean on: every reader takes its pass by name, same results."""
    import attrs

    fab = fab_mod.fabric(system)
    other = attrs.evolve(fab, table=fab_mod.CableTable.of(fab.cables))
    assert not other.table.natural_order
    assert other.cables == fab.cables
    assert other.children() == fab.children()
    assert fab_mod.wiring(other) == fab_mod.wiring(fab)
    assert k8s.render(other, "f") == k8s.render(fab, "f")
    if fab.switches:
        assert slurm.render(other, "tree") == slurm.render(fab, "tree")


def test_diff_of_a_system_with_itself_makes_no_cables_and_finds_none(system):
    assert diff(system, system).equal
    assert len(fab_mod.fabric(system, cables=False).table) == 0
