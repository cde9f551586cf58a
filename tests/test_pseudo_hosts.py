"""CAs that are no host's HCA in a real dump (issue 47): SHARP aggregation nodes and HCAs that
keep the adapter's default node description are recognised, reported, and kept out of hosts
and exports. The dump is ibnetdiscover's output of ibsim running h100_cluster -D nodes=8 with a
SHARP aggregation node behind port 65 of every switch, and node6's and node7's HCAs describing
themselves as ``MT4129 ConnectX7 Mellanox Technologies`` (tests/fixtures/ibnetdiscover)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import topoc
from topoc.backends import ibsim, k8s, slurm
from topoc.cli import main
from .conftest import expand_hostlist
from topoc.compiler.analysis.fabric import fabric
from topoc.importers.ibnetdiscover import from_ibnetdiscover

DUMP = Path(__file__).parent / "fixtures" / "ibnetdiscover" / "h100_cluster_8_sharp.txt"
CLUSTER = "library/nvidia/h100_cluster.topo"


def _imported():
    text, notes = from_ibnetdiscover(DUMP.read_text(), "sharp.txt")
    return text, notes, fabric(topoc.loads(text))


def test_sharp_nodes_and_unnamed_hcas_are_no_hosts():
    text, notes, fab = _imported()
    assert [h.name for h in fab.hosts] == [f"node{i}" for i in range(6)]
    assert {sum(x.host == h.name for x in fab.hcas) for h in fab.hosts} == {8}
    assert any(n.startswith("12 SHARP aggregation node(s)") for n in notes)
    assert any(n.startswith("16 HCA(s) report the adapter's default node description "
                            "('MT4129 ConnectX7 Mellanox Technologies')") for n in notes)
    assert "16 unnamed HCAs, 12 SHARP aggregation nodes" in text.splitlines()[0]
    assert "  hca_100060 : HCA_400G  # unnamed HCA, node GUID 0x0000000000100060" in text
    assert "leaf0 port 65" in text and "spine3 port 65" in text
    # the aggregation nodes' switch-internal port 65 is not cabled: QM9700s keep 64 ports
    assert "Aggregation" not in text.replace("# SHARP aggregation nodes", "")


def test_exports_skip_them():
    _, _, fab = _imported()
    tree = slurm.render(fab, "tree")
    assert "SwitchName=leaf0 Nodes=node[0-5]\n" in tree
    labels = k8s.labels(fab)
    assert list(labels) == [f"node{i}" for i in range(6)]
    net = ibsim.render_ibsim(fab)
    assert "hca_" not in net and "MT4129" not in net and "Aggregation" not in net
    assert net.count("\nHca\t") == 48


def test_diff_names_the_hosts_it_cannot_see(capsys):
    assert main(["diff", CLUSTER, str(DUMP), "-D", "nodes=8", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [d["message"] for d in doc["differences"]] == [
        "host 'node6' is in A but not in B, with its 8 cable(s)",
        "host 'node7' is in A but not in B, with its 8 cable(s)"]
    assert any(n.startswith("B has 16 NIC(s) cabled to the fabric outside any host")
               for n in doc["notes"])


def test_guids_place_the_unnamed_hcas(tmp_path, capsys):
    """The hosts' own GUID lists (``topoc import hwloc --guids``) put node6's and node7's
    HCAs back: the dump then matches the design."""
    guids = tmp_path / "guids.txt"
    guids.write_text("".join(f"0x{0x100060 + 16 * h + 2 * k:016x} node{6 + h} {k}\n"
                             for h in range(2) for k in range(8)))
    out = tmp_path / "fabric.topo"
    assert main(["import", "ibnetdiscover", str(DUMP), "--guids", str(guids), "-o",
                 str(out)]) == 0
    capsys.readouterr()
    assert "hca_" not in out.read_text()
    assert main(["diff", CLUSTER, str(out), "-D", "nodes=8"]) == 0


#: A real cluster's dump (NVIDIA/topograph's test fixture): SHARP nodes, unnamed HCAs, a UFM
#: host, one subnet of a multi-rail fabric (tests/fixtures/ibnetdiscover/README.md).
REAL = Path(__file__).parent / "fixtures" / "ibnetdiscover" / "topograph_example.out"


def _real():
    text, notes = from_ibnetdiscover(REAL.read_text(), "example.out")
    return text, notes, fabric(topoc.loads(text))


def test_a_real_dump_imports_with_its_special_nodes_recognised():
    text, notes, fab = _real()
    assert text.splitlines()[0].endswith(
        "40 switches, 473 HCAs in 122 hosts (1 management, 2 unnamed), 69 unnamed HCAs, "
        "40 SHARP aggregation nodes, 1114 cables.")
    assert any(n.startswith("1 management host(s) recognised by name ('B11-P1-CUFM-02'")
               for n in notes)
    assert any(n.startswith("40 SHARP aggregation node(s)") for n in notes)
    assert any(n.startswith("69 HCA(s) report the adapter's default node description")
               for n in notes)
    assert any(n.startswith("2 unnamed host(s) recognised by name ('localhost', 'ubuntu'")
               for n in notes)
    # the UFM host keeps its HCAs and cables, but is no host, nor are 'localhost' and
    # 'ubuntu' (hostnames never set): 119 GPU hosts
    assert "  B11_P1_CUFM_02 : IBHost0  # management host B11-P1-CUFM-02, not a GPU host" in text
    assert "B09_P1_IBLEAF_03_08 <-> B11_P1_CUFM_02.nic[0] : ndr" in text
    names = [h.name for h in fab.hosts]
    assert len(names) == 119 and "B11-P1-CUFM-02" not in names
    assert all(re.match(r"^[ab]\d\d-p1-dgx-\d\d-c\d\d$", n) for n in names)
    # one subnet of each host's rails, kept as the hosts name them: HCA-1, 2, 5, 6 on most,
    # mlx5_0, 1, 4, 5 on the a08 row
    rails = {h: {x.index for x in fab.hcas if x.host == h} for h in names}
    assert {frozenset(v) for k, v in rails.items() if not k.startswith("a08")} <= {
        frozenset(s) for s in ({1, 2, 5, 6}, {1, 2, 6}, {1, 2, 5}, {2, 5, 6}, {1, 5, 6})}
    assert rails["a08-p1-dgx-04-c01"] == {0, 1, 4, 5}
    assert len(fab.switches) == 40 and fab.tiers() == 2


def test_a_real_dump_exports_to_slurm_and_kubernetes():
    _, _, fab = _real()
    tree = slurm.render(fab, "tree")
    assert "CUFM" not in tree and "MT4129" not in tree and "hca_" not in tree
    listed = set()
    for ln in tree.splitlines():
        m = re.match(r"SwitchName=\S+ Nodes=(\S+)$", ln)
        if m:
            listed |= set(expand_hostlist(m.group(1)))
    assert listed == {h.name for h in fab.hosts}
    labels = k8s.labels(fab)
    assert sorted(labels) == sorted(h.name for h in fab.hosts)
    assert all(re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", n) for n in labels)
    doc = k8s.render(fab)
    assert "CUFM" not in doc and "kueue.x-k8s.io/v1beta2" in doc


def test_one_removed_hca_of_a_real_dump_is_one_difference(tmp_path, capsys):
    from tests.test_hca_identity import carve
    first = tmp_path / "fabric.topo"
    assert main(["import", "ibnetdiscover", str(REAL), "-o", str(first)]) == 0
    capsys.readouterr()
    assert main(["diff", str(first), str(REAL)]) == 0
    dead = tmp_path / "dead.txt"
    dead.write_text(carve(REAL.read_text(), lambda d: d == "a06-p1-dgx-02-c01 HCA-5"))
    capsys.readouterr()
    assert main(["diff", str(first), str(dead), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [(d["category"], d["where"]) for d in doc["differences"]] == [
        ("devices", "a06-p1-dgx-02-c01 mlx5_5")]


def test_role_names():
    from topoc.importers.ibnetdiscover import role_of
    for name, role in (("B11-P1-CUFM-02", "management"), ("ufm01", "management"),
                       ("mgmt-3", "management"), ("headnode", "management"),
                       ("login01", "management"), ("storage07", "storage"),
                       ("ddn-sfa-1", "storage"), ("lustre-oss3", "storage"),
                       ("weka_12", "storage"), ("localhost", "unnamed"),
                       ("ubuntu", "unnamed")):
        assert role_of(name).name == role, name
    for name in ("a05-p1-dgx-01-c01", "node3", "gb-00-01", "headless7", "boss1", "dgx-h100-17",
                 "storm3", "ubuntu-gpu-3"):
        assert role_of(name) is None, name
