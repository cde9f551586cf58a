"""The compact link sequence (``compiler.ir.links.Links``) holds the links elaborate made as
objects before: same order, ids, types, lanes, directions and spans, on every library system;
reads return one object per link; selection, slices, equality and pickling behave as the
tuple's did. The lazy incidence table lists each device's links as the old per-device lists."""

from __future__ import annotations

import pickle

import pytest

import topoc
from topoc.compiler.ir.incidence import columns_in
from topoc.compiler.ir.links import Links
from topoc.compiler.lang import elaborate

from ...conftest import LIBRARY, library_file

FILES = sorted(p for p in LIBRARY.rglob("*.topo") if "\nsystem " in p.read_text())


def _rows(links):
    return [(lk.id, lk.src, lk.dst, lk.type, lk.lanes, lk.duplex, lk.span) for lk in links]


def _objects(monkeypatch, path):
    """The same file elaborated with the compact form switched off (links made as objects)."""
    init = elaborate._EndsBuilder.__init__

    def objects_only(self):
        init(self)
        self.compact = False
    with monkeypatch.context() as m:
        m.setattr(elaborate._EndsBuilder, "__init__", objects_only)
        return topoc.load(path)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_compact_links_are_the_objects_elaborate_made(path, monkeypatch):
    system = topoc.load(path)
    old = _objects(monkeypatch, path)
    assert isinstance(old.links, tuple)
    if not isinstance(system.links, Links):
        pytest.skip("this file's links are made as objects (a merge or a non-row link)")
    assert len(system.links) == len(old.links)
    # one at a time (before anything made them all), then all of them
    picked = range(0, len(old.links), max(1, len(old.links) // 97))
    assert [_rows([system.links[i]])[0] for i in picked] == [_rows([old.links[i]])[0]
                                                             for i in picked]
    assert system.links[-1] == old.links[-1]
    assert system.links[-1] is system.links[-1]
    some = system.links[5] if len(system.links) > 5 else None
    assert _rows(system.links) == _rows(old.links)
    if some is not None:
        assert system.links[5] is some          # the object read before is the one kept
    assert system.links == old.links and old.links == system.links
    assert hash(system.links) == hash(old.links)
    assert pickle.loads(pickle.dumps(system.links)) == old.links
    assert system.links[1:4] == old.links[1:4]
    with pytest.raises(IndexError):
        system.links[len(old.links)]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_columns_and_incidence_match_a_pass_over_the_objects(path):
    system = topoc.load(path)
    classes = ("infiniband", "ethernet", "pcie")
    picked = [x for x in system.links if x.cls in classes]
    assert columns_in(system, classes) == ([x.src for x in picked], [x.dst for x in picked],
                                           [x.bandwidth for x in picked])
    per: dict[str, list] = {}
    for link in system.links:
        per.setdefault(link.src, []).append(link)
        if link.dst != link.src:
            per.setdefault(link.dst, []).append(link)
    assert list(system.incidence) == [d.id for d in system.devices if d.id in per]
    assert len(system.incidence) == len(per)
    for device_id, links in per.items():
        assert system.incidence[device_id] == links
        assert device_id in system.incidence
    assert "no.such.device" not in system.incidence
    assert system.incidence.get("no.such.device", ()) == ()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_end_arrays_are_the_links_columns(path):
    """``Ends.arrays``, the numpy read of the links, gives each selected link's end indices,
    type and lanes in declaration order (and every link's without a selection)."""
    system = topoc.load(path)
    ends, index = system.ends, {d.id: i for i, d in enumerate(system.devices)}
    links = tuple(system.links)
    src, dst = ends.arrays()
    assert (src.tolist(), dst.tolist()) == ([index[x.src] for x in links],
                                            [index[x.dst] for x in links])
    picked = [x for x in links if x.cls == "nvlink"]
    src, dst, codes, lanes = ends.arrays(lambda t: t.cls == "nvlink",
                                         ("src", "dst", "type", "lanes"))
    assert src.tolist() == [index[x.src] for x in picked]
    assert dst.tolist() == [index[x.dst] for x in picked]
    assert [ends.types[c] for c in codes.tolist()] == [x.type for x in picked]
    assert lanes.tolist() == [x.lanes for x in picked]


def test_end_arrays_of_a_system_without_links_are_empty():
    system = topoc.loads("device G : gpu { }\ngroup S { g[2] : G }\nsystem s : S\n")
    assert len(system.links) == 0
    src, dst, codes, lanes = system.ends.arrays(None, ("src", "dst", "type", "lanes"))
    assert [len(c) for c in (src, dst, codes, lanes)] == [0, 0, 0, 0]
    assert src.dtype.name == "int32" and codes.dtype.name == "uint8"


def test_the_plan_fingerprint_reads_the_arrays_and_tells_systems_apart():
    """The plan cache's key hashes the compact links' arrays (no Link object is made): the
    same file gives the same key, another size or one link's lanes another key."""
    from topoc.compiler.analysis.plan import fingerprint
    from topoc.compiler.lang.derive import find_model
    from topoc.compiler.training.model import Training
    text = library_file("h100_cluster.topo").read_text()
    path = library_file("h100_cluster.topo")
    a, b = topoc.load(path, {"nodes": 2}), topoc.load(path, {"nodes": 2})
    model = find_model(a, "llama3-8b")
    base = Training(model, 64)
    key = fingerprint(a, base, 16)
    assert key == fingerprint(b, base, 16)
    assert a.links._all is None                      # nothing materialised
    assert key != fingerprint(topoc.load(path, {"nodes": 3}), base, 16)
    line = "leaf[*] <-> spine[*] : ndr x 32 / spines"
    assert line in text
    changed = topoc.compile(text.replace(line, line.replace("32", "16")), path, {"nodes": 2})
    assert key != fingerprint(changed, base, 16)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_neighbour_lists_follow_the_incidence_view(path):
    """``neighbour_lists``: each device's other ends read from the link arrays, in the
    incidence view's order (a link to itself once), for every link and for one class."""
    from topoc.compiler.ir.incidence import neighbour_lists
    system = topoc.load(path)
    index = {d.id: i for i, d in enumerate(system.devices)}
    for classes in (None, ("pcie",)):
        flat, start = neighbour_lists(system, classes)
        for i, d in enumerate(system.devices):
            want = [index[lk.dst if lk.src == d.id else lk.src]
                    for lk in system.incidence.get(d.id, ())
                    if classes is None or lk.cls in classes]
            assert flat[start[i]:start[i + 1]] == want
