"""``topoc import hwloc`` on published hwloc XML (tests/fixtures/hwloc/README.md),
``topoc import ibnetdiscover`` on both dump formats, and ``topoc diff`` between any inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import topoc
from topoc.cli import main
from topoc.compiler.analysis.diff import diff
from topoc.importers import ImportFailure
from topoc.importers.detect import kind_of, load_any
from topoc.importers.hwloc import from_hwloc
from topoc.importers.ibnetdiscover import from_ibnetdiscover

HWLOC = Path(__file__).parent / "fixtures" / "hwloc"
LIB = "library/nvidia/"


def _hwloc(name: str):
    text, notes = from_hwloc((HWLOC / name).read_text(), name)
    return topoc.loads(text), text, notes


def test_dgx2_from_hwloc():
    s, text, notes = _hwloc("nvidiaDGX2.xml")
    assert [g.model.name for g in s.gpus] == ["V100_SXM3_32GB_H"] * 16
    kinds = topoc.summary(s)["devices"]
    assert kinds == {"cpu": 2, "gpu": 16, "pcie_switch": 14, "switch": 12}
    # 6 NVLink2 lanes per GPU, one to each NVSwitch of its baseboard (NVLinkBandwidth 25000 MB/s)
    assert topoc.summary(s)["nvlink_lanes_per_gpu"] == {"min": 6, "max": 6}
    loc = s.locality
    assert loc.pcie_switch(0) == loc.pcie_switch(1) != loc.pcie_switch(2)
    assert {loc.socket(r) for r in range(8)} == {"node.cpu0"}
    assert {loc.socket(r) for r in range(8, 16)} == {"node.cpu1"}
    assert "device Xeon_Platinum_8174 : cpu { memory = 810234351616 B }" in text
    assert any("20 GB/s" in n for n in notes)


def test_power8_nvlink_to_gpu_and_cpu():
    s, text, _ = _hwloc("power8gpudistances.xml")
    assert [h.name for h in __import__("topoc.compiler.ir.hosts", fromlist=["hosts"]).hosts(s)] \
        == ["drac-12.grenoble.grid5000.fr"]
    nv = sorted((ln.src.split(".")[-1], ln.dst.split(".")[-1], ln.lanes) for ln in s.links
                if ln.cls == "nvlink")
    assert nv == [("gpu0", "cpu0", 2), ("gpu0", "gpu1", 2), ("gpu1", "cpu0", 2),
                  ("gpu2", "cpu1", 2), ("gpu2", "gpu3", 2), ("gpu3", "cpu1", 2)]


def test_hwloc_refuses_a_node_without_gpu_and_non_topologies():
    # 24em64t with its three NVIDIA 3D controllers (10de:06d2) taken out: the ATI VGA left
    # (vendor 0x1002) is no GPU
    xml = (HWLOC / "24em64t-2n6c2t-pci.xml").read_text().replace("[10de:06d2]", "[1234:06d2]")
    with pytest.raises(ImportFailure, match="describes no GPU"):
        from_hwloc(xml, "x.xml")
    with pytest.raises(ImportFailure, match="not XML"):
        from_hwloc("<topology>", "x.xml")
    with pytest.raises(ImportFailure, match="<system>"):
        from_hwloc("<system/>", "x.xml")


def test_hwloc_keeps_the_node_guid():
    # The 24em64t machine's mlx4_0 with a NodeGUID added and a GPU OS device on its graphics
    # card, to reach the NIC path (a synthetic variation of a published file).
    xml = (HWLOC / "24em64t-2n6c2t-pci.xml").read_text()
    xml = xml.replace('name="mlx4_0" osdev_type="3"/>',
                      'name="mlx4_0" osdev_type="3"><info name="NodeGUID" '
                      'value="0002:c903:0010:f2a2"/></object>')
    xml = xml.replace('pci_type="0302 [10de:06d2]', 'pci_type="0302 [10de:06d2]', 1)
    start = xml.index('pci_type="0302 [10de:06d2]')
    close = xml.index("</object>", start)
    xml = xml[:close] + ('<object type="OSDev" gp_index="999" name="cuda0" osdev_type="5">'
                         '<info name="Backend" value="CUDA"/><info name="GPUModel" '
                         'value="Tesla M2090"/></object>') + xml[close:]
    text, _ = from_hwloc(xml, "x.xml")
    assert "# nic[0] is mlx4_0, node GUID 0002:c903:0010:f2a2" in text
    topoc.loads(text)


def test_ibnetdiscover_formats_agree_and_errors():
    dump = (Path(__file__).parent / "fixtures" / "ibnetdiscover" / "two_switch.txt").read_text()
    ports = (Path(__file__).parent / "fixtures" / "ibnetdiscover" / "two_switch_p.txt").read_text()
    a, _ = from_ibnetdiscover(dump, "d")
    b, _ = from_ibnetdiscover(ports, "p")
    sa, sb = topoc.loads(a), topoc.loads(b)
    assert diff(sa, sb).equal
    assert "dgx-a.nic[0] <-> leaf0 : ndr" in a.replace("dgx_a", "dgx-a")
    with pytest.raises(ImportFailure, match="no cabled port"):
        from_ibnetdiscover("hello\n", "x")
    with pytest.raises(ImportFailure, match="unknown link speed"):
        from_ibnetdiscover(dump.replace("4xNDR", "4xZZZ"), "x")
    cut = dump[:dump.index("Ca\t1")]       # the CA records are missing: truncated
    with pytest.raises(ImportFailure, match="never declares"):
        from_ibnetdiscover(cut, "x")


def test_detect_kinds():
    assert kind_of((HWLOC / "nvidiaDGX2.xml").read_text()) == "hwloc"
    assert kind_of('<system version="1"><cpu/></system>') == "nccl-topo"
    assert kind_of("\tGPU0\tGPU1\nGPU0\t X \tNV4\n") == "nvidia-smi"
    assert kind_of('Switch\t8 "S-0000000000200001"\t\t# "x"\n') == "ibnetdiscover"
    assert kind_of('use "nvidia/links.topo"\n') == "topo"


def test_diff_finds_model_and_nvlink_drift(capsys):
    assert main(["diff", LIB + "dgx_h100.topo", LIB + "dgx_h200.topo"]) == 1
    out = capsys.readouterr().out
    assert "D02 devices: dgx: gpu devices differ: 8 H100 in A, 8 H200 in B" in out
    assert main(["diff", LIB + "dgx_h100.topo", LIB + "dgx_h100.topo", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "topoc.diff/1" and doc["equal"] is True
    assert {"devices", "nvlink", "nic", "pcie", "numa"} <= set(doc["compared"])
    assert main(["diff", LIB + "hgx_b200.topo", LIB + "dgx_h100.topo", "--format", "sarif"]) == 1
    sarif = json.loads(capsys.readouterr().out)
    rules = {r["id"] for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert {"D02", "D05"} <= rules   # B200 vs H100; both have 18 NVLink lanes per GPU
    assert main(["diff", LIB + "hgx_b200.topo", LIB + "dgx_h100.topo", "--format", "github"]) == 1
    assert capsys.readouterr().out.startswith("::error file=library/nvidia/hgx_b200.topo,line=1")


def test_diff_of_hwloc_against_its_import(tmp_path, capsys):
    out = tmp_path / "dgx2.topo"
    assert main(["import", "hwloc", str(HWLOC / "nvidiaDGX2.xml"), "-o", str(out)]) == 0
    assert main(["diff", str(out), str(HWLOC / "nvidiaDGX2.xml")]) == 0
    capsys.readouterr()
    # one NVLink lane less on GPU 3 is drift
    text = out.read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("  gpu[3] <-> nvswitch"))
    (tmp_path / "cut.topo").write_text(text.replace(line + "\n", "", 1))
    assert main(["diff", str(out), str(tmp_path / "cut.topo")]) == 1
    assert "node: gpu3 NVLink lanes: 6 in A, 5 in B" in capsys.readouterr().out


def test_diff_bad_input_is_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.topo"
    bad.write_text("group {")
    assert main(["diff", LIB + "dgx_h100.topo", str(bad)]) == 2
    assert main(["diff", LIB + "dgx_h100.topo", str(tmp_path / "missing.txt")]) == 2
    empty = tmp_path / "empty.xml"
    empty.write_text("<topology version='2.0'></topology>")
    assert main(["diff", LIB + "dgx_h100.topo", str(empty)]) == 2
    assert "no Machine object" in capsys.readouterr().err


def test_load_any_reads_every_kind():
    s, kind, _ = load_any(str(HWLOC / "power8gpudistances.xml"))
    assert kind == "hwloc" and len(s.gpus) == 4
    s, kind, _ = load_any(LIB + "dgx_h200.topo")
    assert kind == "topo" and s.gpus[0].model.name == "H200"


def test_diff_one_host_of_a_cluster_against_a_node_dump(capsys):
    smi = "tests/fixtures/nccl/dgx_h100_spaces_topo_m.txt"
    # the matrix names no model: GPUs and CPUs are compared by count, and match
    assert main(["diff", LIB + "h100_cluster.topo", smi, "--host", "node3"]) == 0
    captured = capsys.readouterr()
    assert "compared by count" in captured.out
    assert main(["diff", LIB + "h100_cluster.topo", smi, "--host", "nodeX"]) == 2
    assert "A has no host 'nodeX'" in capsys.readouterr().err
    # a real difference still shows: an A100 node against the H100 matrix
    assert main(["diff", LIB + "dgx_a100.topo", smi]) == 1
    assert "NVLink lanes: 12 in A, 18 in B" in capsys.readouterr().out


def test_hwloc_3_format_reads_the_same_node(capsys):
    assert main(["diff", str(HWLOC / "nvidiaDGX2.xml"), str(HWLOC / "nvidiaDGX2.v3.xml")]) == 0
    assert "no differences" in capsys.readouterr().out


def test_guids_join_hwloc_nics_to_ibnetdiscover_hcas(tmp_path, capsys):
    from topoc.importers.guids import normalize, read_guids
    assert normalize("0002:c903:0010:f2a2") == normalize("H-0002c9030010f2a2") == "2c9030010f2a2"
    power8 = (HWLOC / "power8gpudistances.xml").read_text()
    # give the node an HCA with a node GUID (a synthetic variation of the published file)
    first_gpu = power8.index('<object type="PCIDev"')      # a sibling of the first GPU
    power8 = power8[:first_gpu] + (
        '<object type="PCIDev" gp_index="990" pci_busid="0004:01:00.0" '
        'pci_type="0207 [15b3:1021] [15b3:0000] 00" pci_link_speed="31.5">'
        '<object type="OSDev" gp_index="991" name="mlx5_0" osdev_type="3">'
        '<info name="NodeGUID" value="0000:0000:0010:0000"/></object></object>'
    ) + power8[first_gpu:]
    xml = tmp_path / "p8.xml"
    xml.write_text(power8)
    guids = tmp_path / "guids.txt"
    assert main(["import", "hwloc", str(xml), "-o", str(tmp_path / "p8.topo"),
                 "--guids", str(guids)]) == 0
    assert guids.read_text() == "0x0000000000100000 drac-12.grenoble.grid5000.fr 0\n"
    assert read_guids(guids.read_text()) == {"100000": ("drac-12.grenoble.grid5000.fr", 0)}
    # an ibnetdiscover dump whose HCA (node GUID 0x100000) describes itself as the adapter only
    dump = (Path(__file__).parent / "fixtures" / "ibnetdiscover" / "two_switch.txt").read_text()
    dump = dump.replace('"dgx-a mlx5_0"', '"MT4129 ConnectX7 Mellanox Technologies"')
    (tmp_path / "d.txt").write_text(dump)
    out = tmp_path / "f.topo"
    assert main(["import", "ibnetdiscover", str(tmp_path / "d.txt"), "-o", str(out),
                 "--guids", str(guids)]) == 0
    assert 'host drac_12_grenoble_grid5000_fr : IBHost' in out.read_text()
    assert main(["import", "nvidia-smi", str(tmp_path / "d.txt"), "-o", "-",
                 "--guids", str(guids)]) == 2
