"""hwloc XML without NVML/CUDA OS devices (Debian's stock ``lstopo``, built without those
plugins) still has its GPUs, from their PCI ids; an NVLink graph that leaves islands is a
warning at import (issue 47). The stock XML is hwloc's DGX-2 sample
(tests/fixtures/hwloc/README.md) as lstopo writes it without the plugins: the same PCI tree, no
``nvml``/``cuda`` OS devices and no NVLinkBandwidth matrix (both come from NVML)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import topoc
from topoc.cli import main
from topoc.importers.hwloc import from_hwloc

HWLOC = Path(__file__).parent / "fixtures" / "hwloc"


def stock(name: str) -> str:
    """The XML as lstopo writes it without the NVML and CUDA plugins."""
    root = ET.fromstring((HWLOC / name).read_text())
    for parent in list(root.iter()):
        for child in list(parent):
            backend = {i.get("name"): i.get("value") for i in child.findall("info")}
            if child.get("type") == "OSDev" and (
                    backend.get("Backend") in ("NVML", "CUDA") or
                    child.get("name", "").startswith(("nvml", "cuda"))):
                parent.remove(child)
            elif child.tag.startswith("distances2") and child.get("name") == "NVLinkBandwidth":
                parent.remove(child)
    return ET.tostring(root, encoding="unicode")


def test_gpus_from_pci_ids_when_nvml_is_absent():
    text = stock("nvidiaDGX2.xml")
    assert "nvml" not in text and "NVLinkBandwidth" not in text
    topo, notes = from_hwloc(text, "stock.xml")
    s = topoc.loads(topo)
    assert [g.model.name for g in s.gpus] == ["GPU"] * 16
    loc = s.locality         # placement still comes from the PCI tree: NUMA and PCIe switches
    assert {loc.socket(r) for r in range(8)} == {"node.cpu0"}
    assert loc.pcie_switch(0) == loc.pcie_switch(1) != loc.pcie_switch(2)
    assert any("16 GPU(s) found by PCI ids (10de:1db8: NVIDIA, class 3D/VGA controller)" in n
               for n in notes)
    assert not any(n.startswith("warning:") for n in notes)   # no NVLink seen: no islands


def test_stock_xml_diffs_against_the_nvml_one_by_count(tmp_path, capsys):
    full = HWLOC / "nvidiaDGX2.xml"
    plain = tmp_path / "stock.xml"
    plain.write_text(stock("nvidiaDGX2.xml"))
    main(["diff", str(full), str(plain), "--format", "json"])
    import json
    doc = json.loads(capsys.readouterr().out)
    # same GPUs (placeholders compared by count), same PCIe switches and NUMA nodes; only the
    # NVLink lanes NVML reported are missing
    assert {d["category"] for d in doc["differences"]} == {"nvlink"}


def test_a_plain_lstopo_xml_of_tesla_gpus(capsys):
    """hwloc's 24em64t sample as published: three NVIDIA 3D controllers 10de:06d2 (Tesla
    M2070, no NVML in that lstopo) and an ATI ES1000 VGA (vendor 0x1002, no GPU). It used to
    be refused as a node without GPUs."""
    topo, notes = from_hwloc((HWLOC / "24em64t-2n6c2t-pci.xml").read_text(), "24em64t.xml")
    assert len(topoc.loads(topo).gpus) == 3
    assert any("3 GPU(s) found by PCI ids (10de:06d2" in n for n in notes)


def test_nvlink_islands_are_a_warning(capsys):
    """hwloc's DGX-2 sample: NVML reports each baseboard's GPUs and NVSwitches, not the
    bridges between the baseboards, so NVLink leaves two islands of 8."""
    _, notes = from_hwloc((HWLOC / "nvidiaDGX2.xml").read_text(), "dgx2.xml")
    warn = [n for n in notes if n.startswith("warning:")]
    assert len(warn) == 1 and "16 GPUs in 2 separate islands (gpu0-7; gpu8-15)" in warn[0]
    assert main(["import", "hwloc", str(HWLOC / "nvidiaDGX2.xml"), "-o", "-"]) == 0
    err = capsys.readouterr().err
    assert "\nwarning: " in "\n" + err and "note: warning" not in err
    # one island: no warning (POWER8 Minsky's two GPU pairs on two CPUs are two islands)
    _, notes = from_hwloc((HWLOC / "power8gpudistances.xml").read_text(), "p8.xml")
    assert any("4 GPUs in 2 separate islands (gpu0-1; gpu2-3)" in n for n in notes)


def test_hwloc_3_reads_the_same_without_nvml():
    topo, notes = from_hwloc(stock("nvidiaDGX2.v3.xml"), "v3.xml")
    assert len(topoc.loads(topo).gpus) == 16
    _, notes = from_hwloc((HWLOC / "nvidiaDGX2.v3.xml").read_text(), "v3.xml")
    assert any("16 GPUs in 2 separate islands" in n for n in notes if n.startswith("warning:"))
