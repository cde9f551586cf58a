"""CAs that are no host's HCA in a real dump (issue 47): SHARP aggregation nodes and HCAs that
keep the adapter's default node description are recognised, reported, and kept out of hosts
and exports. The dump is ibnetdiscover's output of ibsim running h100_cluster -D nodes=8 with a
SHARP aggregation node behind port 65 of every switch, and node6's and node7's HCAs describing
themselves as ``MT4129 ConnectX7 Mellanox Technologies`` (tests/fixtures/ibnetdiscover)."""

from __future__ import annotations

import json
from pathlib import Path

import topoc
from topoc.backends import ibsim, k8s, slurm
from topoc.cli import main
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
