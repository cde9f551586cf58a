"""The registry of device kinds: every place that names kinds reads it, so a kind added in one
place compiles, draws, lints and summarises, and the reference and the editor grammar list
the kinds it holds."""

from __future__ import annotations

import json
import re

import pytest

from topoc.backends import style
from topoc.cli import main
from topoc.compiler.ir.kinds import COMMON, INT, KINDS, DeviceKind, names, register
from topoc.compiler.lang import pipeline

from ...conftest import ROOT

#: A file that uses a kind the registry gains in the test only.
FPGA_FILE = """\
link pcie5 : pcie { bandwidth = 63 GB/s  latency = 1 us }
link nv : nvlink { bandwidth = 50 GB/s  latency = 0.6 us }
device H : gpu { hbm = 80 GB  sm = 90 }
device F : fpga { luts = 900000  vendor = "AMD" }
group Box {
  gpu[2] : H
  fpga[2] : F
  gpu[i] <-> fpga[i] : pcie5
  gpu[0] <-> gpu[1] : nv x 4
}
system box : Box
"""


@pytest.fixture
def fpga(monkeypatch):
    """The registry with one more kind, as a contributor would add it."""
    monkeypatch.setitem(KINDS, "fpga", DeviceKind(
        "fpga", "FPGA", (("luts", INT),),
        (("shape", "component"), ("fillcolor", "#2a9d8f"), ("fontcolor", "white")),
        row=2, height=1))
    return KINDS["fpga"]


def test_a_kind_added_to_the_registry_works_in_every_verb(fpga, tmp_path, capsys):
    path = tmp_path / "fpga.topo"
    path.write_text(FPGA_FILE)
    assert main(["compile", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 fpga, 2 gpu" in out
    assert main(["compile", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted(d["kind"] for d in doc["devices"]) == ["fpga", "fpga", "gpu", "gpu"]
    assert main(["lint", str(path)]) == 0
    capsys.readouterr()
    svg = tmp_path / "fpga.svg"
    assert main(["render", str(path), "-o", str(svg)]) == 0
    assert "FPGA" in svg.read_text() and "#2a9d8f" in svg.read_text()
    system = pipeline.load(path)
    assert [m.attr("luts") for m in {d.model for d in system.devices if d.kind == "fpga"}] \
        == [900000]


#: Two boxes whose only way out is a registered endpoint kind, through one network switch.
IPU_FILE = """\
link pcie5 : pcie { bandwidth = 63 GB/s  latency = 1 us }
link ndr : infiniband { bandwidth = 50 GB/s  latency = 0.3 us }
device H : gpu { hbm = 80 GB }
device I : ipu { rate = 400 Gb/s }
device Q : net_switch { }
group Box { gpu : H  net : I  gpu <-> net : pcie5 }
group Pair { box[2] : Box  leaf : Q  box[i].net <-> leaf : ndr }
system pair : Pair
"""


@pytest.mark.parametrize("endpoint", [True, False])
def test_a_kinds_endpoint_flag_is_what_the_scale_out_levels_start_from(endpoint, monkeypatch,
                                                                        tmp_path):
    """The scale-out levels (and so the summary's tiers and bisection) count from devices
    whose kind is a network endpoint (the record's ``endpoint``), not from the names 'nic' and
    'dpu' spelled in each module."""
    from topoc.compiler.base.units import RATE
    from topoc.compiler.ir.summary import summarize
    monkeypatch.setitem(KINDS, "ipu", DeviceKind("ipu", "IPU", (("rate", RATE),),
                                                 row=2, height=3, endpoint=endpoint))
    path = tmp_path / "pair.topo"
    path.write_text(IPU_FILE)
    tiers = summarize(pipeline.load(path))["scaleout_tiers"]
    assert (tiers == {"1": 100e9}) if endpoint else (tiers == {})


def test_a_kind_attribute_is_checked_against_the_kinds_schema(fpga, tmp_path, capsys):
    path = tmp_path / "fpga.topo"
    path.write_text(FPGA_FILE.replace("luts = 900000", "lut = 900000"))
    assert main(["compile", str(path)]) == 1
    assert "did you mean 'luts'?" in capsys.readouterr().err


def test_an_unregistered_kind_is_e204_naming_every_registered_kind(tmp_path, capsys):
    path = tmp_path / "fpga.topo"
    path.write_text(FPGA_FILE)
    assert main(["compile", str(path)]) == 1
    err = capsys.readouterr().err
    assert "E204" in err and f"(a kind is one of {', '.join(names())})" in err


def test_a_kind_registered_twice_is_refused(fpga):
    with pytest.raises(ValueError, match="registered twice"):
        register(fpga)


def test_every_registered_kind_has_a_schema_a_style_a_row_and_a_name():
    assert names()[:2] == ("gpu", "cpu") and len(names()) == len(set(names()))
    for kind in KINDS.values():
        schema = kind.schema()
        assert COMMON.items() <= schema.items()
        assert set(dict(kind.attributes)).isdisjoint(COMMON), kind.name
        drawn = style.kind_style(kind.name)
        assert drawn["shape"] and re.fullmatch(r"#[0-9a-f]{6}", drawn["fillcolor"])
        assert style.kind_tier(kind.name) == kind.row
        assert style.kind_name(kind.name) == kind.label != ""
        assert kind.height >= 0


def test_the_language_reference_lists_every_kind_with_its_attributes():
    text = (ROOT / "docs" / "language.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `(\w+)`[^|]*\|(.*)\|$", text, re.M)}
    for kind in KINDS.values():
        assert kind.name in rows, kind.name
        said = set(re.findall(r"`(\w+)`", rows[kind.name]))
        assert said >= set(dict(kind.attributes)), (kind.name, set(dict(kind.attributes)) - said)


def test_the_editor_grammar_highlights_every_kind():
    grammar = json.loads((ROOT / "editors" / "topo.tmLanguage.json").read_text())
    match = grammar["repository"]["kind"]["match"]
    for name in names():
        assert re.search(match, f"device X : {name} {{"), name
