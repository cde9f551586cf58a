"""faildomains (compiler/analysis/faildomains.py): the failure-domain classes found over numpy
arrays against a plain pass written from their definition (every device, every dotted prefix
of a device id, every host), and each instance's devices against ``degrade``'s selector, on
every library file with a system."""

from __future__ import annotations

import re

import pytest

import topoc
from topoc.compiler.analysis.blast import _members
from topoc.compiler.analysis.faildomains import DEVICE_DOMAINS, classes, instances
from topoc.compiler.ir.degrade import _select
from topoc.compiler.ir.hosts import HostnameError, hosts as host_list
from topoc.compiler.ir.summary import level_array

from ...conftest import LIBRARY, library_file

FILES = sorted(p.name for p in LIBRARY.rglob("*.topo")
               if re.search(r"^system\s", p.read_text(), re.M))
SIZED = [("nvl72_fourtier.topo", {"racks": 8}), ("h100_fourtier.topo", {"nodes": 16}),
         ("nvl72_superpod.topo", {"racks": 16}), ("h100_cluster.topo", {"nodes": 8})]


def plain_classes(system) -> dict:
    """``classes`` by its definition, device by device and prefix by prefix."""
    devices = system.devices
    level = level_array(system)
    degree = [0] * len(devices)
    index = {d.id: i for i, d in enumerate(devices)}
    for link in system.links:
        degree[index[link.src]] += link.lanes
        degree[index[link.dst]] += link.lanes
    out: dict = {}
    for i, d in enumerate(devices):
        if d.kind in DEVICE_DOMAINS:
            lv = int(level[i])
            sig = (d.kind, d.model.name, None if lv < 0 else lv, degree[i])
            out.setdefault((d.kind, sig), []).append(d.id)

    def label(d):
        return f"{d.kind}:{d.model.name}"
    under: dict[str, list[int]] = {}
    for i, d in enumerate(devices):
        parts = d.id.split(".")
        for k in range(2, len(parts)):
            under.setdefault(".".join(parts[:k]), []).append(i)
    if system.hosts:
        hosts = {h.id: tuple(sorted({label(devices[i]) for i in under.get(h.id, [])} |
                                    ({label(devices[index[h.id]])} if h.id in index else set())))
                 for h in system.hosts}
    else:
        try:
            hosts = {h.id: tuple(sorted({label(devices[index[x]]) for x in h.devices}))
                     for h in host_list(system)}
        except HostnameError:
            hosts = {}
    for h in sorted(hosts):
        out.setdefault(("host", ("host", hosts[h])), []).append(h)
    for inst in sorted(under, key=lambda x: (under[x][0], x.count("."))):
        if inst in hosts:
            continue
        shape = tuple(sorted({label(devices[i]) for i in under[inst]}))
        inside = sum(1 for h in hosts if h.startswith(inst + "."))
        if all(x.startswith("switch:") for x in shape):
            out.setdefault(("nvswitch tray", ("tray", shape)), []).append(inst)
        elif inside > 1:
            out.setdefault(("rack", ("rack", shape)), []).append(inst)
    return out


@pytest.mark.parametrize("name,defines", [(f, None) for f in FILES] + SIZED,
                         ids=FILES + [f"{n}-{list(d.values())[0]}" for n, d in SIZED])
def test_classes_are_the_plain_pass(name, defines):
    system = topoc.load(library_file(name), defines)
    found = classes(system)
    assert list(found.items()) == list(plain_classes(system).items())


MACHINES = [("dgx_h100.topo", None), ("gb200_nvl72.topo", None), ("pcie_server.topo", None),
            ("gb200_superchip.topo", None)]


@pytest.mark.parametrize("name,defines", SIZED + MACHINES, ids=[n for n, _ in SIZED + MACHINES])
def test_instance_devices_are_the_selector(name, defines):
    system = topoc.load(library_file(name), defines)
    tree = instances(system)
    for k, inst in enumerate(tree.names):
        if k % 7 and tree.depth[k] > 1:     # every outer instance, a seventh of the rest
            continue
        assert tree.devices(inst) == _select(system, inst, "--fail"), inst
    for members in classes(system).values():
        assert _members(system, members[0]) == _select(system, members[0], "--fail")
    assert tree.devices("no.such.instance") is None
