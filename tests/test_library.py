"""Every bundled system compiles to the hardware its sources describe (docs/hardware.md)."""

from __future__ import annotations

from collections import Counter

import pytest

import topoc
from topoc.compiler.ir.summary import summarize

from .conftest import library_file

TB = 10**12
GB = 10**9

# basename -> (devices per kind, NVLink lanes per GPU, NVLink bandwidth per GPU both directions)
EXPECTED = {
    "gb200_superchip.topo": ({"cpu": 1, "gpu": 2}, 0, 0),
    "gb200_tray.topo": ({"cpu": 2, "gpu": 4, "nic": 4}, 0, 0),
    "gb200_nvl72.topo": ({"cpu": 36, "gpu": 72, "nic": 72, "switch": 18}, 18, 1.8 * TB),
    "dgx_h100.topo": ({"cpu": 2, "gpu": 8, "nic": 8, "pcie_switch": 8, "switch": 4}, 18, 900 * GB),
    "hgx_b200.topo": ({"cpu": 2, "gpu": 8, "nic": 8, "pcie_switch": 4, "switch": 2}, 18, 1.8 * TB),
    "dgx_a100.topo": ({"cpu": 2, "gpu": 8, "nic": 8, "pcie_switch": 4, "switch": 6}, 12, 600 * GB),
    "pcie_server.topo": ({"cpu": 2, "gpu": 8, "nic": 4, "pcie_switch": 4}, 0, 0),
    "nvl72_cluster.topo": ({"cpu": 288, "gpu": 576, "nic": 576, "switch": 144,
                            "net_switch": 32 + 72}, 18, 1.8 * TB),
    "nvl72_superpod.topo": ({"cpu": 2304, "gpu": 4608, "nic": 4608, "switch": 1152,
                             "net_switch": 256 + 2 * 4 * 18 + 4 * 18 * 2}, 18, 1.8 * TB),
    "h100_cluster.topo": ({"cpu": 64, "gpu": 256, "nic": 256, "pcie_switch": 256, "switch": 128,
                           "net_switch": 8 + 4}, 18, 900 * GB),
    "dgx_h200.topo": ({"cpu": 2, "gpu": 8, "nic": 8, "pcie_switch": 8, "switch": 4}, 18, 900 * GB),
    "hgx_b300.topo": ({"cpu": 2, "gpu": 8, "nic": 8, "switch": 2}, 18, 1.8 * TB),
    "gb300_nvl72.topo": ({"cpu": 36, "gpu": 72, "nic": 72, "switch": 18}, 18, 1.8 * TB),
    "h100_nvl_server.topo": ({"cpu": 2, "gpu": 8, "nic": 4, "pcie_switch": 4}, 12, 600 * GB),
    # the DGX-1 whitepaper's hybrid cube mesh: 6 NVLink 2 links of 25 GB/s per GPU, no NVSwitch
    "dgx1_v100.topo": ({"cpu": 2, "gpu": 8, "nic": 4, "pcie_switch": 4}, 6, 300 * GB),
}


@pytest.fixture(scope="module", params=sorted(EXPECTED))
def compiled(request):
    return request.param, topoc.load(library_file(request.param))


def test_device_counts(compiled):
    name, system = compiled
    assert dict(Counter(d.kind for d in system.devices)) == EXPECTED[name][0]


def test_nvlink_per_gpu(compiled):
    name, system = compiled
    _, lanes, bandwidth = EXPECTED[name]
    for gpu in system.gpus:
        nvlinks = [link for link in system.links_of(gpu.id) if link.cls == "nvlink"]
        assert sum(link.lanes for link in nvlinks) == lanes
        both = sum(link.bandwidth * 2 for link in nvlinks)
        assert both == pytest.approx(bandwidth)


def test_ids_unique_and_hierarchical(compiled):
    _, system = compiled
    ids = [d.id for d in system.devices]
    assert len(ids) == len(set(ids))
    assert all(i.startswith(system.name + ".") for i in ids)
    link_ids = [link.id for link in system.links]
    assert len(link_ids) == len(set(link_ids))


