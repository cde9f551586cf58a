"""Slurm, Kubernetes, ibsim and ibdiagnet files from library systems: their content, against
each tool's documented grammar (the tools themselves run in tests/cli/test_cluster_tools.py)."""

from __future__ import annotations

import re

import pytest

import topoc
from topoc.backends import ibsim, k8s, slurm
from topoc.cli import main
from ..conftest import expand_hostlist
from topoc.compiler.analysis.fabric import fabric, wiring

LIB = "library/nvidia/"


@pytest.fixture(scope="module")
def nvl72():
    return fabric(topoc.load(LIB + "nvl72_cluster.topo", defines={"racks": 2}),
                  "gb-{rack:02}-{tray:02}")


@pytest.mark.parametrize("names,expected", [
    (["n0", "n1", "n2", "n5"], "n[0-2,5]"),
    (["gb-00-01", "gb-00-02", "gb-01-01"], "gb-00-[01-02],gb-01-01"),
    (["a", "b1", "b01"], "a,b[1,01]"),
    (["x9", "x10", "x11"], "x[9-11]"),
])
def test_hostlist(names, expected):
    assert slurm.hostlist(names) == expected


def test_fabric_view_of_an_nvl72_cluster(nvl72):
    assert len(nvl72.hosts) == 36 and len(nvl72.hcas) == 144
    assert nvl72.tiers() == 2
    assert {s.tier for s in nvl72.switches if s.name.startswith("leaf")} == {1}
    assert nvl72.hosts_below("leaf0")[:2] == ("gb-00-00", "gb-00-01")
    assert len(nvl72.hosts_below("plane0_spine0")) == 36
    assert [len(b) for b in nvl72.blocks] == [18, 18]
    # every cable is numbered on a port at both ends, no port used twice
    ports = [(w.a, w.a_port) for w in wiring(nvl72)] + [(w.b, w.b_port) for w in wiring(nvl72)]
    assert len(ports) == len(set(ports))


def test_slurm_tree_and_block(nvl72):
    tree = slurm.render(nvl72, "tree")
    # A rack's four rail leaves hold the same trays: one switch, as Topograph merges them, so
    # slurmctld does not log "Multiple leaf switches contain nodes"; the 72 spines are then
    # left with the same two children and merge too.
    rows = [ln for ln in tree.splitlines() if not ln.startswith("#")]
    assert rows == ["SwitchName=leaf0 Nodes=gb-00-[00-17]",
                    "SwitchName=leaf4 Nodes=gb-01-[00-17]",
                    "SwitchName=plane0_spine0 Switches=leaf[0,4]"]
    assert "# leaf0 stands for leaf[0-3] (same nodes)\n" in tree
    assert slurm.merged_switches(nvl72)["plane0_spine0"][-1] == "plane3_spine17"
    block = slurm.render(nvl72, "block")
    lines = [ln for ln in block.splitlines() if not ln.startswith("#")]
    # topology.conf(5), topology/block: BlockName=<name> Nodes=<hostlist>, then BlockSizes=
    for ln in lines[:-1]:
        assert re.fullmatch(r"BlockName=[A-Za-z0-9_]+ Nodes=[A-Za-z0-9_\-\[\],]+", ln)
    assert lines == ["BlockName=block0 Nodes=gb-00-[00-17]",
                     "BlockName=block1 Nodes=gb-01-[00-17]", "BlockSizes=18,36"]


def test_slurm_yaml_holds_both(nvl72):
    text = slurm.render(nvl72, "block", "yaml")
    assert "- topology: tree\n  cluster_default: false\n" in text
    assert "- topology: block\n  cluster_default: true\n" in text
    assert "      - block: block1\n        nodes: \"gb-01-[00-17]\"" in text
    assert "    block_sizes:\n      - 18\n      - 36\n" in text


