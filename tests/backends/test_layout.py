"""Diagrams read in index order with a sane shape: every library drawing, rendered to SVG by
Graphviz and parsed back, keeps siblings (gpu0..7, tray0..17, racks, leaves, spine planes) in
reading order and its aspect ratio between 1:3 and 3:1. No golden image is involved."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from collections import defaultdict

import pytest

import topoc
from topoc.backends import render as r
from topoc.backends.layout import MAX_ASPECT, MIN_ASPECT

from ..conftest import LIBRARY
from . import geometry

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")
SVG = "{http://www.w3.org/2000/svg}"
SYSTEMS = sorted(p for p in (LIBRARY / "nvidia").glob("*.topo")
                 if re.search(r"^system ", p.read_text(), re.M))
#: Cluster files at a small, a large and (where the fabric allows) a huge size.
SIZES = [("a100_cluster.topo", "nodes", (2, 100)), ("h100_cluster.topo", "nodes", (2, 256)),
         ("nvl72_cluster.topo", "racks", (2, 64)), ("nvl72_superpod.topo", "racks", (8, 1024)),
         ("h100_superpod.topo", "nodes", (64, 1024))]


#: The views drawn by topoc's row layout (the fabric view has its own: test_geometry.py).
LAID_OUT = tuple(v for v in r.VIEWS if v != "fabric")


def _centres(svg: bytes) -> tuple[dict[str, tuple[float, float]], float, dict[str, float]]:
    """Node and cluster centres by id (SVG coordinates, y down), the width/height ratio and
    each box's top (a summary box sits top-aligned beside the machine drawn in full)."""
    root = ET.fromstring(svg)
    width = float(root.get("width").rstrip("pt"))
    height = float(root.get("height").rstrip("pt"))
    out, tops = {}, {}
    for g in root.iter(f"{SVG}g"):
        kind = g.get("class")
        if kind not in ("node", "cluster"):
            continue
        title = g.find(f"{SVG}title").text
        if kind == "cluster":
            title = title.removeprefix("cluster_")
        xs, ys = [], []
        for shape in g.iter():
            if shape.tag in (f"{SVG}polygon", f"{SVG}path"):
                nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", shape.get("points")
                                                           or shape.get("d", ""))]
                xs += nums[0::2]
                ys += nums[1::2]
            elif shape.tag == f"{SVG}ellipse":
                xs.append(float(shape.get("cx")))
                ys.append(float(shape.get("cy")))
        if xs:
            out[title] = ((min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2)
            tops[title] = min(ys)
    return out, width / height, tops


def _siblings(ids) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """Ids grouped by parent path and name stem, with their index: gpu0..7 of one node,
    rack[0..31] and rack[32..63] of one cluster (folded meshes are not devices); a rack's
    leaves' frame ('rack3 leaves') is a sibling of the other racks' leaves, not of rack3."""
    groups = defaultdict(list)
    for i in ids:
        if i.startswith("mesh/"):
            continue
        parent, _, last = i.rpartition(".")
        m = re.match(r"^(\D*?)\[?(\d+)(.*)$", last)
        if m:
            tail = re.sub(r"[\d.\[\]]", "", m.group(3))
            groups[parent, m.group(1), tail].append((int(m.group(2)), i))
    return groups


def switch_of(system) -> dict[str, str]:
    """Each NIC's one PCIe switch, for the NICs hanging off one (AWS p5's EFAs)."""
    kind = {d.id: d.kind for d in system.devices}
    out: dict[str, set[str]] = defaultdict(set)
    for link in system.links:
        for a, b in ((link.src, link.dst), (link.dst, link.src)):
            if kind.get(a) == "nic" and kind.get(b) == "pcie_switch":
                out[a].add(b)
    return {n: next(iter(s)) for n, s in out.items() if len(s) == 1}


def check_drawing(svg: bytes, what: str, switch: dict[str, str] | None = None) -> None:
    """Reading order for every sibling group and the aspect ratio. NICs of two PCIe
    switches (``switch_of``) drawn above the switches' row read in their switches' order:
    each switch's NICs are a block over it (two a row), blocks left to right, as the
    switches are (NICs beside their switches read as any siblings)."""
    centres, aspect, tops = _centres(svg)
    switch = switch or {}
    assert MIN_ASPECT <= aspect <= MAX_ASPECT, f"{what}: aspect {aspect:.2f}"
    for key, members in _siblings(centres).items():
        members.sort()
        for (ia, a), (ib, b) in zip(members, members[1:]):
            (xa, ya), (xb, yb) = centres[a], centres[b]
            sa, sb = switch.get(a), switch.get(b)
            if sa and sb and sa != sb and sa in centres and sb in centres and \
                    abs(centres[sa][1] - centres[sb][1]) < 2 and \
                    min(ya, yb) < centres[sa][1] - 2:
                # in two switches' blocks: the blocks (their switches) in reading order,
                # the NICs each over their own switch
                assert centres[sa][0] < centres[sb][0], f"{what}: {sa} after {sb}"
                assert ya < centres[sa][1] and yb < centres[sb][1] and \
                    abs(xa - centres[sa][0]) < abs(xa - centres[sb][0]) and \
                    abs(xb - centres[sb][0]) < abs(xb - centres[sa][0]), \
                    f"{what}: {a} and {b} are not over their switches {sa}, {sb}"
                continue
            same_row = abs(ya - yb) < 2 or abs(tops[a] - tops[b]) < 2
            assert (same_row and xa < xb) or yb > ya + 2, \
                f"{what}: {a} ({xa:.0f},{ya:.0f}) is not read before {b} ({xb:.0f},{yb:.0f})"


def check_geometry(svg: bytes, system, what: str, share: float = 0.05) -> None:
    """Issue 28's limits: at most ``share`` of lines through boxes they do not join (5 %;
    issue 46: none in a library file's views, where the NVL72 clusters' logical views had 4
    uplinks through the NVLink bar's text, and there no two lines with no box in common
    drawn along each other: nvl72_fourtier racks had 33, nvl72_cluster racks 10, aws_p5
    logical and physical 4 and 5, aws_p5en logical 5, the NVL72 clusters' physical views 2
    each), no side beyond MAX_SIDE, and no NIC on a line between a GPU and the NVLink
    switches."""
    boxes, lines, width, height = geometry.read(svg)
    assert max(width, height) <= r.MAX_SIDE * 1.02, f"{what}: {width:.0f} x {height:.0f} pt"
    crossing = geometry.crossing(boxes, lines, geometry.bar_texts(svg))
    assert len(crossing) <= share * len(lines), \
        f"{what}: {len(crossing)}/{len(lines)} {crossing[:3]}"
    if share == 0.0:        # a library file's view: no two unrelated lines as one trunk
        along = geometry.overlapping_lines(lines)
        assert not along, f"{what}: {len(along)} pairs of unrelated lines along each other " \
            f"{along[:3]}"
    kind = {d.id: d.kind for d in system.devices}
    nics = [b for n, b in boxes.items() if kind.get(n) == "nic"]
    nvlink = lambda n: kind.get(n) == "switch" or n.endswith("nvlink_fabric") \
        or n.startswith("mesh/nvlink")                                    # noqa: E731
    for a, b, pts in lines:
        if not ({kind.get(a), kind.get(b)} & {"gpu"} and (nvlink(a) or nvlink(b))):
            continue
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        for nic in nics:
            inside = nic[0] < max(xs) and min(xs) < nic[2] and nic[1] < max(ys) and min(ys) < nic[3]
            assert not inside, f"{what}: a NIC between {a} and {b}"


def _drawn(system, view):
    """The SVG and view drawn. Every view of every library file is drawn (a system of several
    machines folded); only the racks view of one machine is refused, naming the views to
    draw."""
    opts = r.Options(view=view)
    try:
        svg, drawn = r.render(system, "svg", opts)
    except r.TooLarge as exc:
        assert view == "racks" and not r.racks_apply(system), f"{view}: {exc}"
        assert "--view logical or --view physical" in str(exc), str(exc)
        return None, view
    if drawn == "fabric":       # its own layout: tests/backends/test_geometry.py
        return None, drawn
    return svg, drawn


@pytest.mark.parametrize("path", SYSTEMS, ids=lambda p: p.stem)
def test_library_drawings_keep_index_order_shape_and_clear_lines(path):
    system = topoc.load(path)
    drawn_any = False
    for view in (None, *LAID_OUT):
        svg, drawn = _drawn(system, view)
        if svg is None:
            continue
        drawn_any = True
        check_drawing(svg, f"{path.stem} {drawn}", switch_of(system))
        check_geometry(svg, system, f"{path.stem} {drawn}", share=0.0)
        check_titles(svg, system, f"{path.stem} {drawn}")
        check_texts(svg, f"{path.stem} {drawn}")
    assert drawn_any


def check_texts(svg: bytes, what: str) -> None:
    """No two texts overlap (frame titles, box labels, line labels), and every frame shows
    its own title inside its outline."""
    overlaps = geometry.overlapping_texts(svg)
    assert not overlaps, f"{what}: {len(overlaps)} overlapping texts {overlaps[:3]}"
    root = ET.fromstring(svg)
    for g in root.iter(f"{SVG}g"):
        if g.get("class") != "cluster":
            continue
        name = g.find(f"{SVG}title").text
        text, outline = g.find(f"{SVG}text"), g.find(f"{SVG}path")
        assert text is not None and (text.text or "").strip(), f"{what}: {name} has no title"
        xs = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", outline.get("d"))][0::2]
        assert min(xs) < float(text.get("x")) < max(xs), f"{what}: {name}'s title is outside it"


def test_the_text_check_catches_titles_drawn_on_each_other():
    """Two frames' titles at one spot (what an inherited ``lp`` drew) are caught."""
    svg = (b'<svg xmlns="http://www.w3.org/2000/svg" width="100pt" height="100pt">'
           b'<g class="cluster"><title>cluster_a</title><text x="50" y="20" font-size="12">'
           b'tray0</text></g><g class="cluster"><title>cluster_b</title>'
           b'<text x="52" y="21" font-size="12">tray1</text></g>'
           b'<g class="cluster"><title>cluster_c</title><text x="50" y="60" font-size="12">'
           b'tray2</text></g></svg>')
    assert geometry.overlapping_texts(svg) == [("cluster:cluster_b 'tray1'",
                                                "cluster:cluster_a 'tray0'")]


def check_titles(svg: bytes, system, what: str) -> None:
    """No line through a frame's title in a machine's drawing (a Superchip's 'sc0' beside
    the lines from its NICs to its CPU); in a cluster's, where lines climb out of trays to
    the leaves, at most one title in six."""
    titles = geometry.frame_titles(svg)
    crossed = geometry.lines_through_titles(svg)
    limit = 0 if r.machines_folded(system) is None else len(titles) / 6
    assert len(crossed) <= limit, f"{what}: {len(crossed)}/{len(titles)} titles {crossed[:3]}"


@pytest.mark.parametrize("name, param, sizes", SIZES, ids=[s[0] for s in SIZES])
def test_cluster_drawings_at_every_size(name, param, sizes):
    for n in sizes:
        system = topoc.load(LIBRARY / "nvidia" / name, {param: n})
        for view in LAID_OUT:       # physical and logical: the first machine, the rest folded
            svg, drawn = r.render(system, "svg", r.Options(view=view))
            assert drawn == view
            check_drawing(svg, f"{name} {param}={n} {view}")
            check_geometry(svg, system, f"{name} {param}={n} {view}")
            check_texts(svg, f"{name} {param}={n} {view}")


def test_the_nvl72_is_drawn_as_built():
    """Compute trays 0-9 above the NVLink switches, 10-17 below (NVIDIA's rack layout)."""
    system = topoc.load(LIBRARY / "nvidia" / "gb200_nvl72.topo")
    for view in ("logical", "physical"):
        source, _ = r.dot_source(system, r.Options(view=view))
        svg, _ = r.render(system, "svg", r.Options(view=view)) if view == "logical" else \
            (None, None)
        if svg is None:
            continue
        centres, _, _ = _centres(svg)
        fabric_y = centres["rack.nvlink_fabric"][1]
        assert all(centres[f"rack.tray{i}"][1] < fabric_y for i in range(10))
        assert all(centres[f"rack.tray{i}"][1] > fabric_y for i in range(10, 18))


def test_the_physical_nvl72_puts_switch_trays_between_the_compute_trays():
    from topoc.backends.layout import layout
    system = topoc.load(LIBRARY / "nvidia" / "gb200_nvl72.topo")
    nodes, _ = r.physical(system)
    _, boxes, _, _ = layout(nodes, system.name, r._box, r._tier)
    top = lambda c: boxes[c][3]      # noqa: E731 - y upwards: a larger top is higher
    switches = [top(f"rack.nvswitch_tray{i}") for i in range(9)]
    assert min(top(f"rack.tray{i}") for i in range(10)) > max(switches)
    assert max(top(f"rack.tray{i}") for i in range(10, 18)) < min(switches)


def test_folded_blocks_carry_the_groups_they_hold():
    system = topoc.load(LIBRARY / "nvidia" / "nvl72_superpod.topo", {"racks": 128})
    source, _ = r.dot_source(system, r.Options(view="racks", parallel="train", color="tp"))
    start = source.index('"superpod.rack[32..63]" [')
    block = source[start:source.index("]\n\t", start)]
    # 32 racks x 72 GPUs in tp groups of 8: 288 groups, too many to stripe: named by range
    assert "tp:288..575" in block or "tp: 288 groups" in block


def test_the_crossing_check_catches_a_line_through_boxes():
    """The geometry check can fail: a straight line from the first tray's GPU to the last
    tray's crosses the switch trays between."""
    system = topoc.load(LIBRARY / "nvidia" / "gb200_nvl72.topo")
    svg, _ = r.render(system, "svg", r.Options(view="physical"))
    boxes, lines, _, _ = geometry.read(svg)
    a, z = boxes["rack.tray0.sc0.gpu0"], boxes["rack.tray17.sc1.gpu1"]
    straight = [((a[0] + a[2]) / 2, (a[1] + a[3]) / 2), ((z[0] + z[2]) / 2, (z[1] + z[3]) / 2)]
    assert geometry.crossing(boxes, [("rack.tray0.sc0.gpu0", "rack.tray17.sc1.gpu1", straight)])
    assert len(lines) <= 300 and geometry.crossing(boxes, lines) == []
