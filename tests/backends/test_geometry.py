"""Issue 46's geometry of a picture, measured on the SVG Graphviz draws from topoc's layout:
(a) no two lines with no box in common drawn along each other, (b) no line through a box it
does not join, (c) on a 1,920 x 1,080 slide every text at least 10 px high (the PNG scaled
down to fit, never up). Every library file's default picture, and generated clusters from
two racks to 512 (the fabric view folds them), meet all three, or the default is refused
with a message naming the view to draw. The sizes that take longer to compile than a unit
test should (8,192 NVL72 racks, 32,768 DGX H100 nodes) are measured the same way by
benchmarks/render_fabric.py, which fails when their pictures break any of the three."""

from __future__ import annotations

import re
import shutil

import pytest

import topoc
from topoc.backends import render as r

from ..conftest import LIBRARY, ROOT, library_file
from . import geometry

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")
SYSTEMS = sorted(p for p in (LIBRARY / "nvidia").glob("*.topo")
                 if re.search(r"^system ", p.read_text(), re.M))
#: Generated clusters: each library cluster at a small and a large size (the largest ones
#: compile in seconds; benchmarks/render_fabric.py measures 8,192 racks and 32,768 nodes).
GENERATED = [("nvl72_cluster.topo", "racks", 2), ("nvl72_cluster.topo", "racks", 64),
             ("nvl72_superpod.topo", "racks", 8), ("nvl72_superpod.topo", "racks", 128),
             ("nvl72_fourtier.topo", "racks", 2), ("nvl72_fourtier.topo", "racks", 40),
             ("nvl72_fourtier.topo", "racks", 512),
             ("h100_cluster.topo", "nodes", 2), ("h100_cluster.topo", "nodes", 200),
             ("h100_superpod.topo", "nodes", 40), ("h100_superpod.topo", "nodes", 1100),
             ("h100_fourtier.topo", "nodes", 96), ("a100_cluster.topo", "nodes", 100)]
MIN_LABEL_PX = 10.0


def measure(svg: bytes) -> dict[str, float]:
    """The three measures of one picture."""
    boxes, lines, _, _ = geometry.read(svg)
    width, height, label = geometry.slide_fit(svg)
    return {"overlapping": len(geometry.overlapping_lines(lines)),
            "crossing": len(geometry.crossing(boxes, lines, geometry.bar_texts(svg))),
            "width_px": width, "height_px": height, "label_px": label}


def check_default(system, what: str) -> None:
    try:
        svg, view = r.render(system, "svg")
    except r.TooLarge as exc:       # refused: the message names the view to draw
        assert "--view" in str(exc), f"{what}: {exc}"
        return
    m = measure(svg)
    assert m["overlapping"] == 0, f"{what} ({view}): {m}"
    assert m["crossing"] == 0, f"{what} ({view}): {m}"
    assert m["label_px"] >= MIN_LABEL_PX, f"{what} ({view}): {m}"


@pytest.mark.parametrize("path", SYSTEMS, ids=lambda p: p.stem)
def test_every_library_default_picture_is_clear_and_slide_sized(path):
    check_default(topoc.load(path), path.stem)


@pytest.mark.parametrize("name,param,size", GENERATED,
                         ids=[f"{n[:-5]}-{v}" for n, _, v in GENERATED])
def test_generated_clusters_default_picture_is_clear_and_slide_sized(name, param, size):
    check_default(topoc.load(library_file(name), defines={param: size}), f"{name} {param}={size}")


def test_overlap_measure_finds_lines_drawn_along_each_other():
    """The measure itself: two unrelated lines sharing 20 pt of track are one pair; lines
    crossing at right angles, or sharing a box, are none."""
    lines = [("a", "b", [(0, 0), (0, 0), (100, 0), (100, 0)]),
             ("c", "d", [(80, 0), (80, 0), (200, 0), (200, 0)]),      # 20 pt along a-b
             ("e", "f", [(50, -50), (50, -50), (50, 50), (50, 50)]),  # crosses both
             ("a", "g", [(0, 0), (0, 0), (100, 0), (100, 0)])]        # shares box a
    assert geometry.overlapping_lines(lines) == [("a", "b", "c", "d"), ("c", "d", "a", "g")]
    assert geometry.overlapping_lines(lines, run=30.0) == []