def test_storage_nics_and_dpus_stay_out_of_the_tree():
    text = ('use "nvidia/links.topo"\nuse "nvidia/devices.topo"\n'
            'device SNIC : nic { rate = 400 Gb/s  role = "storage" }\n'
            'group N { cpu : Grace  gpu : B200_GB200  nic : CX7  st : SNIC  dpu : BlueField3\n'
            '  cpu <-> gpu : c2c x 5  nic <-> cpu : pcie5  st <-> cpu : pcie5\n'
            '  dpu <-> cpu : pcie5 }\n'
            'group C { host node[2] : N  leaf : QM9700  store : QM9700\n'
            '  node[*].nic <-> leaf : ndr  node[*].st <-> store : ndr\n'
            '  node[*].dpu <-> store : ndr }\nsystem c : C\n')
    fab = fabric(topoc.loads(text))
    assert [s.name for s in fab.switches] == ["leaf"]
    assert [(h.host, h.index) for h in fab.hcas] == [("node0", 0), ("node1", 0)]
    assert slurm.render(fab, "tree").splitlines()[-1] == "SwitchName=leaf Nodes=node[0-1]"


def test_k8s_labels_and_kueue(nvl72):
    labels = k8s.labels(nvl72)
    # nvidia.com/gpu.clique is GPU Feature Discovery's (<ClusterUUID>.<CliqueID>): not written
    assert labels["gb-01-05"] == {
        "fabric.topograph.run/tier-0": "leaf4", "fabric.topograph.run/tier-1": "plane0_spine0",
        "accelerator.topograph.run/domain": "nvl1", "kubernetes.io/hostname": "gb-01-05"}
    assert k8s.labels(nvl72, clique=True)["gb-01-05"]["nvidia.com/gpu.clique"] == "nvl1"
    text = k8s.render(nvl72)
    assert "nvidia.com/gpu.clique" not in text
    assert "\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\n" in text
    assert text.count("kind: Node\n") == 36 and "kind: Topology" in text
    levels = re.findall(r'- nodeLabel: "([^"]+)"', text)
    assert levels == ["fabric.topograph.run/tier-1", "fabric.topograph.run/tier-0",
                      "accelerator.topograph.run/domain", "kubernetes.io/hostname"]


def test_ibsim_and_ibdiagnet_files():
    fab = fabric(topoc.load(LIB + "h100_cluster.topo", defines={"nodes": 4}))
    net = ibsim.render_ibsim(fab)
    assert '[1]\t"node0 mlx5_0"[1]\tw=4 e=4' in net            # 400 Gb/s as 8xHDR
    assert "written as 8xHDR (same rate)" in net
    assert net.count("\nHca\t1 ") == 32 and net.count("\nSwitch\t64 ") == 12
    assert ibsim.width_speed(200e9) == (4, (50, "HDR", "e", 4), True)
    with pytest.raises(ibsim.ExportError):
        ibsim.width_speed(800e9)
    plan = ibsim.render_ibdiagnet(fab)
    assert "QM9700 leaf0\n   P1 -> CX7 node0/U1 P1\n" in plan
    assert "CX7 node3/U8\n   P1 -> QM9700 leaf7 P4\n" in plan


def test_cli_errors(tmp_path, capsys):
    dgx = LIB + "dgx_h100.topo"
    assert main(["export", "slurm", dgx, "--topology", "tree", "-o", "-"]) == 1
    assert "no scale-out switches" in capsys.readouterr().err
    assert main(["export", "slurm", dgx, "-o", "-"]) == 2
    assert main(["export", "k8s", dgx, "--topology", "tree", "-o", "-"]) == 2
    assert main(["export", "nccl-topo", dgx, "--hostnames", "x{node}", "-o", "-"]) == 2
    assert main(["export", "k8s", LIB + "h100_cluster.topo", "--hostnames", "x{rack}",
                 "-o", "-"]) == 2
    assert "has no array 'rack'" in capsys.readouterr().err
    mapping = tmp_path / "hosts.txt"
    mapping.write_text("node0 alpha\ncluster.node1 beta\n")
    assert main(["export", "slurm", LIB + "h100_cluster.topo", "-D", "nodes=2", "--hostnames",
                 str(mapping), "--topology", "tree", "-o", "-"]) == 0
    assert "Nodes=alpha,beta" in capsys.readouterr().out
    out = tmp_path / "b.conf"
    assert main(["export", "slurm", dgx, "--topology", "block", "-o", str(out)]) == 0
    assert out.read_text().splitlines()[-2:] == ["BlockName=block0 Nodes=dgx", "BlockSizes=1"]


