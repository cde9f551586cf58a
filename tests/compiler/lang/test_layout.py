"""Instantiation by layout (``compiler.lang.layout``) makes the system the per-instance walk
makes: the same devices (ids, models, spans), hosts, sites and links in the same order, on
every library file and on groups whose connections take each path (numpy offsets, the loop,
links that merge, member names one of which is another's and digits); each host's run of devices
is the one the id-prefix search finds, each model's number the one a pass over the devices
gives; the offset checks (merges, port budgets) answer as the
name checks."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.ir import hosts as ir_hosts
from topoc.compiler.ir.modelcodes import model_ids, model_numbers
from topoc.compiler.ir.system import Device, Host, make_devices, make_hosts
from topoc.compiler.lang import elaborate, layout

from ...conftest import LIBRARY

FILES = sorted(p for p in LIBRARY.rglob("*.topo") if "\nsystem " in p.read_text())
H = 'use "nvidia/links.topo"\nuse "nvidia/devices.topo"\n'


def _everything(system):
    return ([(d.id, d.model, d.span) for d in system.devices],
            [(h.id, h.indices, h.pattern, h.span) for h in system.hosts],
            system.sites,
            [(lk.id, lk.src, lk.dst, lk.type, lk.lanes, lk.duplex, lk.span)
             for lk in system.links])


def _walk(load, monkeypatch):
    """The same input made by the walk: every template taken as ambiguous, so connections
    name their ends and instantiation looks them up by id, as before the layout."""
    with monkeypatch.context() as m:
        m.setattr(layout, "ambiguous", lambda t: True)
        return load()


def _outcome(load):
    try:
        return _everything(load())
    except CompileError as exc:
        return [str(d) for d in exc.diagnostics]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_library_files_alike(path, monkeypatch):
    by_layout = topoc.load(path)
    assert ir_hosts.HOST_RANGES in by_layout.memo
    walked = _walk(lambda: topoc.load(path), monkeypatch)
    assert ir_hosts.HOST_RANGES not in walked.memo
    assert _everything(by_layout) == _everything(walked)
    assert by_layout.ends.types == walked.ends.types
    for column in ("src", "dst", "type", "lanes"):
        assert getattr(by_layout.ends, column) == getattr(walked.ends, column), column
    # each host's devices: the layout's runs, as the search by id prefix finds them
    assert ir_hosts.host_members(by_layout) == ir_hosts.host_members(walked)
    # the models' numbers: the layout's, as a pass over the devices numbers them
    layout_ids, layout_numbers = (by_layout.memo.pop(k) for k in ("model_ids", "model_numbers"))
    ids, models = model_ids(by_layout)
    numbers, listed = model_numbers(by_layout)
    assert layout_ids[0].tolist() == ids.tolist()
    assert list(layout_ids[1].items()) == list(models.items())
    assert layout_numbers[0].tolist() == numbers.tolist()
    assert layout_numbers[1] == listed


GROUPS = H + ("group Node { host cpu : Grace  g[2] : H100  nic[2] : CX7  sw : PEX89104\n"
              "  g[i] <-> nic[i] : pcie5\n  g[*] <-> sw : nvlink4 }\n")


@pytest.mark.parametrize("body", [
    # numpy offsets (large), the loop (small), a host marked on a device member
    "n[64] : Node\n  s[16] : QM9700\n  n[i].nic[j] <-> s[(2 * i + j) / 8] : ndr",
    "n[3] : Node\n  s[2] : QM9700\n  n[i].nic[j] <-> s[j] : ndr",
    "host d[4] : Grace\n  s[2] : QM9700\n  d[i] <-> s[i % 2] : ndr",
    # links that merge: a parent wires a pair its member's element already holds
    "n[2] : Node\n  n[1].g[0] <-> n[1].sw : nvlink4",
    # one member's name is another's and digits (E121 refuses the ones that collide)
    "l : H100\n  l2[10] : H100\n  s : QM9700\n  l2[i] <-> s : ndr\n  l <-> s : ndr",
])
@pytest.mark.parametrize("fast", [0, 10**18])
def test_groups_alike(body, fast, monkeypatch):
    text = GROUPS + f"group W {{\n  {body}\n}}\nsystem w : W\n"
    monkeypatch.setattr(elaborate, "_FAST_LINKS", fast)
    made = _outcome(lambda: topoc.loads(text))
    assert isinstance(made, tuple), made            # a system, not diagnostics
    assert made == _outcome(lambda: _walk(lambda: topoc.loads(text), monkeypatch))


def test_a_template_whose_names_could_collide_is_walked():
    text = H + "group W { l : H100  l2[10] : H100 }\nsystem w : W\n"
    system = topoc.loads(text)
    assert ir_hosts.HOST_RANGES not in system.memo        # made by the walk
    assert layout.ambiguous(type("T", (), {"members": {"l": 0, "l2": 0}, "ambiguous": None})())
    assert not layout.ambiguous(type("T", (), {"members": {"gpu": 0, "nic": 0},
                                               "ambiguous": None})())


@pytest.mark.parametrize("path", FILES[::7], ids=lambda p: p.name)
def test_offset_checks_answer_as_the_name_checks(path, monkeypatch):
    """``may_merge`` and ``over_budget`` from offsets against the same from names, on every
    template of a library file (the names path: an ambiguous template)."""
    seen = []
    make = elaborate._Elaborator.template

    def kept(self, *args, **kwargs):
        t = make(self, *args, **kwargs)
        if t is not None:
            seen.append(t)
        return t
    monkeypatch.setattr(elaborate._Elaborator, "template", kept)
    topoc.load(path)
    assert seen
    for t in seen:
        by_offsets, was = (layout.may_merge([t]), layout.over_budget(t)), t.ambiguous
        t.ambiguous = True
        try:
            assert by_offsets == (layout.may_merge([t]), layout.over_budget(t)), t.name
        finally:
            t.ambiguous = was


def test_objects_by_columns_equal_the_constructors():
    devices = list(topoc.loads(GROUPS + "system n : Node\n").devices)
    made = make_devices([d.id for d in devices], [d.model for d in devices],
                        [d.span for d in devices])
    assert made == [Device(d.id, d.model, d.span) for d in devices]
    assert [hash(x) for x in made] == [hash(d) for d in devices]
    assert make_hosts(["a", "b"], [(("n", 0),), (("n", None),)], ["x{n}", None], [None, None]) \
        == [Host("a", (("n", 0),), "x{n}", None), Host("b", (("n", None),), None, None)]