def test_crossing_measure_lets_a_line_cross_a_bar_only_at_right_angles_off_its_text():
    """A bar (the NVLink fabric) crossed upright away from its text is lines crossing; a
    line through its text, or a slanted one, runs through a box."""
    boxes = {"r.nvlink_fabric": (0.0, 100.0, 1000.0, 114.0), "gpu": (300.0, 0.0, 340.0, 30.0)}
    bars = {"r.nvlink_fabric": (400.0, 600.0)}
    upright = ("nic", "leaf", [(100.0, 200.0), (100.0, 200.0), (100.0, 50.0), (100.0, 50.0)])
    on_text = ("nic2", "leaf", [(500.0, 200.0), (500.0, 200.0), (500.0, 50.0), (500.0, 50.0)])
    slanted = ("nic3", "leaf", [(150.0, 200.0), (150.0, 200.0), (250.0, 50.0), (250.0, 50.0)])
    assert geometry.crossing(boxes, [upright], bars) == []
    assert geometry.crossing(boxes, [on_text], bars) == [("nic2", "leaf", "r.nvlink_fabric")]
    assert geometry.crossing(boxes, [slanted], bars) == [("nic3", "leaf", "r.nvlink_fabric")]
    assert geometry.crossing(boxes, [upright]) == [("nic", "leaf", "r.nvlink_fabric")]


def test_fabric_view_of_every_cluster_folds_to_a_slide():
    """The fabric view's box count does not grow with the cluster: 2 and 64 racks draw
    at most a handful of boxes more (identical pods fold into one with x N)."""
    small = r.fabric_source(topoc.load(library_file("nvl72_cluster.topo"),
                                       defines={"racks": 2}), r.Options("fabric"))
    large = r.fabric_source(topoc.load(library_file("nvl72_cluster.topo"),
                                       defines={"racks": 64}), r.Options("fabric"))
    boxes = lambda s: len(re.findall(r'^"[^"]+" \[label', s, re.M))      # noqa: E731
    assert boxes(large) <= boxes(small) + 8, (boxes(small), boxes(large))
    assert "x 64" in large or "x 8" in large


def _centre(box):
    return ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)


@pytest.mark.parametrize("view", ["logical", "physical"])
def test_hgx_b300_keeps_each_gpu_with_its_own_cx8_and_no_line_across_the_cpus(view):
    """HGX B300's ConnectX-8s are its GPUs' PCIe switches (CPU - CX8 - GPU): each is drawn
    between the CPUs and the GPUs, over its own GPU (nearest to it of all GPUs), and no line
    runs along or across the CPU-CPU link (nic3->gpu3 and nic4->gpu4 climbed through the
    gap between the CPUs, drawn NICs above the CPUs)."""
    system = topoc.load(library_file("hgx_b300.topo"))
    svg, _ = r.render(system, "svg", r.Options(view=view))
    boxes, lines, _, _ = geometry.read(svg)
    at = {name.rpartition(".")[2]: _centre(b) for name, b in boxes.items()}
    cpu_y = max(at["cpu0"][1], at["cpu1"][1])          # SVG: y grows downwards
    gpus = [f"gpu{i}" for i in range(8)]
    for i in range(8):
        nic = at[f"nic{i}"]
        assert cpu_y < nic[1] < at[f"gpu{i}"][1], (view, i, nic, at[f"gpu{i}"])
        assert min(gpus, key=lambda g: abs(at[g][0] - nic[0])) == f"gpu{i}", (view, i)
    socket = next(pts for a, b, pts in lines if {a, b} == {"hgx.cpu0", "hgx.cpu1"})
    link = geometry._samples(socket)
    for a, b, pts in lines:
        if {a, b} == {"hgx.cpu0", "hgx.cpu1"}:
            continue
        near = [p for p in geometry._samples(pts)
                if any(abs(p[0] - q[0]) < 3 and abs(p[1] - q[1]) < 3 for q in link)]
        assert not near, (view, a, b)


