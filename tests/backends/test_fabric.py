"""The fabric view (backends/fabric.py): what its boxes and lines stand for, folding with the
exceptions drawn, planes side by side, rails, overlays, refusal on one machine, determinism."""

from __future__ import annotations

import re

import pytest

import topoc
from topoc.backends import fabric as f
from topoc.backends import render as r
from topoc.cli import main

from ..conftest import ROOT, library_file


def _load(name: str, **defines):
    return topoc.load(library_file(name), defines=defines)


def test_planes_stand_side_by_side_over_each_racks_leaves():
    """nvl72_cluster: 8 racks, each under its own 4 leaves (one line a rail, four colours),
    the 4 spine planes in one row above, every leaf set meshed to every plane as one bar."""
    boxes, lines, _ = f.build(_load("nvl72_cluster.topo"))
    rows = {b.id: b.row for b in boxes}
    machines = [b for b in boxes if b.row == 0]
    planes = [b for b in boxes if b.row == 2]
    assert len(machines) == 8 and [b.label.split("\n")[0] for b in planes] == \
        ["plane0", "plane1", "plane2", "plane3"]
    rails = [ln for ln in lines if ln.rail >= 0]
    assert {ln.rail for ln in rails} == {0, 1, 2, 3} and len(rails) == 8 * 4
    assert all(ln.cables == 18 for ln in rails)         # a rack's 18 trays to each rail leaf
    drawing = f.draw(_load("nvl72_cluster.topo"))
    assert drawing.source.count('"mesh1.2"') >= 8 + 4   # the bar and a stub from each box
    pos = {m.group(1): float(m.group(2)) for m in
           re.finditer(r'^"([^"]+)" \[label="[^"]*", pos="[\d.]+,([\d.]+)!', drawing.source,
                       re.M)}
    assert all(pos[a] < pos[b] for a in rows for b in rows if rows[a] < rows[b])


def test_identical_pods_fold_and_the_partial_unit_is_drawn_beside_them():
    """1,100 DGX H100 nodes: 34 full scalable units fold into one box (x 34), the 35th of 12
    nodes is its own box; spine groups that differ (its pod of SUs) too."""
    boxes, _, _ = f.build(_load("h100_superpod.topo", nodes=1100))
    machines = {b.label.split("\n")[0]: b for b in boxes if b.row == 0}
    assert machines["node[0..1087]"].times == 34 and "x 34" in machines["node[0..1087]"].label
    assert machines["node[1088..1099]"].times == 1
    assert "12 nodes" in machines["node[1088..1099]"].label
    assert len([b for b in boxes if b.row == 2]) == 2


def test_folded_cables_are_counted_per_unit_and_in_all():
    """A folded box's line says each unit's figure; the line holds every cable it stands for."""
    boxes, lines, _ = f.build(_load("h100_superpod.topo", nodes=512))
    times = {b.id: b.times for b in boxes}
    node_leaf = [ln for ln in lines if ln.rail >= 0]
    assert sum(ln.cables for ln in node_leaf) == 512 * 8
    assert all(ln.cables // times[ln.low] == 32 for ln in node_leaf)


def test_one_machine_is_refused_naming_the_logical_view(tmp_path, capsys):
    assert main(["render", str(library_file("dgx_h100.topo")), "--view", "fabric",
                 "-o", str(tmp_path / "f.svg")]) == 2
    err = capsys.readouterr().err
    assert "--view logical" in err and not (tmp_path / "f.svg").exists()
    with pytest.raises(r.TooLarge):
        r.render(_load("gb200_nvl72.topo"), "dot", r.Options(view="fabric"))


def test_a_highlighted_gpu_outlines_its_pod_and_the_colours_follow_its_groups():
    system = _load("h100_cluster.topo")
    source = r.fabric_source(system, r.Options("fabric", highlight=(system.gpus[-1].id,)))
    outlined = re.findall(r'^"([^"]+)" \[[^\n]*color="red", penwidth="4"', source, re.M)
    assert outlined == ["pod0.machines"]
    source = r.fabric_source(system, r.Options("fabric", parallel="train", color="dp"))
    assert re.search(r'"pod0.machines" \[label="[^"]*\\ndp:0\.\.\d+"', source)


def test_the_fabric_view_is_the_same_bytes_twice():
    one = r.fabric_source(_load("nvl72_fourtier.topo", racks=40), r.Options("fabric"))
    two = r.fabric_source(_load("nvl72_fourtier.topo", racks=40), r.Options("fabric"))
    assert one == two


def test_a_gb300_rack_with_cx8_switches_and_bluefield3_draws_in_every_view(tmp_path, capsys):
    """Issue 46: a GB300 NVL72 with each CX8's PCIe switch and a BlueField-3 a Grace was
    refused in the logical and physical views (8,023 pt wide, 5.9:1): its compute trays now
    wrap into two rows above and two below the NVLink switches; the default (a slide) is the
    racks view."""
    path = str(ROOT / "tests" / "fixtures" / "render" / "gb300_cx8_bf3.topo")
    for view in ("logical", "physical"):
        assert main(["render", path, "--view", view, "-o", str(tmp_path / f"{view}.svg")]) == 0
        svg = (tmp_path / f"{view}.svg").read_bytes()
        assert b"tray17" in svg and b"cx8sw3" in svg and b"dpu1" in svg
    assert main(["render", path, "-o", str(tmp_path / "d.dot")]) == 0
    assert "drew the racks view" in capsys.readouterr().err


def test_a_fans_figure_is_written_at_its_middle():
    """h100_fourtier: the 8 lines from the core group to the pods carry one figure, written
    once, between the fan's two middle lines (it was beside the leftmost, shallowest line,
    far from the fan), and clear of every line."""
    from . import geometry
    svg, view = r.render(_load("h100_fourtier.topo"), "svg")
    assert view == "fabric"
    _, lines, _, _ = geometry.read(svg)
    fan = [pts for a, b, pts in lines if "core0" in a + b]
    assert len(fan) == 8
    label = [box for owner, text, box in geometry.texts(svg) if text == "x64 800 GB/s"]
    assert len(label) == 1
    x0, y0, x1, y1 = label[0]
    y = (y0 + y1) / 2

    def x_at(pts):      # the line's x at the label's height (straight lines)
        (ax, ay), (bx, by) = pts[0], pts[-1]
        return ax + (bx - ax) * (y - ay) / (by - ay)
    xs = sorted(x_at(pts) for pts in fan)
    assert xs[3] < x0 and x1 < xs[4], (xs, label)
    assert geometry.labels_under_lines(svg) == []
