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


PLANES = [DUMPS / f"nvl72_2racks_plane{p}.txt" for p in range(4)]


def _diff_planes(bs, capsys, fmt: str = "json"):
    code = main(["diff", CLUSTER, *map(str, bs), "-D", "racks=2", "--format", fmt])
    out = capsys.readouterr().out
    return code, (json.loads(out) if fmt == "json" else out)


def _without(text: str, drop) -> str:
    """The dump without the port lines ``drop(switch, line)`` says are gone (both ends of a
    cable are listed, each under its own node)."""
    out, node = [], None
    for line in text.split("\n"):
        if line.startswith(("Switch", "Ca")):
            node = line.rsplit('# "', 1)[1].split('"')[0]
        if not drop(node, line):
            out.append(line)
    return "\n".join(out)


def _no_spine_cable(text: str) -> str:
    """plane 2's dump without the cable between leaf6 and plane2_spine0."""
    return _without(text, lambda node, line: line.startswith("[") and (
        node.startswith("MF0;leaf6:") and '"MF0;plane2_spine0:' in line
        or node.startswith("MF0;plane2_spine0:") and '"MF0;leaf6:' in line))


def _planes_with(tmp_path, plane2: str) -> list[Path]:
    """The four dumps with plane 2's replaced by ``plane2`` (under its own name)."""
    (tmp_path / PLANES[2].name).write_text(plane2)
    return [*PLANES[:2], tmp_path / PLANES[2].name, PLANES[3]]


def test_the_planes_dumps_as_several_b_files_match_the_design(capsys):
    code, doc = _diff_planes(PLANES, capsys)
    assert code == 0 and doc["equal"] and doc["differences"] == []
    assert doc["b"] == " + ".join(map(str, PLANES))
    assert "cabling" in doc["compared"]


def test_a_cable_missing_from_plane_2_is_one_difference_on_plane_2(tmp_path, capsys):
    text = PLANES[2].read_text()
    cut = _no_spine_cable(text)
    assert text.count("\n") - cut.count("\n") == 2     # both ends of one cable
    code, doc = _diff_planes(_planes_with(tmp_path, cut), capsys)
    assert code == 1
    (only,) = doc["differences"]
    assert only["category"] == "cabling" and only["where"] == "leaf6 <-> plane2_spine0"
    assert only["plane"] == "plane 2: nvl72_2racks_plane2.txt"
    assert only["message"].endswith("in A, 0 in B (plane 2: nvl72_2racks_plane2.txt)")
    code, out = _diff_planes(_planes_with(tmp_path, cut), capsys, "text")
    assert "(plane 2: nvl72_2racks_plane2.txt)" in out.splitlines()[0]
    # the same finding as the concatenated dumps give, which cannot name a plane
    both = tmp_path / "all.txt"
    both.write_text("".join(p.read_text() for p in _planes_with(tmp_path, cut)))
    _, one = _diff_planes([both], capsys)
    (same,) = one["differences"]
    assert "plane" not in same and only["message"] == same["message"] + f" ({only['plane']})"


def test_an_hca_missing_from_plane_2_names_plane_2(tmp_path, capsys):
    gone = '"rack1-tray0 mlx5_2"'
    lines = PLANES[2].read_text().split("\n")
    at = next(i for i, x in enumerate(lines) if x.startswith("Ca") and x.endswith(gone))
    cut = "\n".join(x for i, x in enumerate(lines) if i not in (at, at + 1) and gone not in x)
    code, doc = _diff_planes(_planes_with(tmp_path, cut), capsys)
    assert code == 1
    (only,) = doc["differences"]
    assert only["where"] == "rack1-tray0 mlx5_2" and "is in A but not in B" in only["message"]
    assert only["plane"] == "plane 2: nvl72_2racks_plane2.txt"


def test_one_b_file_is_unchanged(capsys):
    """A single B takes the one-file path: no plane, and the text as before."""
    code, doc = _diff_planes([PLANES[1]], capsys)
    assert code == 1 and not any("plane" in d for d in doc["differences"])
    assert not any(d["message"].endswith(")") and "(plane " in d["message"]
                   for d in doc["differences"])


def test_several_b_files_must_be_ibnetdiscover_dumps(capsys):
    code = main(["diff", CLUSTER, str(PLANES[0]), CLUSTER, "-D", "racks=2"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{CLUSTER}: several B files are ibnetdiscover dumps (one per subnet), not a topo" \
           in err


def test_a_bad_line_is_reported_in_its_own_dump(tmp_path, capsys):
    bad = tmp_path / "plane1.txt"
    bad.write_text(PLANES[1].read_text().replace("4xNDR", "4xQDX", 1))
    line = PLANES[1].read_text().split("\n").index(
        next(x for x in PLANES[1].read_text().split("\n") if "4xNDR" in x)) + 1
    code = main(["diff", CLUSTER, str(PLANES[0]), str(bad), "-D", "racks=2"])
    err = capsys.readouterr().err
    assert code == 2 and f"{bad}:{line}:1: E180 error: unknown link speed 'QDX'" in err


def test_import_takes_several_dumps_as_one_fabric(tmp_path, capsys):
    out, cat = tmp_path / "fabric.topo", tmp_path / "cat.topo"
    both = tmp_path / "all.txt"
    both.write_text("".join(p.read_text() for p in PLANES))
    assert main(["import", "ibnetdiscover", *map(str, PLANES), "-o", str(out)]) == 0
    assert main(["import", "ibnetdiscover", str(both), "-o", str(cat)]) == 0
    ours, theirs = out.read_text().split("\n"), cat.read_text().split("\n")
    assert ours[1:] == theirs[1:]       # the union: only the header's file names differ
    assert ", ".join(map(str, PLANES)).replace(", ", " + ") in ours[0]
    capsys.readouterr()
    code, doc = _diff_planes([out], capsys)
    assert code == 0 and doc["equal"]
    assert main(["import", "hwloc", str(PLANES[0]), str(PLANES[1]), "-o", str(out)]) == 2
    assert "several inputs are for ibnetdiscover dumps" in capsys.readouterr().err


def test_python_api_names_the_plane(tmp_path):
    from topoc.compiler.analysis.diff import diff
    from topoc.compiler.lang import pipeline
    from topoc.importers.base import compile_imported
    from topoc.importers.ibnetdiscover import from_ibnetdiscover, merge

    dumps = [(p.read_text(), p.name) for p in PLANES]
    dumps[2] = (_no_spine_cable(dumps[2][0]), dumps[2][1])
    joined, where = merge(dumps)
    assert where["leaf6"] == (2,) and where["plane0_spine3"] == (0,)
    b = compile_imported(from_ibnetdiscover(joined, "planes")[0], "planes", "dumps")
    a = pipeline.compile(Path(CLUSTER).read_text(), CLUSTER, {"racks": 2})
    d = diff(a, b, planes={k: f"plane {v[0]}" for k, v in where.items()})
    assert [f.plane for f in d.findings] == ["plane 2"]