@pytest.mark.parametrize("view", ["logical", "physical"])
def test_an_nvl72_rack_in_a_cluster_sends_its_uplinks_out_of_its_trays(view):
    """nvl72_cluster's rack0 drawn in full under its leaves: the NIC uplinks of trays 10-17
    (upside down under the NVLink spine) leave their trays and climb through the rack,
    across the spine's bar, never round the bar's end; no two uplinks are drawn along each
    other inside the rack (they were one bus looping round it); no uplink crosses a tray's
    title (the top row's crossed them)."""
    system = topoc.load(library_file("nvl72_cluster.topo"))
    svg, _ = r.render(system, "svg", r.Options(view=view))
    boxes, lines, _, _ = geometry.read(svg)
    outline = geometry.frames(svg)
    rack = outline["cluster.rack0"]
    uplinks = [(a, b, pts) for a, b, pts in lines
               if ".leaf" in a + b and ".rack0.tray" in a + b and ".nic" in a + b]
    assert len(uplinks) == 72, len(uplinks)
    # the spine's bars: the NVLink fabric (logical) or the folded meshes round the switch
    # trays (physical), inside the rack
    bars = [b for name, b in boxes.items() if name.endswith("nvlink_fabric")
            or name.startswith("mesh/")]
    assert bars, view
    lower = [(a, b, pts) for a, b, pts in uplinks
             if int(re.search(r"tray(\d+)\.", a + b).group(1)) >= 10]
    assert len(lower) == 32
    for a, b, pts in lower:
        samples = geometry._samples(pts)
        tray = outline[re.search(r"(cluster\.rack0\.tray\d+)\.", a + b).group(1)]
        for bar in bars:        # a bar over its whole tray is crossed within its length
            if not (bar[0] <= tray[0] and tray[2] <= bar[2]):
                continue
            at = [x for x, y in samples if bar[1] <= y <= bar[3]]
            assert at and all(bar[0] < x < bar[2] for x in at), (view, a, b, bar)
    inside = [(a, b, [p for p in pts]) for a, b, pts in uplinks]
    clipped = []
    for a, b, pts in inside:        # the part of each uplink inside the rack's outline
        keep = [p for p in geometry._samples(pts) if p[1] > rack[1] + 2]
        clipped.append((a, b, [q for p in keep for q in (p, p, p)][:-2] if keep else []))
    bus = geometry.overlapping_lines([(a, b, pts) for a, b, pts in clipped if len(pts) >= 4])
    assert not bus, (view, len(bus), bus[:3])
    titles = [t for t in geometry.lines_through_titles(svg) if re.search(r"tray\d+$", t[2])]
    assert not titles, (view, titles[:3])


@pytest.mark.parametrize("view", ["logical", "physical"])
def test_no_line_climbs_between_two_linked_cpus(view):
    """h100_cluster's node0: nic3's uplink climbed the gap between cpu0 and cpu1, along the
    ends of their socket link, so it read as a NIC between the CPUs. A gap two row-mates'
    own line runs in is no column for a detour: no other line enters it."""
    system = topoc.load(library_file("h100_cluster.topo"))
    svg, _ = r.render(system, "svg", r.Options(view=view))
    boxes, lines, _, _ = geometry.read(svg)
    cpu0, cpu1 = boxes["cluster.node0.cpu0"], boxes["cluster.node0.cpu1"]
    gap = (cpu0[2], min(cpu0[1], cpu1[1]), cpu1[0], max(cpu0[3], cpu1[3]))
    assert gap[2] - gap[0] > 4, gap
    inside = [(a, b) for a, b, pts in lines if {a, b} != {"cluster.node0.cpu0", "cluster.node0.cpu1"}
              and any(geometry._inside(p, gap, 1.0) for p in geometry._samples(pts))]
    assert not inside, (view, inside)


@pytest.mark.parametrize("name,view", [("h100_fourtier.topo", None), ("h100_fourtier.topo", "racks"),
                                       ("pcie_server.topo", None), ("dgx1_v100.topo", None),
                                       ("hgx_b300.topo", "physical")])
def test_no_line_label_is_drawn_under_a_line(name, view):
    """A line's figure is written where no line runs (its own included): h100_fourtier's
    'x64 800 GB/s' sat under the next line of the core's fan, pcie_server's figures on
    their own slanted lines."""
    svg, _ = r.render(topoc.load(library_file(name)), "svg", r.Options(view=view))
    assert any(o.startswith("edge:") for o, _, _ in geometry.texts(svg))  # figures drawn
    under = geometry.labels_under_lines(svg)
    assert not under, under
    if name == "h100_fourtier.topo" and view is None:
        assert any(t == "x64 800 GB/s" for _, t, _ in geometry.texts(svg))


