"""Every published matrix and dump in tests/fixtures/nccl imports into what its source says:
GPU, NIC, NUMA and NVLink counts, and (for matrices) the PCIe relation of every device pair,
re-derived from the imported link graph."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import networkx as nx
import pytest

import topoc
from topoc.cli import main
from topoc.importers import ImportFailure, from_nccl_xml, from_smi

FIXTURES = Path(__file__).parent / "fixtures" / "nccl"
MATRICES = sorted(p.name for p in FIXTURES.glob("*.txt"))
DUMPS = sorted(p.name for p in FIXTURES.glob("*.xml"))


def source_matrix(name: str):
    """The matrix as the test reads it, independently of the importer: columns and cells."""
    lines = [ln for ln in (FIXTURES / name).read_text().splitlines()
             if not ln.lstrip().startswith("#")]
    at = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["GPU0"])
    cols = re.findall(r"GPU\d+|NIC\d+|mlx5_\d+", lines[at])
    rows = {}
    for ln in lines[at + 1:]:
        cells = ln.split()
        if not cells or cells[0] not in cols:
            break
        rows[cells[0]] = dict(zip(cols, cells[1:]))
    return cols, rows


def derived_relation(graph, a: str, b: str) -> str:
    """PIX / PXB / PHB (NODE reads the same) / SYS, from the PCIe path between two devices."""
    pcie = nx.Graph([(u, v) for u, v, d in graph.edges(data=True)
                     if d["cls"] in ("pcie", "inter_socket")])
    path = nx.shortest_path(pcie, a, b)
    kinds = [graph.nodes[n]["kind"] for n in path[1:-1]]
    if sum(k == "cpu" for k in kinds) > 1:
        return "SYS"
    if "cpu" in kinds:
        return "PHB"
    return "PIX" if len(kinds) == 1 else "PXB"


def device_id(col: str, cols: list[str]) -> str:
    gpus = [c for c in cols if c.startswith("GPU")]
    nics = [c for c in cols if not c.startswith("GPU")]
    return f"node.gpu{gpus.index(col)}" if col in gpus else f"node.nic{nics.index(col)}"


@pytest.mark.parametrize("name", MATRICES)
def test_matrix_imports_what_it_says(name):
    cols, rows = source_matrix(name)
    topo, notes = from_smi((FIXTURES / name).read_text(), name)
    system = topoc.loads(topo)
    gpus = [c for c in cols if c.startswith("GPU")]
    assert len(system.gpus) == len(gpus) > 0
    assert sum(d.kind == "nic" for d in system.devices) == len(cols) - len(gpus)
    for g in gpus:   # NV# lanes per GPU, to peers or to the switch fabric
        nv = [int(v[2:]) for c, v in rows[g].items() if v.startswith("NV")]
        lanes = sorted(lk.lanes for lk in system.links_of(device_id(g, cols)) if lk.cls == "nvlink")
        assert sum(lanes) in (sum(nv), nv[0] if nv and len(set(nv)) == 1 else -1)
    # NUMA: GPUs with the same NUMA affinity share a CPU, GPUs with different ones do not
    text = (FIXTURES / name).read_text()
    header = next(ln for ln in text.splitlines() if ln.split()[:1] == ["GPU0"])
    labels = {}
    if "NUMA" in header:
        for g in gpus:
            line = next(ln for ln in text.splitlines() if ln.split()[:1] == [g])
            tail = line.split()[1 + len(cols):]
            numa = tail[1] if len(tail) > 1 and "Affinity" in header else tail[0] if tail else ""
            if re.fullmatch(r"\d+", numa):
                labels[g] = numa
    sockets = {g: system.locality.socket(gpus.index(g)) for g in labels}
    for a in labels:
        for b in labels:
            assert (labels[a] == labels[b]) == (sockets[a] == sockets[b]), (a, b)
    for a in cols:
        for b in cols:
            cell = rows[a].get(b, rows[b].get(a))
            if a == b or cell.startswith("NV") or not cell.isalpha():
                continue
            want = "PHB" if cell == "NODE" else cell
            assert derived_relation(system.graph, device_id(a, cols), device_id(b, cols)) == want, (a, b)


def test_matrix_numa_nodes_follow_the_sys_cells():
    system = topoc.loads(from_smi((FIXTURES / "dgx_a100_topo_m.txt").read_text())[0])
    # 4 NUMA nodes with GPUs (3, 1, 7, 5) and two with storage NICs only
    assert sum(d.kind == "cpu" for d in system.devices) == 6
    system = topoc.loads(from_smi((FIXTURES / "h100_12nic_topo_m.txt").read_text())[0])
    assert sum(d.kind == "cpu" for d in system.devices) == 2


def test_matrix_nvlink_generation_from_gpu_model():
    text = (FIXTURES / "hgx_h200_topo_m.txt").read_text()
    for gpu, lane in (("B200", 50e9), ("H200", 25e9)):
        system = topoc.loads(from_smi(text, gpu=gpu)[0])
        nv = {lk.type.bandwidth for lk in system.links if lk.cls == "nvlink"}
        assert nv == {lane}
        switch = next(d for d in system.devices if d.kind == "switch")
        assert switch.model.attr("reduction") is True
    pasted = "GPU 0: NVIDIA B200 (UUID: GPU-x)\n" + text
    topo, notes = from_smi(pasted)
    assert "bandwidth = 50 GB/s" in topo and any("read from the nvidia-smi" in n for n in notes)
    with pytest.raises(ImportFailure, match="not a model topoc knows"):
        from_smi(text, gpu="Z9000")


def test_matrix_spaces_tabs_and_indent_read_alike():
    tabs = (FIXTURES / "hgx_h200_topo_m.txt").read_text()
    spaced = "\n".join("    " + re.sub(r"\t+", "    ", ln) for ln in tabs.splitlines())
    assert from_smi(tabs, "m")[0] == from_smi(spaced, "m")[0]


def test_short_rows_fill_from_the_mirror_cell():
    text = "\tGPU0\tGPU1\tNIC0\nGPU0\t X \tNV4\tPIX\nGPU1\tNV4\t X \tPIX\nNIC0\tPIX\tPIX\n"
    topo, notes = from_smi(text, "m.txt")
    assert any("fewer cells" in n for n in notes)
    system = topoc.loads(topo)
    assert len(system.gpus) == 2


@pytest.mark.parametrize("convert,text,needle", [
    (from_smi, "\tNIC0\tNIC1\nNIC0\t X \tPIX\nNIC1\tPIX\t X \n", "no matrix header"),
    (from_smi, "\tGPU0\tGPU1\nGPU0\t X \tNV?\nGPU1\tNV4\t X \n", r"unknown relation 'NV\?'"),
    (from_smi, "\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tSYS\t X \n", "must be symmetric"),
    (from_smi, "\tGPU0\tGPU1\nGPU0\t X \tPIX\n", "no row for it"),
    (from_smi, "\tGPU0\tGPU1\nGPU0\t X \tPIX\nGPU1\tPIX\tPIX\n", "diagonal"),
    (from_nccl_xml, "<system", "not well-formed"),
    (from_nccl_xml, "<graphs/>", "expected <system>"),
    (from_nccl_xml, '<system version="1"/>', "no <cpu>"),
])
def test_bad_inputs_name_the_problem(convert, text, needle):
    with pytest.raises(ImportFailure, match=needle):
        convert(text, "input")


@pytest.mark.parametrize("name", DUMPS)
def test_dump_imports_what_it_says(name):
    root = ET.fromstring((FIXTURES / name).read_text())
    system = topoc.loads(from_nccl_xml((FIXTURES / name).read_text(), name)[0])
    gpus = [p for p in root.iter("pci") if p.find("gpu") is not None
            or ((p.get("class") or "").startswith("0x03") and not len(p))]
    cards = [p for p in root.iter("pci") if p.find("nic") is not None
             or ((p.get("class") or "").startswith("0x02") and not len(p))]
    cards += [n for cpu in root.iter("cpu") for n in cpu.findall("nic")]
    assert len(system.gpus) == len(gpus) > 0
    assert sum(d.kind == "nic" for d in system.devices) == len(cards)
    assert sum(d.kind == "cpu" for d in system.devices) == len(root.findall("cpu"))
    for i, p in enumerate(gpus):   # NVLink lanes per GPU, self-targets left out
        want = sum(int(nv.get("count", "1")) for nv in p.iter("nvlink")
                   if nv.get("target", "").lower() != p.get("busid", "").lower())
        got = sum(lk.lanes for lk in system.links_of(system.gpus[i].id) if lk.cls == "nvlink")
        assert got == want


def test_flattened_dump_reads_classes_as_nccl_does():
    topo, notes = from_nccl_xml((FIXTURES / "p4d_24xl_topo.xml").read_text(), "p4d.xml")
    system = topoc.loads(topo)
    assert len(system.gpus) == 8 and sum(d.kind == "pcie_switch" for d in system.devices) == 4
    assert {lk.type.attr("gen") for lk in system.links if lk.cls == "pcie"} == {3}  # "8 GT/s"
    assert any("no <gpu> inside" in n for n in notes)
    assert sum(lk.cls == "inter_socket" for lk in system.links) == 1
    ndv4 = topoc.loads(from_nccl_xml((FIXTURES / "azure_ndv4_topo.xml").read_text())[0])
    assert sum(lk.cls == "inter_socket" for lk in ndv4.links) == 6     # 4 NUMA nodes meshed


def test_dump_details():
    dual = ('<system version="1"><cpu numaid="0" arch="x86_64" vendor="GenuineIntel" '
            'familyid="6" modelid="143"><pci busid="0000:01:00.0" class="0x060400" '
            'link_speed="2.5 GT/s" link_width="16"><pci busid="0000:02:00.0" class="0x030200" '
            'link_speed="5 GT/s" link_width="16"><gpu dev="0" sm="90">'
            '<nvlink target="0000:02:00.0" count="2" tclass="0x030200"/></gpu></pci>'
            '<pci busid="0000:03:00.0" class="0x020700" link_speed="16.0 GT/s PCIe" '
            'link_width="16"><nic><net name="mlx5_0" speed="200000"/>'
            '<net name="mlx5_1" speed="200000"/></nic></pci></pci></cpu></system>')
    topo, notes = from_nccl_xml(dual, "d.xml")
    system = topoc.loads(topo)
    assert {lk.type.attr("gen") for lk in system.links if lk.cls == "pcie"} == {1, 2, 4}
    (nic,) = [d for d in system.devices if d.kind == "nic"]
    assert nic.model.attr("rate") == 400e9 / 8
    assert any("targets its own GPU" in n for n in notes)
    assert not any(lk.cls == "nvlink" for lk in system.links)


@pytest.mark.parametrize("text", [
    '<system version="1"><cpu numaid="0"><pci busid="0:1" class="0x020000"/></cpu></system>',
    '<system version="1"><cpu numaid="0"></cpu></system>',
])
def test_dump_without_gpus_is_an_error(text, tmp_path, capsys):
    with pytest.raises(ImportFailure, match="describes no GPU"):
        from_nccl_xml(text, "x.xml")
    (tmp_path / "x.xml").write_text(text)
    assert main(["import", "nccl-topo", str(tmp_path / "x.xml"), "-o", str(tmp_path / "o")]) == 1
    assert not (tmp_path / "o").exists()
    assert "describes no GPU" in capsys.readouterr().err


def test_a_header_whose_names_ran_together_is_split():
    """As in a vLLM issue's pasted matrix: 'NIC0NIC1' in the header line."""
    text = ("        GPU0    GPU1    NIC0NIC1    CPU Affinity    NUMA Affinity\n"
            "GPU0     X      NV4     PIX  SYS     0-7    0\n"
            "GPU1    NV4      X      SYS  PIX     8-15   1\n"
            "NIC0    PIX     SYS      X   SYS\n"
            "NIC1    SYS     PIX     SYS   X\n")
    system = topoc.loads(from_smi(text, "m.txt", gpu="H100")[0])
    assert len(system.gpus) == 2 and sum(d.kind == "nic" for d in system.devices) == 2
    assert system.locality.nic(0).endswith("nic0") and system.locality.nic(1).endswith("nic1")