def test_nvl72_seed_figures():
    s = summarize(topoc.load(library_file("gb200_nvl72.topo")))
    assert s["devices"]["gpu"] == 72 and s["devices"]["cpu"] == 36
    assert s["devices"]["switch"] == 18
    # the marketed 13.4 TB is 72 x 186 GB; the library keeps the driver's 189,471 MiB per GPU
    assert s["hbm_bytes"] == pytest.approx(13.4 * TB * 189471 * 2**20 / 186e9, rel=0.01)
    assert s["scaleup_bandwidth"] == pytest.approx(129.6 * TB, rel=0.01)


def test_every_library_gpu_declares_the_drivers_memory_figure():
    """One HBM convention across GPUs (issue 40): nvidia-smi's memory.total, a whole number
    of MiB, never a marketed decimal figure (H100 was 81,559 MiB while B200 was 180 GB)."""
    from topoc.compiler.lang import pipeline
    path = library_file("devices.topo")
    program = pipeline.front_end(pipeline.read(path), path)
    gpus = {m.name: m.attr("hbm") for m in program.device_models.values() if m.kind == "gpu"}
    assert {"H100", "H200", "B200", "B200_GB200", "B300", "B300_GB300", "L40S"} <= set(gpus)
    for name, hbm in gpus.items():
        assert hbm is not None and hbm % 2**20 == 0 and hbm % 10**9 != 0, (name, hbm)
    assert gpus["B200"] == 183359 * 2**20 and gpus["B300_GB300"] == 284208 * 2**20


def test_gb200_c2c_is_900_gbs_per_superchip():
    system = topoc.load(library_file("gb200_superchip.topo"))
    c2c = [link for link in system.links if link.cls == "nvlink_c2c"]
    assert len(c2c) == 2 and all(link.lanes == 5 for link in c2c)
    assert sum(link.bandwidth * 2 for link in c2c) == pytest.approx(900 * GB, rel=0.01)


def test_dgx_h100_switch_split_and_numa():
    system = topoc.load(library_file("dgx_h100.topo"))
    for gpu in system.gpus:
        split = sorted(link.lanes for link in system.links_of(gpu.id) if link.cls == "nvlink")
        assert split == [4, 4, 5, 5]
    g = system.graph
    # GPU i shares a PCIe switch with NIC i; GPUs 0-3 on socket 0.
    for i in range(8):
        assert set(g[f"dgx.gpu{i}"]) >= {f"dgx.pcie{i}"}
        assert set(g[f"dgx.nic{i}"]) == {f"dgx.pcie{i}"}
        assert f"dgx.cpu{i // 4}" in g[f"dgx.pcie{i}"]


def test_pcie_server_has_gpu_pairs_only_through_host():
    system = topoc.load(library_file("pcie_server.topo"))
    g = system.graph
    # GPUs 0 and 1 share a switch; GPUs 0 and 7 only meet through both sockets.
    assert set(g["server.gpu0"]) == set(g["server.gpu1"]) == {"server.pcie0"}
    import networkx as nx
    path = nx.shortest_path(g, "server.gpu0", "server.gpu7")
    assert "server.cpu0" in path and "server.cpu1" in path


def test_cluster_parameters_sweep():
    path = library_file("nvl72_cluster.topo")
    one = topoc.load(path, {"racks": 1})
    assert len(one.gpus) == 72
    four = topoc.load(path, {"racks": 4})
    assert len(four.gpus) == 288
    assert four.parallel("train").size("dp") == 4
    nodes = topoc.load(library_file("h100_cluster.topo"), {"nodes": 64})
    assert len(nodes.gpus) == 512