@pytest.mark.parametrize("view", ["logical", "physical"])
def test_an_nvl72_racks_uplinks_leave_as_one_bundle_a_leaf(view):
    """nvl72_cluster's rack0 under its leaves: its 72 uplinks fanned out above the rack
    (620 pairs of unrelated lines drawn along each other). Now each climbs to its leaf's
    track above the rack, one track a leaf (4), and up into the leaf; the other racks'
    lines into their summary boxes take tracks of their own: none of these lines runs
    along an unrelated one."""
    system = topoc.load(library_file("nvl72_cluster.topo"))
    svg, _ = r.render(system, "svg", r.Options(view=view))
    _, lines, _, _ = geometry.read(svg)
    rack = geometry.frames(svg)["cluster.rack0"]
    uplinks = [(a, b, pts) for a, b, pts in lines if ".rack0.tray" in a + b and ".leaf" in a + b]
    feeds = [(a, b, pts) for a, b, pts in lines if ".leaf" in a + b
             and re.search(r"\.rack[1-9]\d*$", b if ".leaf" in a else a)]
    assert len(uplinks) == 72 and feeds, (len(uplinks), len(feeds))
    assert geometry.overlapping_lines(uplinks + feeds) == []
    tracks: dict[str, set[float]] = {}
    for a, b, pts in uplinks:
        leaf = a if ".leaf" in a else b
        runs = {round(p[1], 1) for p, q in zip(pts, pts[1:])
                if abs(p[1] - q[1]) < 0.1 and abs(p[0] - q[0]) > 1 and p[1] < rack[1]}
        assert len(runs) == 1, (a, b, runs)        # one run along a track above the rack
        tracks.setdefault(leaf, set()).update(runs)
    assert len(tracks) == 4 and all(len(h) == 1 for h in tracks.values()), tracks
    assert len({h for hs in tracks.values() for h in hs}) == 4, tracks


@pytest.mark.parametrize("name", ["h100_cluster.topo", "h100_roce_cluster.topo",
                                  "h100_sharp_cluster.topo", "a100_cluster.topo"])
@pytest.mark.parametrize("view", ["logical", "physical"])
def test_a_machines_nic_uplinks_run_on_tracks_clear_of_the_summary_feeds(name, view):
    """A DGX-class cluster drawn as node0 in full under its leaves: its NICs' uplinks ran
    straight and slanted to their leaves, under the leaves' slanted lines to the other
    nodes' summary box, at a few degrees (h100_cluster 15 pairs of unrelated lines drawn
    along each other, h100_roce_cluster 14, h100_sharp_cluster 13, a100_cluster 4). As an
    NVL72 rack's trays' uplinks do, each leaves the node to its leaf's track above it, and
    the lines to the summary box take a track of their own above those."""
    svg, _ = r.render(topoc.load(library_file(name)), "svg", r.Options(view=view))
    boxes, lines, _, _ = geometry.read(svg)
    assert geometry.overlapping_lines(lines) == []
    assert geometry.crossing(boxes, lines, geometry.bar_texts(svg)) == []
    node = geometry.frames(svg)["cluster.node0"]
    uplinks = [pts for a, b, pts in lines if ".leaf" in a + b and ".node0.nic" in a + b]
    assert uplinks
    for pts in uplinks:         # one horizontal run, above the node
        runs = {round(p[1], 1) for p, q in zip(pts, pts[1:])
                if abs(p[1] - q[1]) < 0.1 and abs(p[0] - q[0]) > 1 and p[1] < node[1]}
        assert len(runs) <= 1, runs


