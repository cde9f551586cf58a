"""Hostile strings in dumps (issue 44): whatever a hostname, node description, product name,
device name or file name holds, every importer writes .topo text that parses back to the
dump's own hosts and GPUs, with the names read back exactly; nothing in the data becomes code."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import given, strategies as st

from topoc.compiler.analysis.fabric import fabric
from topoc.compiler.ir.hosts import hosts
from topoc.compiler.lang import pipeline
from topoc.importers import from_nccl_xml, from_smi
from topoc.importers.hwloc import from_hwloc
from topoc.importers.ibnetdiscover import from_ibnetdiscover

from .hostile_corpus import ib_dump

FIX = Path(__file__).resolve().parent / "fixtures"
SPECIAL = '"\\\n\r\t{}#\'\x1b\x07\x85\u2028\u2029\u202e'
#: What XML 1.0 can carry in an attribute (no NUL, few C0 controls).
XML_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters=(
    [chr(c) for c in range(0x20) if chr(c) not in "\t\n\r"] + ["\ufffe", "\uffff"]))
xml_text = st.text(st.one_of(st.sampled_from([c for c in SPECIAL if c not in "\x1b\x07"]),
                             XML_CHARS), min_size=1, max_size=30)
#: A word of a line-based dump: no whitespace (it separates fields), anything else.
word = st.text(st.one_of(st.sampled_from([c for c in SPECIAL if not c.isspace()]),
                         st.characters(blacklist_categories=("Cs",))),
               min_size=1, max_size=20).filter(lambda w: not any(c.isspace() for c in w))


def _gpus(system) -> int:
    return sum(d.kind == "gpu" for d in system.devices)


@given(xml_text, xml_text, xml_text, xml_text)
def test_hwloc_hostile_hostname_product_nic_and_path(host, product, nic, path):
    root = ET.parse(FIX / "hwloc" / "power8gpudistances.xml").getroot()
    machine = next(o for o in root.iter("object") if o.get("type") == "Machine")
    for info in machine.findall("info"):
        if info.get("name") == "HostName":
            info.set("value", host)
    ET.SubElement(machine, "info", name="DMIProductName", value=product)
    for osdev in root.iter("object"):
        if osdev.get("type") == "OSDev":
            osdev.set("name", nic)
    topo, _ = from_hwloc(ET.tostring(root, encoding="unicode"), path)
    system = pipeline.compile(topo)
    assert [h.name for h in hosts(system)] == [host]
    assert _gpus(system) == 4
    assert topo.count("\ngroup ") == 2 and topo.count("\nsystem ") == 1


@given(st.lists(word, min_size=1, max_size=4, unique=True), word, st.booleans(), xml_text)
def test_ibnetdiscover_hostile_descriptions(names, switch, p_format, path):
    topo, _ = from_ibnetdiscover(ib_dump(names, switch, p_format), path)
    system = pipeline.compile(topo)
    assert sorted(h.name for h in hosts(system)) == sorted(names)
    fab = fabric(system)
    assert len(fab.hcas) == 2 * len(names) and len(fab.switches) == 1


@given(st.lists(word, min_size=2, max_size=2), xml_text)
def test_nvidia_smi_hostile_legend_and_path(legend, path):
    text = (FIX / "nccl" / "hgx_h200_topo_m.txt").read_text()
    text = re.sub(r"NIC0: \S+", lambda _: f"NIC0: {legend[0]}", text)
    text = re.sub(r"NIC1: \S+", lambda _: f"NIC1: {legend[1]}", text)
    topo, _ = from_smi(text, path)
    assert _gpus(pipeline.compile(topo)) == 8
    assert not re.search(r"^\s*(?!#)\S*(mlx|NIC0:)", topo, re.M)


@given(xml_text, xml_text, xml_text, xml_text)
def test_nccl_xml_hostile_attributes(vendor, host_hash, net, busid):
    root = ET.parse(FIX / "nccl" / "hgx_h200_topo.xml").getroot()
    for cpu in root.iter("cpu"):
        cpu.set("vendor", vendor)
        cpu.set("host_hash", host_hash)
    for el in root.iter("net"):
        el.set("name", net)
    for el in root.iter("pci"):
        if el.find("nic") is not None:
            el.set("busid", busid)
    bus_ids: dict[str, str] = {}
    topo, _ = from_nccl_xml(ET.tostring(root, encoding="unicode"), path := "d.xml", bus_ids)
    assert _gpus(pipeline.compile(topo)) == 8 and path in topo
    assert all(re.fullmatch(r"[0-9a-f:.]+", v) for v in bus_ids.values())
