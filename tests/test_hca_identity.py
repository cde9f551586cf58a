"""HCA identity through import, diff and export (issue 47): an ibnetdiscover dump's
``mlx5_N`` is kept, so one dead card is one difference and a subnet holding some of each host's
rails can match a design. The dump is ibnetdiscover's output of ibsim running
``topoc export ibsim library/nvidia/h100_cluster.topo -D nodes=8``
(tests/fixtures/ibnetdiscover/README.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import topoc
from topoc.backends import ibsim
from topoc.cli import main
from topoc.compiler.analysis.fabric import fabric
from topoc.importers.ibnetdiscover import from_ibnetdiscover

DUMP = Path(__file__).parent / "fixtures" / "ibnetdiscover" / "h100_cluster_8.txt"
CLUSTER = "library/nvidia/h100_cluster.topo"


def carve(text: str, drop) -> str:
    """The dump without the nodes whose description ``drop`` accepts, as ibnetdiscover prints
    a fabric without them: their records and every port line that names them go."""
    out = []
    for block in text.split("\n\n"):
        desc = re.search(r'^(?:Switch|Ca)\s+\d+\s+"\S+"\s+# "([^"]*)"', block, re.M)
        if desc and drop(desc.group(1)):
            continue
        out.append("\n".join(ln for ln in block.split("\n")
                             if not (ln.startswith("[") and
                                     any(drop(d) for d in re.findall(r'# "([^"]*)"', ln)))))
    return "\n\n".join(out)


def _json_diff(a: str, b: Path, capsys, *flags) -> tuple[int, dict]:
    code = main(["diff", a, str(b), "--format", "json", *flags])
    return code, json.loads(capsys.readouterr().out)


def test_the_dump_matches_its_design(capsys):
    code, doc = _json_diff(CLUSTER, DUMP, capsys, "-D", "nodes=8")
    assert code == 0 and doc["equal"]


def test_one_removed_hca_is_one_difference(tmp_path, capsys):
    dead = tmp_path / "dead.txt"
    dead.write_text(carve(DUMP.read_text(), lambda d: d == "node3 mlx5_3"))
    text, notes = from_ibnetdiscover(dead.read_text(), "dead.txt")
    # node3 keeps mlx5_4..7 as themselves, not renumbered nic3..6
    assert "mlx5_0 : HCA_400G  mlx5_1 : HCA_400G  mlx5_2 : HCA_400G  mlx5_4 : HCA_400G" in text
    assert not any("numbered" in n for n in notes)
    assert "# node3 HCA node GUIDs: mlx5_0=0x0000000000100030" in text
    code, doc = _json_diff(CLUSTER, dead, capsys, "-D", "nodes=8")
    assert code == 1
    assert [(d["category"], d["where"]) for d in doc["differences"]] == [
        ("devices", "node3 mlx5_3")]
    assert doc["differences"][0]["message"] == (
        "node3: NIC mlx5_3 (CX7) is in A but not in B, cabled to leaf3 there")
    # and the imported file keeps the identity through its own export: ibsim names mlx5_4 again
    fab = fabric(topoc.loads(text))
    assert [h.index for h in fab.hcas if h.host == "node3"] == [0, 1, 2, 4, 5, 6, 7]
    assert '"node3 mlx5_4"' in ibsim.render_ibsim(fab)
    assert "\"node3 mlx5_3\"" not in ibsim.render_ibsim(fab)


def test_a_subnet_of_half_the_rails_matches_its_design(tmp_path, capsys):
    """mlx5_1, 2, 5 and 6 of every host on their four leaves (one subnet of a two-subnet
    fabric): a design naming those HCAs matches exactly, and so does one with four positional
    NICs (matched in order of identity)."""
    keep = {1, 2, 5, 6}
    half = tmp_path / "half.txt"
    half.write_text(carve(DUMP.read_text(), lambda d: bool(
        re.search(r"mlx5_(\d+)$", d) and int(d.rsplit("_", 1)[1]) not in keep
        or re.match(r"MF0;leaf(\d+):", d) and int(re.match(r"MF0;leaf(\d+)", d).group(1))
        not in keep)))
    common = ('use "nvidia/links.topo"\nuse "nvidia/devices.topo"\n'
              "group C {{\n  host node[8] : N\n  leaf1 : QM9700\n  leaf2 : QM9700\n"
              "  leaf5 : QM9700\n  leaf6 : QM9700\n  spine[4] : QM9700\n{wires}"
              "  leaf1 <-> spine[*] : ndr x 8\n  leaf2 <-> spine[*] : ndr x 8\n"
              "  leaf5 <-> spine[*] : ndr x 8\n  leaf6 <-> spine[*] : ndr x 8\n}}\n"
              "system cluster : C\n")
    named = tmp_path / "named.topo"
    named.write_text("group N { mlx5_1 : CX7  mlx5_2 : CX7  mlx5_5 : CX7  mlx5_6 : CX7 }\n"
                     + common.format(wires="".join(f"  node[*].mlx5_{n} <-> leaf{n} : ndr\n"
                                                   for n in sorted(keep))))
    positional = tmp_path / "positional.topo"
    positional.write_text("group N { nic[4] : CX7 }\n" + common.format(wires="".join(
        f"  node[*].nic[{i}] <-> leaf{n} : ndr\n" for i, n in enumerate(sorted(keep)))))
    for design in (named, positional):
        code, doc = _json_diff(str(design), half, capsys)
        assert code == 0, doc["differences"][:3]
    # the full 8-rail design against the one subnet: each host lacks exactly its other rails
    code, doc = _json_diff(CLUSTER, half, capsys, "-D", "nodes=8")
    assert code == 1 and len(doc["differences"]) == 8 * 4 + 4     # 4 HCAs a host, 4 leaves
    assert {d["where"].split()[1] for d in doc["differences"] if d["category"] == "devices"} \
        == {"mlx5_0", "mlx5_3", "mlx5_4", "mlx5_7"}


def test_identity_from_names():
    from topoc.compiler.analysis.fabric import hca_indices
    assert hca_indices(["c.n.mlx5_1", "c.n.mlx5_5"]) == (1, 5)
    assert hca_indices(["c.n.nic0", "c.n.nic3"]) == (0, 3)
    # no number, or the same number twice (two superchips' nic0): positions
    assert hca_indices(["c.n.cx", "c.n.nic1"]) == (0, 1)
    assert hca_indices(["c.n.sc0.nic0", "c.n.sc1.nic0"]) == (0, 1)