@pytest.mark.parametrize("view", ["logical", "physical", "racks"])
def test_rows_of_switches_move_apart_until_their_tracks_fit(view):
    """h100_fourtier: eight pods over sixteen leaves, each pod to one leaf of each scalable
    unit. The tracks of eight thick lines did not fit in one row gap, so the lines stayed
    straight and crossed at a few degrees (27 pairs of unrelated lines drawn along each
    other in the logical view, 23 physical, 126 racks). The pods move up until they fit:
    every pod-leaf line runs up from its leaf, along its pod's track and up into the pod."""
    svg, _ = r.render(topoc.load(library_file("h100_fourtier.topo")), "svg",
                      r.Options(view=view))
    boxes, lines, _, _ = geometry.read(svg)
    assert geometry.overlapping_lines(lines) == []
    assert geometry.crossing(boxes, lines, geometry.bar_texts(svg)) == []
    pods = [(a, b, pts) for a, b, pts in lines if re.search(r"\.pod\d+$", a)
            and re.search(r"\.leaf\d+$", b) or re.search(r"\.pod\d+$", b)
            and re.search(r"\.leaf\d+$", a)]
    assert len(pods) == 16, len(pods)
    heights = {}
    for a, b, pts in pods:
        runs = {round(p[1], 1) for p, q in zip(pts, pts[1:])
                if abs(p[1] - q[1]) < 0.1 and abs(p[0] - q[0]) > 1}
        assert len(runs) == 1, (a, b, runs)
        heights.setdefault(a if ".pod" in a else b, set()).update(runs)
    assert len(heights) == 8 and len({h for hs in heights.values() for h in hs}) == 8


@pytest.mark.parametrize("name", ["nvl72_cluster.topo", "nvl72_superpod.topo",
                                  "nvl72_fourtier.topo"])
def test_rack_uplinks_cross_the_nvlink_bar_off_its_whole_text(name):
    """The logical view's NVLink bar is labelled with the fabric and each GPU's figure
    (', each GPU x18 900 GB/s'): the climbs of rack0's lower trays kept clear of the label
    without that figure, and four of them crossed the bar through its text."""
    svg, _ = r.render(topoc.load(library_file(name)), "svg", r.Options(view="logical"))
    boxes, lines, _, _ = geometry.read(svg)
    assert any(b.endswith("nvlink_fabric") for b in geometry.bar_texts(svg))
    assert geometry.crossing(boxes, lines, geometry.bar_texts(svg)) == []


@pytest.mark.parametrize("name", ["tests/fixtures/render/gb300_cx8_bf3.topo",
                                  "library/nvidia/gb300_nvl72.topo"])
def test_an_asked_for_racks_view_of_a_crowded_rack_is_legible_on_a_slide(name):
    """A GB300 NVL72 rack with each ConnectX-8's PCIe switch and a BlueField-3 a Grace: its
    trays' counts on one line made the racks view, asked for by name, 2,747 px wide (its
    text 7.5 px on a slide); the counts go on lines of two, as the default picture's do."""
    svg, view = r.render(topoc.load(ROOT / name), "svg", r.Options(view="racks"))
    m = measure(svg)
    assert view == "racks" and m["label_px"] >= MIN_LABEL_PX, m
    assert m["overlapping"] == 0 and m["crossing"] == 0, m


@pytest.mark.parametrize("name,nics", [("aws_p5.topo", 4), ("aws_p5en.topo", 2)])
@pytest.mark.parametrize("view", ["logical", "physical"])
def test_aws_p5_keeps_each_gpu_under_its_own_pcie_switch_and_its_efas(name, nics, view):
    """AWS p5: eight PCIe switches, four EFAs and one GPU each. Drawn with each switch's
    EFAs beside it, the row wrapped in two (switches 0-3 over 4-7) and each GPU stood
    under another switch than its own: pcie0-gpu0 ran along pcie4-gpu4, cpu0-pcie0 along
    cpu1-pcie4 (4 and 5 pairs of unrelated lines drawn along each other in the logical and
    physical views; p5en, two EFAs a switch, 5 logical). Now each switch stands under its
    EFAs, two a row, and over its GPU: each GPU's and each EFA's nearest switch across is
    its own, and no two unrelated lines are drawn along each other."""
    svg, _ = r.render(topoc.load(library_file(name)), "svg", r.Options(view=view))
    boxes, lines, _, _ = geometry.read(svg)
    at = {name.rpartition("node0.")[2]: _centre(b) for name, b in boxes.items()
          if ".node0." in name}
    switches = [f"pcie{i}" for i in range(8)]
    own = {f"gpu{i}": f"pcie{i}" for i in range(8)} | \
        {f"efa{i}": f"pcie{i // nics}" for i in range(8 * nics)}
    for box, switch in own.items():
        nearest = min(switches, key=lambda s: abs(at[s][0] - at[box][0]))
        assert nearest == switch, (view, box, nearest)
        above = box.startswith("efa")          # SVG: y grows downwards
        assert (at[box][1] < at[switch][1]) == above, (view, box)
    assert geometry.overlapping_lines(lines) == []
    assert geometry.crossing(boxes, lines, geometry.bar_texts(svg)) == []