def test_yaml_files_parse(nvl72):
    yaml = pytest.importorskip("yaml")
    topologies = yaml.safe_load(slurm.render(nvl72, "tree", "yaml"))
    assert [t["topology"] for t in topologies] == ["tree", "block"]
    assert topologies[0]["cluster_default"] is True
    assert topologies[0]["tree"]["switches"][0] == {"switch": "leaf0", "nodes": "gb-00-[00-17]"}
    assert topologies[1]["block"]["block_sizes"] == [18, 36]
    docs = list(yaml.safe_load_all(k8s.render(nvl72)))
    nodes = [d for d in docs if d and d["kind"] == "Node"]
    assert len(nodes) == 36 and docs[-1]["kind"] == "Topology"
    assert nodes[0]["metadata"]["labels"]["kubernetes.io/hostname"] == "gb-00-00"


def _slurm_loads_blocks(text: str, version: tuple[int, int]) -> str | None:
    """Slurm's own checks of a topology/block file (block_record.c, _read_topo_file and
    block_record_validate): the first BlockSizes value is the base, every later one the base
    times a power of two (at most 2^15); before 25.05 a block with fewer nodes than the base is
    fatal. None when slurmctld would load it, else its fatal message."""
    sizes = [int(x) for x in re.search(r"^BlockSizes=(\S+)$", text, re.M).group(1).split(",")]
    base = sizes[0]
    for n in sizes:
        level = n // base
        if n % base or level & (level - 1) or level > 2 ** 15:
            return f"Invalid BlockSizes value: {n}"
    for name, nodes in re.findall(r"^BlockName=(\S+) Nodes=(\S+)$", text, re.M):
        count = sum(int(r.split("-")[1]) - int(r.split("-")[0]) + 1 if "-" in r else 1
                    for r in re.search(r"\[(.*)\]", nodes).group(1).split(","))
        if version < (25, 5) and count < base:
            return f"Block configuration ({name}) children count lower than bblock_node_cnt"
    return None


def test_block_sizes_follow_the_slurm_version(nvl72):
    """A 16-tray rack among 18-tray racks: before Slurm 25.05 a block smaller than the base
    stops slurmctld, so the base is the smallest block; 25.05 accepts it."""
    import attrs
    short = attrs.evolve(nvl72, blocks=(nvl72.blocks[0], nvl72.blocks[1][:16]))
    for version, sizes in ((None, "16,32"), ((24, 11), "16,32"), ((23, 11), "16,32"),
                           ((25, 5), "18,36"), ((25, 11), "18,36")):
        text = slurm.render(short, "block", version=version)
        assert text.splitlines()[-1] == f"BlockSizes={sizes}"
        assert _slurm_loads_blocks(text, version or (23, 11)) is None
    # what topoc wrote before: the largest block as the base, fatal on 24.11
    assert "children count lower" in _slurm_loads_blocks(
        slurm.render(short, "block", version=(25, 5)), (24, 11))
    # equal blocks: the same file for every version
    assert slurm.render(nvl72, "block", version=(24, 5)) == slurm.render(nvl72, "block",
                                                                        version=(25, 5))
    with pytest.raises(slurm.ExportError, match="no topology/block"):
        slurm.render(nvl72, "block", version=(23, 2))
    with pytest.raises(slurm.ExportError, match="arrived in 25.05"):
        slurm.render(nvl72, "tree", "yaml", version=(24, 11))
    assert slurm.parse_version("slurm 24.11.3") == (24, 11)
    assert slurm.parse_version("25.05") == (25, 5)
    with pytest.raises(slurm.ExportError):
        slurm.parse_version("latest")


def test_every_node_under_one_leaf():
    """slurmctld logs "Multiple leaf switches contain nodes" when a node is under two leaves:
    every rail-optimised library cluster's tree puts each host under exactly one."""
    for file, defines in (("nvl72_cluster.topo", {"racks": 3}), ("h100_cluster.topo",
                                                                 {"nodes": 8})):
        fab = fabric(topoc.load(LIB + file, defines=defines))
        leaves = [members for _, kind, members in slurm.tree_lines(fab) if kind == "Nodes"]
        expanded = [h for m in leaves for h in expand_hostlist(m)]
        assert sorted(expanded) == sorted(h.name for h in fab.hosts)


#: Kueue's v1beta2 Topology schema (apis/kueue/v1beta2/topology_types.go): 1 to 16 levels, each
#: a unique nodeLabel matching the label-key pattern, kubernetes.io/hostname only last.
_KUEUE_LABEL = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                          r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")


