"""A fabric of several subnets (issue 47): ibnetdiscover sees the subnet of the HCA it runs on,
so a rail-optimised NVL72 cluster whose rails stay in their own spine planes needs one dump
per plane. The dumps are ibnetdiscover's output of ibsim running ``topoc export ibsim
library/nvidia/nvl72_cluster.topo -D racks=2``, attached at each plane's leaf
(tests/fixtures/ibnetdiscover/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

from topoc.cli import main

DUMPS = Path(__file__).parent / "fixtures" / "ibnetdiscover"
CLUSTER = "library/nvidia/nvl72_cluster.topo"


def _diff(b: Path, capsys) -> tuple[int, dict]:
    code = main(["diff", CLUSTER, str(b), "-D", "racks=2", "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_one_plane_says_it_is_one_subnet(capsys):
    code, doc = _diff(DUMPS / "nvl72_2racks_plane1.txt", capsys)
    assert code == 1
    # 3 other HCAs of each of 36 trays, 6 other leaves and 54 other spines: each named once
    assert len(doc["differences"]) == 36 * 3 + 6 + 54
    assert any(n.startswith("B holds only mlx5_1 of every host: the dump of one subnet?")
               for n in doc["notes"])


def test_the_planes_dumps_together_match_the_design(tmp_path, capsys):
    both = tmp_path / "planes.txt"
    both.write_text("".join((DUMPS / f"nvl72_2racks_plane{p}.txt").read_text()
                            for p in range(4)))
    code, doc = _diff(both, capsys)
    assert code == 0 and doc["equal"]
    assert not any("one subnet" in n for n in doc["notes"])
