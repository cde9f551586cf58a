"""NCCL interop: published dumps and matrices import, compile and lint; exports meet NCCL's
parser rules; export -> import keeps the link graph of every library node."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

import topoc
from topoc.backends import nccl_graph, nccl_topo
from topoc.cli import main
from topoc.compiler.ir.groups import select_group
from topoc.importers import from_nccl_xml, from_smi

from .conftest import library_file

FIXTURES = Path(__file__).parent / "fixtures" / "nccl"


def imported(name: str):
    text = (FIXTURES / name).read_text()
    converter = from_smi if name.endswith(".txt") else from_nccl_xml
    topo, notes = converter(text, name)
    return topoc.loads(topo), topo, notes


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir()
                                        if p.suffix in (".xml", ".txt")))
def test_published_inputs_import_compile_and_lint(name, tmp_path, capsys):
    out = tmp_path / "node.topo"
    kind = "nvidia-smi" if name.endswith(".txt") else "nccl-topo"
    assert main(["import", kind, str(FIXTURES / name), "-o", str(out)]) == 0
    assert main(["lint", str(out)]) == 0
    assert "error" not in capsys.readouterr().out


def nvlink_lanes(system, gpu_id):
    return sorted(lk.lanes for lk in system.links_of(gpu_id) if lk.cls == "nvlink")


def test_h200_dump_has_four_switches_5_5_4_4():
    system, _, _ = imported("hgx_h200_topo.xml")
    assert len(system.gpus) == 8
    assert sum(d.kind == "switch" for d in system.devices) == 4
    for g in system.gpus:
        assert nvlink_lanes(system, g.id) == [4, 4, 5, 5]
    assert [lk.bandwidth for lk in system.links if lk.cls == "inter_socket"] == [40e9]


def test_perlmutter_dump_has_direct_nvlink_and_four_numa_nodes():
    system, _, _ = imported("perlmutter_a100_topo.xml")
    assert sum(d.kind == "cpu" for d in system.devices) == 4
    assert not any(d.kind == "switch" for d in system.devices)
    for g in system.gpus:
        assert nvlink_lanes(system, g.id) == [4, 4, 4]
    assert {d.model.attr("rate") for d in system.devices if d.kind == "nic"} == {25e9}


def test_gb300_dump_has_c2c_and_an_external_fabric():
    system, _, notes = imported("gb300_topo.xml")
    assert len(system.gpus) == 8 and sum(d.kind == "nic" for d in system.devices) == 8
    c2c = [lk for lk in system.links if lk.cls == "nvlink_c2c"]
    assert len(c2c) == 8 and {lk.lanes for lk in c2c} == {5}
    assert {lk.type.bandwidth for lk in c2c} == {44712e6}
    assert {d.model.attr("rate") for d in system.devices if d.kind == "nic"} == {100e9}
    fabric = [d for d in system.devices if d.kind == "switch"]
    assert len(fabric) == 1
    assert all(nvlink_lanes(system, g.id) == [18] for g in system.gpus)
    assert any("arm64" in n for n in notes)


def test_h200_matrix_pairs_each_gpu_with_its_nic():
    system, _, notes = imported("hgx_h200_topo_m.txt")
    g = system.graph
    for i in range(8):
        (switch,) = [n for n in g[f"node.gpu{i}"] if n.startswith("node.sw")]
        assert f"node.nic{i}" in g[switch]
    assert all(nvlink_lanes(system, gp.id) == [18] for gp in system.gpus)
    assert any("Gen4 x16" in n for n in notes)


def test_perlmutter_matrix_has_direct_links():
    system, _, _ = imported("perlmutter_a100_topo_m.txt")
    assert all(nvlink_lanes(system, gp.id) == [4, 4, 4] for gp in system.gpus)
    assert sum(d.kind == "cpu" for d in system.devices) == 4


def test_dgx_h100_export_meets_the_parser_rules():
    system = topoc.load(library_file("dgx_h100.topo"))
    text = nccl_topo.render(system)
    assert nccl_topo.check_nccl_xml(text) == []
    root = nccl_topo.ET.fromstring(text)
    assert root.tag == "system" and root.get("version") == "1"
    gpus = root.findall(".//gpu")
    assert len(gpus) == 8
    for gpu in gpus:
        counts = sorted(int(nv.get("count")) for nv in gpu.findall("nvlink"))
        assert counts == [4, 4, 5, 5]
        assert {nv.get("tclass") for nv in gpu.findall("nvlink")} == {"0x068000"}
    assert {c.get("numaid") for c in root.findall("cpu")} == {"0", "1"}
    assert len(root.findall(".//net")) == 8
    assert all(n.get("speed") == "400000" for n in root.findall(".//net"))


def test_nvl72_tray_export_has_c2c_and_external_nvlink():
    system = topoc.load(library_file("gb200_nvl72.topo"))
    text = nccl_topo.render(system, "rack.tray0")
    assert nccl_topo.check_nccl_xml(text) == []
    root = nccl_topo.ET.fromstring(text)
    for gpu in root.findall(".//gpu"):
        (nv,) = gpu.findall("nvlink")
        assert nv.get("target") == "fffffff:ff:ff.0" and nv.get("count") == "18"
        assert gpu.find("c2c").get("count") == "5"
    assert [c.get("arch") for c in root.findall("cpu")] == ["arm64", "arm64"]


def test_parser_rule_checker_catches_breaches():
    many = "<system>" + "".join(f'<cpu a{i}="1"/>' for i in range(3)) + "</system>"
    assert nccl_topo.check_nccl_xml(many) == []
    attrs = " ".join(f'k{i}="v"' for i in range(17))
    assert "attributes" in nccl_topo.check_nccl_xml(f"<system {attrs}/>")[0]
    assert "longer" in nccl_topo.check_nccl_xml(f'<system a="{"x" * 300}"/>')[0]
    assert "tabs" in nccl_topo.check_nccl_xml("<system>\t</system>")[0]


def signature(system, members):
    """Kinds, classes, lanes and bandwidths of the node's own links, plus each GPU's NVLink
    lanes that leave the node."""
    kind = {d.id: d.kind for d in system.devices}
    inside = Counter()
    external = Counter()
    for lk in system.links:
        a, b = lk.src in members, lk.dst in members
        if a and b:
            inside[tuple(sorted((kind[lk.src], kind[lk.dst]))), lk.cls, lk.lanes,
                   round(lk.bandwidth)] += 1
        elif (a or b) and lk.cls == "nvlink":
            external[lk.src if a else lk.dst] += lk.lanes
    return inside, sorted(external.values())


@pytest.mark.parametrize("name", ["dgx_h100.topo", "hgx_b200.topo", "dgx_a100.topo", "dgx1_v100.topo",
                                  "pcie_server.topo", "gb200_superchip.topo", "gb200_tray.topo",
                                  "gb200_nvl72.topo", "h100_cluster.topo"])
def test_round_trip_keeps_the_link_graph(name):
    system = topoc.load(library_file(name))
    prefix, members = sorted(nccl_topo.nodes(system).items())[0]
    text = nccl_topo.render(system, prefix)
    topo, _ = from_nccl_xml(text, "export.xml")
    back = topoc.loads(topo)
    back_members = {d.id for d in back.devices if d.id != "node.nvfabric"}
    assert signature(system, {d.id for d in members}) == signature(back, back_members)


def test_graph_export_follows_the_ring_orders():
    system = topoc.load(library_file("h100_cluster.topo"))
    group = select_group(system, ranks_text="0..15")
    text = nccl_graph.render(system, group, "cluster.node1")
    assert nccl_topo.check_nccl_xml(text) == []
    root = nccl_topo.ET.fromstring(text)
    (rings,) = [g for g in root.findall("graph") if g.get("pattern") == "4"]
    from topoc.compiler.collectives.orders import ring_orders
    assert rings.get("nchannels") == "16"             # two per NIC across nodes, as NCCL
    expected = [[p - 8 for p in order if p >= 8] for order in ring_orders(system, group.ranks, 16)]
    for channel, order in zip(rings.findall("channel"), expected, strict=True):
        assert [int(g.get("dev")) for g in channel.findall("gpu")] == order
        nets = channel.findall("net")
        assert len(nets) == 2          # the ring enters and leaves the node through NICs
    # per channel: half a 400G NIC at 96 %, and the GPU's 18 NVLinks in NCCL's units over 16
    assert float(rings.get("speedinter")) == pytest.approx(24.0)
    assert float(rings.get("speedintra")) == pytest.approx(18 * 20.6 / 16, rel=1e-3)
    (trees,) = [g for g in root.findall("graph") if g.get("id") == "1"]
    assert trees.get("pattern") == "3"
    heads = [ch.find("gpu").get("dev") for ch in trees.findall("channel")]
    assert len(set(heads)) == 8                      # channels spread over every GPU and NIC
    for ch in trees.findall("channel"):              # a head sends and receives on its NIC
        nets = [n.get("dev") for n in ch.findall("net")]
        assert nets[0] == nets[1] == ch.find("gpu").get("dev")


def test_graph_export_lists_nets_only_where_the_group_leaves_its_island():
    rack = topoc.load(library_file("gb200_nvl72.topo"))
    text = nccl_graph.render(rack, select_group(rack, ranks_text="0..71"), "rack.tray0")
    root = nccl_topo.ET.fromstring(text)
    assert not root.findall(".//net")                # one NVLink island: no NET hops
    assert root.find("graph").get("nchannels") == "16"


def test_export_cli(tmp_path, capsys):
    nvl72 = str(library_file("gb200_nvl72.topo"))
    out = tmp_path / "topo.xml"
    assert main(["export", "nccl-topo", nvl72, "-o", str(out)]) == 1
    assert "choose one with --node" in capsys.readouterr().err and not out.exists()
    assert main(["export", "nccl-topo", nvl72, "--node", "rack.tray1", "-o", str(out)]) == 0
    assert out.read_text().startswith('<system version="1">')
    graph = tmp_path / "graph.xml"
    assert main(["export", "nccl-graph", nvl72, "--node", "rack.tray0", "--ranks", "0..71",
                 "-o", str(graph)]) == 0
    assert graph.read_text().startswith('<graphs version="1">')


def test_bus_ids_from_a_dump_go_back_into_the_export(tmp_path, capsys):
    dump = FIXTURES / "hgx_h200_topo.xml"
    topo, ids = tmp_path / "node.topo", tmp_path / "node.busids"
    assert main(["import", "nccl-topo", str(dump), "-o", str(topo), "--bus-ids", str(ids)]) == 0
    out = tmp_path / "back.xml"
    assert main(["export", "nccl-topo", str(topo), "--bus-ids", str(ids), "-o", str(out)]) == 0
    source = nccl_topo.ET.fromstring(dump.read_text())
    back = nccl_topo.ET.fromstring(out.read_text())

    def gpu_buses(root):
        return sorted(p.get("busid").lower() for p in root.iter("pci") if p.find("gpu") is not None)

    def nvlink_targets(root):
        return sorted({nv.get("target").lower() for nv in root.iter("nvlink")})
    assert gpu_buses(back) == gpu_buses(source)
    assert nvlink_targets(back) == nvlink_targets(source)
    assert all(p.get("link_speed") and p.get("link_width") for p in back.iter("pci"))
    ids.write_text("node.host0.gpuu0 0000:83:00.0\n")
    assert main(["export", "nccl-topo", str(topo), "--bus-ids", str(ids), "-o", str(out)]) == 1
    assert "did you mean 'node.host0.gpu0'" in capsys.readouterr().err
    ids.write_text("node.host0.gpu0 banana\n")
    assert main(["export", "nccl-topo", str(topo), "--bus-ids", str(ids), "-o", str(out)]) == 1
    assert "not a bus id" in capsys.readouterr().err


def test_every_export_has_link_speed_and_width():
    text = nccl_topo.render(topoc.load(library_file("pcie_server.topo")))
    assert nccl_topo.check_nccl_xml(text) == []
    bad = '<system version="1"><cpu numaid="0"><pci busid="0000:01:00.0"/></cpu></system>'
    assert any("link_speed" in p for p in nccl_topo.check_nccl_xml(bad))


def test_graph_path_types_of_a_pcie_server():
    # two GPUs a PCIe switch, two switches a socket: PIX under one switch, PHB through their
    # CPU, SYS across the sockets (NCCL's path types, as nvidia-smi topo -m prints them)
    system = topoc.load(library_file("pcie_server.topo"))
    gpus = [g.id for g in system.gpus]
    row = [nccl_graph._type(system, gpus[0], g) for g in gpus]
    assert row == ["PIX", "PIX", "PHB", "PHB", "SYS", "SYS", "SYS", "SYS"]
    assert nccl_graph._type(system, gpus[6], gpus[7]) == "PIX"


def test_b300_gpus_sit_with_their_cx8_under_its_built_in_switch():
    # HGX B300: each GPU reaches the host through its own ConnectX-8's PCIe switch; NCCL's tree
    # holds one Mellanox bridge per NIC with that NIC and its GPU (PIX), under the GPU's socket
    system = topoc.load(library_file("hgx_b300.topo"))
    text = nccl_topo.render(system)
    assert nccl_topo.check_nccl_xml(text) == []
    root = nccl_topo.ET.fromstring(text)
    for cpu in root.findall("cpu"):
        bridges = cpu.findall("pci")
        assert len(bridges) == 4
        for bridge in bridges:
            assert (bridge.get("class"), bridge.get("vendor")) == (nccl_topo.BRIDGE_CLASS, "0x15b3")
            kinds = sorted(child.get("class") for child in bridge.findall("pci"))
            assert kinds == sorted([nccl_topo.IB_CLASS, nccl_topo.GPU_CLASS])
    busids = [el.get("busid") for el in root.iter("pci")]
    assert len(busids) == len(set(busids)) == 24
    ranks = [int(g.get("rank")) for cpu in root.findall("cpu") for g in cpu.iter("gpu")]
    assert ranks == list(range(8))