def test_kueue_topology_validates(nvl72, capsys):
    import json
    for api in k8s.KUEUE_APIS:
        doc = k8s.render(nvl72, kueue_api=api).split("\n---\n")[-1]
        assert doc.startswith(f"apiVersion: kueue.x-k8s.io/{api}\nkind: Topology\n")
        assert "\nspec:\n  levels:\n  - nodeLabel: " in doc
        levels = [json.loads(v) for v in re.findall(r"^  - nodeLabel: (.*)$", doc, re.M)]
        assert 1 <= len(levels) <= 16 and len(set(levels)) == len(levels)
        assert all(_KUEUE_LABEL.match(lv) and len(lv) <= 316 for lv in levels)
        assert "kubernetes.io/hostname" not in levels[:-1]
    with pytest.raises(ValueError):
        k8s.render(nvl72, kueue_api="v2")
    cluster = LIB + "nvl72_cluster.topo"
    assert main(["export", "k8s", cluster, "-D", "racks=1", "--kueue-api", "v1alpha1",
                 "--gpu-clique", "-o", "-"]) == 0
    out = capsys.readouterr().out
    assert "kueue.x-k8s.io/v1alpha1" in out and 'nvidia.com/gpu.clique: "nvl0"' in out
    assert main(["export", "slurm", cluster, "--topology", "tree", "--gpu-clique", "-o",
                 "-"]) == 2
    assert main(["export", "k8s", cluster, "--slurm-version", "25.05", "-o", "-"]) == 2
    assert main(["export", "slurm", cluster, "--topology", "tree", "--slurm-version", "new",
                 "-o", "-"]) == 2
    assert "is not a Slurm version" in capsys.readouterr().err
    assert main(["export", "slurm", cluster, "--format", "yaml", "--slurm-version", "24.11",
                 "-o", "-"]) == 1
    assert "reads no topology.yaml" in capsys.readouterr().err


def test_cables_in_numpy_match_the_link_by_link_pass():
    """The fabric's cables counted in numpy over the link arrays equal the pass one link at a
    time (kept for ends whose names sort alike), on fabrics of one, two and three tiers."""
    import numpy as np

    from topoc.compiler.analysis import fabric as fab_mod
    from topoc.compiler.ir.system import SCALEOUT_CLASSES
    for name, defines in (("h100_cluster.topo", None), ("nvl72_cluster.topo", {"racks": 2}),
                          ("h100_superpod.topo", {"nodes": 64})):
        system = topoc.load(LIB + name, defines=defines)
        fab = fabric(system)
        index = {d.id: i for i, d in enumerate(system.devices)}
        ends = {index[h.device]: f"{h.host}/{h.index}" for h in fab.hcas}
        ends.update({index[s.device]: s.name for s in fab.switches})
        kept = np.zeros(len(system.devices), dtype=np.bool_)
        kept[list(ends)] = True
        src, dst, codes, lanes = system.ends.arrays(lambda t: t.cls in SCALEOUT_CLASSES,
                                                    ("src", "dst", "type", "lanes"))
        slow = fab_mod._cables_by_name(ends, src, dst, codes, lanes, system.ends.types, kept)
        assert fab.cables == slow and len(slow) > 0
        assert sum(c.count for c in fab.cables) == int(lanes[kept[src] & kept[dst]].sum())


def test_cables_of_hosts_whose_names_sort_alike(tmp_path):
    """Hostnames that sort alike (node01 and node1) take the link-by-link pass: every cable
    once, ends in natural order, the same cables under the other names."""
    system = topoc.load(LIB + "h100_cluster.topo", defines={"nodes": 4})
    plain = fabric(system)
    alike = fabric(system, mapping={"node0": "node1", "node1": "node01"})
    assert len(alike.cables) == len(plain.cables)
    assert sum(c.count for c in alike.cables) == sum(c.count for c in plain.cables)
    from topoc.compiler.ir.locality import natural
    assert all(natural(c.a) <= natural(c.b) for c in alike.cables)
    keys = [(natural(c.a), natural(c.b), c.link_type) for c in alike.cables]
    assert keys == sorted(keys)
    rename = {"node1": "node01", "node0": "node1"}
    assert sorted((rename.get(c.a.split("/")[0], c.a.split("/")[0]), c.b)
                  for c in plain.cables if "/" in c.a) == \
        sorted((c.a.split("/")[0], c.b) for c in alike.cables if "/" in c.a)
