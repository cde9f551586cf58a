"""``nudge.apart``: detours of unrelated lines drawn along each other moved to lanes of their
own (issue 46); lines sharing a box, a line's ends, fixed lines and boxes left alone."""

from __future__ import annotations

import shutil

import pytest

import topoc
from topoc.backends import render as r
from topoc.backends.nudge import apart
from topoc.backends.style import Edge

from ..conftest import library_file
from . import geometry


def _line(a: str, b: str, path, bandwidth: float = 25e9):
    return (Edge(a, b, "pcie", 1, bandwidth), path[0], path[-1], list(path))


def _svgish(routed):
    """The routed lines as geometry.overlapping_lines reads them (cubic pieces)."""
    out = []
    for e, _p, _q, path in routed:
        pts = [path[0]]
        for p, q in zip(path, path[1:]):
            pts += [p, q, q]
        out.append((e.src, e.dst, pts))
    return out


def test_two_detours_in_one_gap_take_lanes_of_their_own():
    """Two detours with no box in common along the same gap and column: drawn as one trunk
    before, two lines after; their ends do not move. A third line sharing a box with the
    first keeps the first's lane (a bundle stays a bundle)."""
    one = _line("a", "b", [(0, 100), (0, 80), (50, 80), (50, 20), (100, 20), (100, 0)])
    two = _line("c", "d", [(10, 100), (10, 80), (50, 80), (50, 20), (90, 20), (90, 0)])
    three = _line("a", "e", [(0, 100), (0, 80), (50, 80), (50, 20), (80, 20), (80, 0)])
    before = [one, two, three]
    assert len(geometry.overlapping_lines(_svgish(before))) == 2
    after = apart(before, {})
    assert geometry.overlapping_lines(_svgish(after)) == []
    for (_e, p, q, old), (_e2, p2, q2, new) in zip(before, after):
        assert (old[0], old[-1]) == (new[0], new[-1]) == (p2, q2)
    assert after[0][3] == one[3] and after[2][3] == three[3]     # first come, first kept
    moved = after[1][3]
    assert moved[1][1] != 80 and moved[2][0] != 50
    assert [p[0] == q[0] or p[1] == q[1] for p, q in zip(moved, moved[1:])] == [True] * 5


def test_a_piece_never_moves_into_a_box_nor_a_fixed_line():
    """Boxes on either side of the shared column leave it no room: both lines stay (a
    trunk, counted by the geometry test, rather than a line through a box); a fixed line
    stays even with room."""
    one = _line("a", "b", [(0, 100), (0, 80), (50, 80), (50, 20), (100, 20), (100, 0)])
    two = _line("c", "d", [(10, 100), (10, 80), (50, 80), (50, 20), (90, 20), (90, 0)])
    walls = {"left": (20.0, 30.0, 47.0, 70.0), "right": (53.0, 30.0, 80.0, 70.0)}
    after = apart([one, two], walls)
    assert after[1][3][2][0] == 50 and after[1][3][3][0] == 50      # the column stayed
    assert apart([one, two], {}, fixed={1})[1][3] == two[3]


def test_a_turn_out_of_a_box_never_runs_along_another_lines_turn_into_the_box_below():
    """Box a above box d in the next row, lines a-b and c-d turning in the gap between the
    rows at heights 10 pt apart: a-b's drop out of a ran along c-d's drop into d over those
    10 pt (nvl72_cluster's racks view: leaf0's line to rack0 and plane0's into leaf16
    under it). Moving a piece now keeps its neighbours, lengthened or shortened, off the
    ends of unrelated lines: a-b turns higher, c-d lower."""
    one = _line("a", "b", [(0, 100), (0, 50), (60, 50), (60, -100)])
    two = _line("c", "d", [(100, 150), (100, 60), (0, 60), (0, 0)])
    assert len(geometry.overlapping_lines(_svgish([one, two]))) == 1
    after = apart([one, two], {})
    assert geometry.overlapping_lines(_svgish(after)) == []
    assert after[0][3][1][1] > after[1][3][2][1]          # a-b's turn above c-d's


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")
@pytest.mark.parametrize("name,view,most", [("a100_superpod.topo", "racks", 0),
                                            ("nvl72_cluster.topo", "racks", 0),
                                            ("nvl72_fourtier.topo", "racks", 0),
                                            ("h100_fourtier.topo", "racks", 8),
                                            ("aws_p5.topo", "logical", 0)])
def test_detours_of_unrelated_lines_are_not_drawn_as_one_trunk(name, view, most):
    """Pairs of unrelated lines drawn along each other in views that route detours through
    shared gaps: a100_superpod racks 20, nvl72_cluster racks 123 (10 before the rows of
    leaves that lines pass through stood further apart), nvl72_fourtier racks 479 (33
    before a moved piece kept its neighbours off unrelated lines' ends, 21 before the
    rows moved apart), h100_fourtier racks 126, aws_p5 logical 22 (4 before its PCIe
    switches stood in blocks over their GPUs) before: none now."""
    svg, _ = r.render(topoc.load(library_file(name)), "svg", r.Options(view=view))
    _, lines, _, _ = geometry.read(svg)
    assert len(geometry.overlapping_lines(lines)) <= most