def test_cluster_rails_are_aligned():
    system = topoc.load(library_file("nvl72_cluster.topo"), {"racks": 2})
    g = system.graph
    for r in range(2):
        for t in range(18):
            for n in range(4):
                nic = f"cluster.rack{r}.tray{t}.nic{n}"
                assert f"cluster.leaf{4 * r + n}" in g[nic]
    # Every leaf reaches the 18 spines of its rail's plane and no other.
    for leaf in range(8):
        spines = {v for v in g[f"cluster.leaf{leaf}"] if ".plane" in v}
        assert spines == {f"cluster.plane{leaf % 4}.spine{k}" for k in range(18)}


def test_superpod_is_never_oversubscribed():
    for racks in (1, 5, 32, 64, 256):
        s = summarize(topoc.load(library_file("nvl72_superpod.topo"), {"racks": racks}))
        tiers = list(s["scaleout_tiers"].values())
        assert len(tiers) == 3 and tiers[0] == racks * 72 * 50e9
        assert tiers[0] <= tiers[1] <= tiers[2]          # each tier carries what enters it
        if racks % 32 == 0:
            assert len(set(tiers)) == 1                   # full pods: exactly full bisection


def test_every_library_file_checks_clean():
    from topoc import library
    for path in library.files():
        assert topoc.check(path) == [], path


@pytest.mark.parametrize("name,param", [("a100_cluster.topo", "nodes"),
                                        ("a100_superpod.topo", "nodes"),
                                        ("h100_cluster.topo", "nodes"),
                                        ("h100_superpod.topo", "nodes"),
                                        ("nvl72_cluster.topo", "racks"),
                                        ("nvl72_superpod.topo", "racks")])
def test_cluster_files_work_at_two(name, param, tmp_path):
    """Every bundled cluster compiles, reports its strategy and costs its world at 2."""
    from topoc.cli import main
    path = str(library_file(name))
    for verb in (["compile"], ["lint"], ["report", "--parallel", "train"],
                 ["cost", "--group", "world", "--sizes", "1GiB"]):
        assert main([verb[0], path, "-D", f"{param}=2", *verb[1:]]) == 0, verb


STORAGE = '''use "nvidia/links.topo"
use "nvidia/devices.topo"
device Storage : nic { rate = 400 Gb/s  role = "storage" }
device BF3 : dpu { rate = 400 Gb/s  cores = 16 }
group Node {
  gpu[4] : H100
  pcie[4] : PEX89104
  nic[4] : CX7
  store : Storage
  dpu : BF3
  cpu : Xeon8480C
  gpu[i] <-> pcie[i] : pcie5
  nic[i] <-> pcie[i] : pcie5
  store <-> pcie[0] : pcie5
  dpu <-> pcie[1] : pcie5
  pcie[*] <-> cpu : pcie5
}
group Two {
  node[2] : Node
  leaf[4] : QM9700
  sleaf : QM9700
  node[*].nic[n] <-> leaf[n] : ndr
  node[*].store <-> sleaf : ndr
  node[*].dpu <-> sleaf : ndr
}
system two : Two
'''


def test_dpus_and_storage_nics_stay_out_of_gpu_traffic():
    """A storage NIC and a BlueField DPU next to the GPUs: not a GPU's NIC, no rail, no NCCL
    net, no extra channels."""
    from topoc.backends import nccl_topo
    from topoc.compiler.collectives.orders import net_channels
    system = topoc.loads(STORAGE)
    loc = system.locality
    assert {loc.nic(r) for r in range(8)} == {f"two.node{k}.nic{i}" for k in (0, 1) for i in range(4)}
    assert net_channels(system, tuple(range(8))) == 8
    assert topoc.summary(system)["devices"]["dpu"] == 2
    from topoc.compiler.lint.lint import LintConfig, lint_system
    assert "W406" not in {d.code for d in lint_system(system, LintConfig())}
    xml = nccl_topo.render(system, "two.node0")
    assert xml.count("<net ") == 4


def test_a_nic_role_is_compute_or_storage():
    from topoc.compiler.base.diagnostics import CompileError
    with pytest.raises(CompileError, match="role 'stroage'.*did you mean 'storage'"):
        topoc.loads(STORAGE.replace('role = "storage"', 'role = "stroage"'))
