"""The blast radius as a heat map on the diagram (backends/heat.py, issue 48): each box filled
by the worst single failure it shows, against the worst, on the blast table's scale."""

from __future__ import annotations

import re

import pytest

import topoc
from topoc.backends import render as r
from topoc.backends.blast_table import HEAT, heat
from topoc.backends.heat import heat_colors, heat_map
from topoc.cli import main
from topoc.compiler.analysis.blast import blast

H100 = "library/nvidia/h100_cluster.topo"


@pytest.fixture(scope="module")
def cluster():
    system = topoc.load(H100, defines={"nodes": 2})
    return system, blast(system)


def _fills(dot: str) -> dict[str, str]:
    """Box id -> fillcolor in a DOT text (a node's attributes run over several lines)."""
    out = {}
    starts = list(re.finditer(r'^\t*"([^"]+)" \[', dot, re.M))
    for m, nxt in zip(starts, starts[1:] + [None]):
        body = dot[m.end():nxt.start() if nxt else len(dot)]
        fill = re.search(r'fillcolor="(#[0-9a-f]{6})"', body)
        if fill:
            out[m.group(1)] = fill.group(1)
    return out


def test_every_member_of_every_class_carries_its_cost(cluster):
    system, found = cluster
    heat_of = {i: (c, tag) for i, c, tag in heat_map(found)}
    assert len(heat_of) == sum(d.members for d in found)
    for d in found:
        assert d.ids[0] == d.example and len(d.ids) == d.members
        assert [heat_of[i][0] for i in d.ids] == [pytest.approx(d.impact / d.members)] * d.members
    assert heat_of["cluster.node0.gpu0"][1] == "-1 GPU"
    assert heat_of["cluster.leaf0"][1].startswith("x")


def test_boxes_filled_by_the_worst_failure_they_show(cluster):
    system, found = cluster
    view, nodes, _ = r.choose_view(system)
    drawn = {n.id for n in nodes}
    colors = heat_colors(r.box_finder(system, drawn), heat_map(found))
    one = {i: c for i, c, _ in heat_map(found)}
    worst = max(one[i] for i in one if i in drawn)
    # a device drawn as its own box: its own failure's step of the scale
    for i in drawn & set(one):
        step = heat(one[i], worst)
        assert colors.get(i, (HEAT[0],))[0] == HEAT[step], i
    # the costliest box is the darkest; what costs nothing is left as drawn
    assert any(c[0] == HEAT[4] for c in colors.values())
    assert all(i not in colors for i in drawn & set(one) if one[i] == 0)
    # a leaf takes one rail from every node: among the darkest boxes (docs/failures.md)
    assert heat(one["cluster.leaf0"], worst) >= 3


def test_render_heat_from_the_cli_and_the_api(cluster, tmp_path, capsys):
    system, found = cluster
    out = tmp_path / "heat.dot"
    assert main(["render", H100, "-D", "nodes=2", "--heat", "blast", "-o", str(out)]) == 0
    dot = out.read_text()
    api, _ = r.render(system, "dot", r.Options(heat=heat_map(found)))
    assert api.decode() == dot
    # the default (fabric) view: the box of the pod's leaves is among the darkest
    assert _fills(dot)["pod0.leaves"] in HEAT[3:]
    assert "the worst single failure in the box" in dot
    assert _fills(r.render(system, "dot")[0].decode())["pod0.leaves"] not in HEAT
    # the logical view: the leaf's own box
    logical = tmp_path / "logical.dot"
    assert main(["render", H100, "-D", "nodes=2", "--heat", "blast", "--view", "logical",
                 "-o", str(logical)]) == 0
    fills = _fills(logical.read_text())
    assert fills["cluster.leaf0"] in HEAT[3:]
    # without --heat the same boxes keep their kinds' colours
    plain = _fills(r.render(system, "dot", r.Options(view="logical"))[0].decode())
    assert plain["cluster.leaf0"] not in HEAT
    again = tmp_path / "again.dot"
    assert main(["render", H100, "-D", "nodes=2", "--heat", "blast", "-o", str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()
    capsys.readouterr()
    assert main(["render", H100, "-D", "nodes=2", "--heat", "blast", "--parallel", "train",
                 "--color", "dp", "-o", str(tmp_path / "x.dot")]) == 2
    assert "--heat fills the boxes instead of --color" in capsys.readouterr().err


def test_the_html_report_draws_the_heat_map_with_blast(tmp_path):
    src = tmp_path / "train.topo"
    src.write_text('use "nvidia/h100_cluster.topo"\nuse "models/llama3.topo"\n'
                   "system c : H100Cluster(nodes = 2)\n"
                   "parallel train on c { tp = 8  dp = 2  model = llama3_8b  batch = 64 }\n")
    out = tmp_path / "r.html"
    assert main(["report", str(src), "--format", "html", "--blast", "-o", str(out)]) == 0
    diagram = out.read_text().split('id="diagram"')[1].split("</svg>")[0]
    assert "the worst single failure in the box" in diagram
    assert any(c in diagram for c in HEAT[1:])
    plain = tmp_path / "p.html"
    assert main(["report", str(src), "--format", "html", "-o", str(plain)]) == 0
    assert "the worst single failure" not in plain.read_text()
