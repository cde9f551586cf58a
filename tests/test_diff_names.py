"""diff names what is missing or moved (issue 47): a GPU one side lacks is that GPU, with its
PCIe switch and NUMA node, not a count and a shift of every GPU after it; a NIC moved to the
other socket is a NUMA finding naming the NIC and both nodes."""

from __future__ import annotations

import json
from pathlib import Path

import topoc
from topoc.cli import main
from topoc.compiler.analysis.diff import diff

from .conftest import LIBRARY

HWLOC = Path(__file__).parent / "fixtures" / "hwloc"

NODE = """use "nvidia/links.topo"
use "nvidia/devices.topo"
group Node {
  cpu[2] : Grace
  gpu[2] : H100
  nic[2] : CX7
  sw[2] : PEX89104
  cpu[0] <-> cpu[1] : upi_spr
  sw[0] <-> cpu[0] : pcie5
  sw[1] <-> cpu[1] : pcie5
  gpu[0] <-> sw[0] : pcie5
  gpu[1] <-> sw[1] : pcie5
  nic[0] <-> sw[0] : pcie5
  nic[1] <-> sw[1] : pcie5
}
system node : Node
"""


def _without_gpu(xml: str, busid: str) -> str:
    """The hwloc XML as lstopo writes it with the GPU at ``busid`` gone (fallen off the bus):
    its PCIDev object and the OS device inside it removed."""
    start = xml.index(f'pci_busid="{busid}"')
    start = xml.rindex("<object", 0, start)
    end = xml.index("</object>", xml.index("</object>", start) + 1) + len("</object>")
    return xml[:start] + xml[end:]


def test_a_missing_gpu_is_named(tmp_path, capsys):
    full = HWLOC / "nvidiaDGX2.xml"
    gone = tmp_path / "gone.xml"
    gone.write_text(_without_gpu(full.read_text(), "0000:39:00.0"))
    assert main(["diff", str(full), str(gone), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [d["message"] for d in doc["differences"]] == [
        "node: gpu2 (V100_SXM3_32GB_H; PCIe switch 2, NUMA node (CPU) 0) is in A but not in B"]
    # and the other way round: B's extra GPU
    assert main(["diff", str(gone), str(full), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [(d["where"], d["a"], d["b"]) for d in doc["differences"]] == [
        ("node gpu2", "missing", "V100_SXM3_32GB_H")]


def test_a_nic_moved_to_the_other_socket_is_a_numa_finding():
    a = topoc.loads(NODE)
    b = topoc.loads(NODE.replace("nic[1] <-> sw[1]", "nic[1] <-> sw[0]"))
    d = diff(a, b)
    assert [(f.category, f.where, f.a, f.b) for f in d.findings] == [
        ("numa", "node nic1", "1", "0")]
    assert d.findings[0].message == ("node: nic1 (CX7) moved: NUMA node (CPU) 1 in A, 0 in B, "
                                     "PCIe switch 1 in A, 0 in B")
    # to a new switch of the same socket: a PCIe finding (and the switch count), no NUMA one
    c = topoc.loads(NODE.replace("sw[2] : PEX89104", "sw[3] : PEX89104").replace(
        "nic[1] <-> sw[1] : pcie5", "nic[1] <-> sw[2] : pcie5\n  sw[2] <-> cpu[1] : pcie5"))
    assert [(f.category, f.where) for f in diff(a, c).findings] == [
        ("devices", "node pcie_switch"), ("pcie", "node nic1")]
    assert diff(a, topoc.loads(NODE)).equal


def test_alignment_drops_the_device_that_explains_the_rest():
    from topoc.compiler.analysis.diff import _align_items
    a = [{"k": i} for i in range(8)]
    b = [x for x in a if x["k"] != 3]
    assert _align_items(a, b, ("k",)) == [(0, 0), (1, 1), (2, 2), (3, None), (4, 3), (5, 4),
                                          (6, 5), (7, 6)]
    assert (None, 3) in _align_items(b, a, ("k",))
    # a side with none: every device is missing, found without a search
    assert _align_items(a, [], ("k",)) == [(i, None) for i in range(8)]


def test_a_renamed_host_is_a_difference_when_both_sides_name_their_hosts(tmp_path, capsys):
    """Issue 47: one host renamed ('alpha' -> 'beta') exited 0 without a word."""
    from topoc.cli import main
    a, b = tmp_path / "a.topo", tmp_path / "b.topo"
    text = 'use "nvidia/dgx_h100.topo"\ngroup One {{ host node : DGXH100 "{}" }}\nsystem one : One\n'
    a.write_text(text.format("alpha"))
    b.write_text(text.format("beta"))
    assert main(["diff", str(a), str(b)]) == 1
    assert "host 'alpha' in A is named 'beta' in B" in capsys.readouterr().out
    # a design that names hosts by their path pairs them by position, and says so
    design = str(LIBRARY / "nvidia/dgx_h100.topo")
    assert main(["diff", str(a), design]) == 0
    assert "A's 'alpha' is B's 'dgx'" in capsys.readouterr().out


def test_a_design_against_its_own_nccl_export_has_no_difference(tmp_path, capsys):
    """Issue 47: the NCCL XML names CPUs and NICs by family and speed (CPU_GenuineIntel_6_143,
    NIC_400000M): two false 'devices differ' findings."""
    from topoc.cli import main
    design = str(LIBRARY / "nvidia/dgx_h100.topo")
    xml = tmp_path / "dgx.xml"
    assert main(["export", "nccl-topo", design, "-o", str(xml)]) == 0
    assert main(["diff", design, str(xml)]) == 0
    assert "no differences" in capsys.readouterr().out