@pytest.mark.parametrize("name", ["nvl72_cluster.topo", "nvl72_fourtier.topo"])
def test_a_row_of_leaves_lines_pass_through_has_room_for_their_lanes(name):
    """The racks view of an NVL72 cluster wraps its leaves into two rows: the planes' (or
    pods') lines to the lower row pass between the upper row's leaves, the upper row's
    lines to the racks between the lower row's. Three thick lines through one 18 pt gap
    had no lanes to move to (nvl72_cluster 10 pairs of unrelated lines drawn along each
    other, nvl72_fourtier 21); such rows now stand THROUGH pt further apart, and no two
    unrelated lines run along each other."""
    svg, _ = r.render(topoc.load(library_file(name)), "svg", r.Options(view="racks"))
    m = measure(svg)
    assert m["overlapping"] == 0 and m["crossing"] == 0, m


@pytest.mark.parametrize("name", ["nvl72_cluster.topo", "nvl72_superpod.topo",
                                  "nvl72_fourtier.topo"])
def test_a_rack_uplink_never_climbs_along_a_switch_chips_stub(name):
    """The physical view of a cluster's first NVL72 rack: the gap between compute trays 11
    and 12 (and 14 and 15) lines up with a switch chip's middle above the lower mesh bar,
    and the lane of one uplink climbing it ran 12 pt up the chip's stub onto the bar (2
    pairs of unrelated lines drawn along each other in each of the three files). The stub
    moves aside along the chip's edge; nothing runs along anything unrelated."""
    svg, _ = r.render(topoc.load(library_file(name)), "svg", r.Options(view="physical"))
    boxes, lines, _, _ = geometry.read(svg)
    assert geometry.overlapping_lines(lines) == []
    assert geometry.crossing(boxes, lines, geometry.bar_texts(svg)) == []
    stubs = [pts for a, b, pts in lines if a.startswith("mesh/") and ".chip" in b
             or b.startswith("mesh/") and ".chip" in a]
    assert stubs and all(abs(p[0] - pts[0][0]) < 0.1 for pts in stubs for p in pts)


@pytest.mark.parametrize("view", ["logical", "physical"])
def test_a_gb300_trays_cx8_switches_stand_over_their_superchips(view):
    """A GB300 tray with each ConnectX-8's PCIe switch (Grace - CX8 switch - GPU) and a
    BlueField-3 a Grace: the switches stood in a row under the Superchips, between the
    GPUs and the NVLink spine, each GPU's NVLink line passing between them. A PCIe switch
    joining a CPU to a GPU framed apart from it (in its Superchip) now stands above the
    frame with its NIC beside it, as a GB300's own CX8 NIC does: every CX8 switch of a tray
    is above both its Superchips (below them in the upside-down lower trays), the tray's
    BlueField-3s beyond them, and no line runs through a box or along an unrelated line."""
    svg, _ = r.render(topoc.load(ROOT / "tests/fixtures/render/gb300_cx8_bf3.topo"), "svg",
                      r.Options(view=view))
    boxes, lines, _, _ = geometry.read(svg)
    frames = geometry.frames(svg)
    for t in range(18):
        tray = f"rack.tray{t}"
        upper = t < 10                          # trays 10-17 are drawn upside down
        for i in range(4):
            sw = boxes[f"{tray}.cx8sw{i}"]
            for sc in ("sc0", "sc1"):
                f = frames[f"{tray}.{sc}"]
                assert (sw[3] < f[1]) if upper else (sw[1] > f[3]), (view, tray, i, sc)
            for d in ("dpu0", "dpu1"):   # the BlueField-3s beyond them: the switches' lines
                dpu = boxes[f"{tray}.{d}"]   # to their GPUs pass no row
                assert (dpu[3] < sw[1]) if upper else (dpu[1] > sw[3]), (view, tray, i, d)
    assert geometry.overlapping_lines(lines) == []
    assert geometry.crossing(boxes, lines, geometry.bar_texts(svg)) == []
