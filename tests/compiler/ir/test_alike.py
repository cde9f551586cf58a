"""``compiler.ir.alike``: two compiles of one design are alike (the same file twice, a file
that uses it and instantiates its system at the same size); a change of any field a view
reads (the name, a device's id or model, a link's end, type, lanes or direction, a host
marker) is not; and ``diff`` of alike systems, which reads one system's views for both, gives
the full comparison's result."""

from __future__ import annotations

from array import array

import attrs
import pytest

import topoc
from topoc.compiler.analysis import diff as diff_module
from topoc.compiler.analysis.diff import diff
from topoc.compiler.ir.alike import alike
from topoc.compiler.ir.degrade import Faults, degrade
from topoc.compiler.ir.incidence import Ends
from topoc.compiler.ir.links import Links
from topoc.compiler.ir.system import Host

from ...conftest import LIBRARY

NVL72 = LIBRARY / "nvidia/nvl72_cluster.topo"
DGX = LIBRARY / "nvidia/h100_cluster.topo"


def _two(path, key=None, value=None, tmp_path=None):
    if key is None:
        return topoc.load(path), topoc.load(path)
    text = path.read_text()
    line = next(x for x in text.splitlines() if x.startswith("system "))
    name, group = line.split()[1], line.split(":", 1)[1].strip().split("(")[0].strip()
    other = tmp_path / f"same_{path.name}"
    other.write_text(f'use "{path}"\nsystem {name} : {group}({key} = {value})\n')
    return topoc.load(path, {key: value}), topoc.load(other)


FILES = sorted(p for p in LIBRARY.rglob("*.topo") if "\nsystem " in p.read_text())


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_two_compiles_of_a_file_are_alike(path):
    a, b = _two(path)
    assert a is not b and alike(a, b)


def test_a_file_naming_the_design_at_the_same_size_is_alike(tmp_path):
    a, b = _two(NVL72, "racks", 3, tmp_path)
    assert alike(a, b)
    assert not alike(a, topoc.load(NVL72, {"racks": 2}))     # another size


def _with_ends(system, **column):
    """``system`` with one column of its link arrays replaced."""
    e = system.links.ends
    fields = {"src": e.src, "dst": e.dst, "type_": e.type, "types": e.types, "lanes": e.lanes}
    fields.update(column)
    ends = Ends(**fields)
    lk = system.links
    return attrs.evolve(system, links=Links(system.devices, ends, lk._rows, lk._row))


def _changed(values, at, new):
    out = array(values.typecode, values)
    out[at] = new
    return out


def test_any_change_a_view_reads_is_not_alike():
    a, b = _two(DGX)
    assert alike(a, b)
    e = b.links.ends
    nvlink = next(i for i, t in enumerate(e.type) if e.types[t].cls == "nvlink")
    cases = {
        "name": attrs.evolve(b, name=b.name + "x"),
        "device id": attrs.evolve(b, devices=(attrs.evolve(b.devices[0], id="elsewhere"),
                                              *b.devices[1:])),
        "device model": attrs.evolve(b, devices=tuple(
            attrs.evolve(d, model=attrs.evolve(d.model, name="Other")) if n == 5 else d
            for n, d in enumerate(b.devices))),
        "host marker": attrs.evolve(b, hosts=(Host(b.gpus[0].id.rsplit(".", 1)[0], ()),)),
        "link end": _with_ends(b, dst=_changed(e.dst, nvlink, (e.dst[nvlink] + 1)
                                               % len(b.devices))),
        "link lanes": _with_ends(b, lanes=_changed(e.lanes, nvlink, e.lanes[nvlink] + 1)),
        "link type": _with_ends(b, types=tuple(attrs.evolve(t, bandwidth=t.bandwidth * 2)
                                               if n == e.type[nvlink] else t
                                               for n, t in enumerate(e.types))),
        "link direction": attrs.evolve(b, links=Links(
            b.devices, e, tuple((not duplex, span) for duplex, span in b.links._rows),
            b.links._row)),
    }
    for what, other in cases.items():
        assert not alike(a, other), what
        assert alike(other, other), what


def test_another_hostname_pattern_is_not_alike():
    a, b = _two(NVL72)
    assert a.hosts and alike(a, b)
    other = attrs.evolve(b, hosts=(attrs.evolve(b.hosts[0], pattern="x{rack}"), *b.hosts[1:]))
    assert not alike(a, other)


def test_links_built_by_hand_are_never_alike():
    a, b = _two(DGX)
    assert not alike(a, attrs.evolve(b, links=tuple(b.links)))


@pytest.mark.parametrize("path", [NVL72, DGX, LIBRARY / "nvidia/h100_roce_cluster.topo",
                                  LIBRARY / "nvidia/dgx_h100.topo"], ids=lambda p: p.name)
def test_diff_of_alike_systems_is_the_full_comparisons(path, monkeypatch):
    a, b = _two(path)
    quick = diff(a, b)
    with monkeypatch.context() as m:
        m.setattr(diff_module, "alike", lambda x, y: False)
        full = diff(a, b)
        assert diff(a, topoc.load(path)) == full
    assert quick == full and quick.equal
    # one GPU gone from B: not alike, and found as the full comparison finds it
    lost = degrade(b, Faults(fail=(b.gpus[0].id,))).system
    assert not alike(a, lost)
    found = diff(a, lost)
    with monkeypatch.context() as m:
        m.setattr(diff_module, "alike", lambda x, y: False)
        assert diff(a, lost) == found
    assert not found.equal
