"""Diagrams: golden DOT per view, real SVG/PNG when dot is installed, escaping, CLI errors."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

import topoc
from topoc.backends import render as r
from topoc.cli import main
from topoc.compiler.ir.system import Device, DeviceModel, Link, LinkType, System

from ..conftest import GOLDEN, library_file
from . import geometry

RENDER = GOLDEN / "render"
CASES = [("nvl72", "physical"), ("nvl72", "logical"), ("dgx_h100", None),
         ("pcie_server", None), ("cluster8", "racks")]
HAS_DOT = shutil.which("dot") is not None


@pytest.mark.parametrize("name,view", CASES)
def test_golden_dot(name, view, update_goldens):
    system = topoc.load(RENDER / f"{name}.topo")
    source, chosen = r.dot_source(system, r.Options(view=view))
    golden = RENDER / f"{name}.{chosen}.dot"
    if update_goldens:
        golden.write_text(source)
    assert source == golden.read_text()


def test_default_view_stays_legible():
    rack = topoc.load(RENDER / "nvl72.topo")
    assert r.choose_view(rack)[0] == "logical"
    nodes, edges = r.logical(rack)
    assert len([n for n in nodes if n.kind == "fabric"]) == 1
    assert len(nodes) == 198 - 18 + 1
    gpu_edges = [e for e in edges if e.cls == "nvlink"]
    assert len(gpu_edges) == 72 and {e.lanes for e in gpu_edges} == {18}
    # a node is drawn as vendors draw it: the NVSwitches as one backplane bar
    assert r.choose_view(topoc.load(RENDER / "dgx_h100.topo"))[0] == "logical"
    assert r.choose_view(topoc.load(RENDER / "cluster8.topo"))[0] == "racks"


def test_racks_view_aggregates_links():
    nodes, edges = r.racks(topoc.load(RENDER / "cluster8.topo"))
    units = {n.id for n in nodes if n.kind == "unit"}
    assert units == {f"cluster.rack{i}" for i in range(8)}
    rack_leaf = [e for e in edges if e.src == "cluster.rack0" or e.dst == "cluster.rack0"]
    assert len(rack_leaf) == 4 and all(e.lanes == 18 for e in rack_leaf)


def test_group_colour_overlay():
    system = topoc.load(GOLDEN.parent.parent / "library/nvidia/nvl72_cluster.topo", {"racks": 1})
    source, _ = r.dot_source(system, r.Options(view="physical", parallel="train", color="tp"))
    import re
    labels = re.findall(r'label="([^"]*)"', source)
    assert sum(lab.endswith("\ntp:0") for lab in labels) == 8
    assert sum(lab.endswith("\ntp:8") for lab in labels) == 8


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz dot not installed")
def test_svg_and_png_render(tmp_path):
    svg = tmp_path / "dgx.svg"
    assert main(["render", str(RENDER / "dgx_h100.topo"), "-o", str(svg)]) == 0
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    png = tmp_path / "rack.png"
    assert main(["render", str(RENDER / "nvl72.topo"), "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz dot not installed")
def test_hostile_names_are_escaped(tmp_path):
    gpu = DeviceModel('G "x" \\ <b>', "gpu")
    lt = LinkType("l", "nvlink", 1e9, 0.0)
    ids = ['s."quoted" id', 's.dash-ed.ünï', 's.back\\slash']
    system = System("s", tuple(Device(i, gpu) for i in ids),
                    (Link("x", ids[0], ids[1], lt, 1), Link("y", ids[1], ids[2], lt, 2)))
    data, _ = r.render(system, "svg", r.Options(view="physical"))
    text = ET.fromstring(data).itertext()
    joined = " ".join(text)
    assert '"quoted" id' in joined and "ünï" in joined


def test_missing_dot_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    out = tmp_path / "x.png"
    assert main(["render", str(RENDER / "dgx_h100.topo"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "apt-get install graphviz" in err and not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_render_cli_errors(tmp_path, capsys):
    dgx = str(RENDER / "dgx_h100.topo")
    assert main(["render", dgx, "-o", str(tmp_path / "x.jpg2")]) == 2
    assert main(["render", dgx, "-o", str(tmp_path / "x.dot"), "--parallel", "nope"]) == 2
    assert "no parallel block" in capsys.readouterr().err
    assert main(["render", dgx, "-o", str(tmp_path / "x.dot"), "--color", "tp"]) == 2
    assert main(["render", dgx, "-o", str(tmp_path / "x.dot"), "--view", "physical"]) == 0
    assert "\ngraph dgx {" in (tmp_path / "x.dot").read_text()


def test_ring_overlay_follows_the_topology_aware_order():
    system = topoc.load(GOLDEN.parent.parent / "library/nvidia/pcie_server.topo")
    source, _ = r.dot_source(system, r.Options(view="physical", ring="5,0,7,2,4,1,6,3"))
    arrows = [line for line in source.splitlines() if r.RING_COLOR in line and "->" in line
              or (r.RING_COLOR in line and "--" in line and "label=" in line)]
    hops = [(line.split("--")[0].strip().strip('"'), line.split("--")[1].split("[")[0].strip()
             .strip('"')) for line in source.splitlines() if f"color=\"{r.RING_COLOR}\"" in line]
    assert hops[0] == ("server.gpu0", "server.gpu1") and len(hops) == 8
    assert arrows


def test_a_ring_of_one_rank_is_a_note_not_silence(tmp_path, capsys):
    """``--ring`` on a one-rank group (dp:0 where dp = 1) says it has no ring (issue 40)."""
    system = topoc.load(GOLDEN.parent.parent / "library/nvidia/pcie_server.topo")
    notes: list[str] = []
    source, _ = r.dot_source(system, r.Options(view="physical", ring="3"), notes)
    assert notes == ["--ring 3: the group is one rank (world rank 3): it has no ring, and a "
                     "collective on it moves no data; no ring is drawn"]
    assert f'color="{r.RING_COLOR}"' not in source
    notes.clear()
    r.dot_source(system, r.Options(view="physical", ring="2,3"), notes)
    assert notes == []
    cluster = str(library_file("nvl72_cluster.topo"))
    assert main(["render", cluster, "-D", "racks=1", "--parallel", "train", "--ring", "dp:0",
                 "-o", str(tmp_path / "x.dot")]) == 0
    assert "note: --ring dp:0: group dp:0 is one rank (world rank 0)" in capsys.readouterr().err


def test_huge_racks_view_folds_arrays():
    system = topoc.load(GOLDEN.parent.parent / "library/nvidia/nvl72_superpod.topo",
                        {"racks": 128})
    nodes, edges = r.racks(system)
    ids = {n.id for n in nodes}
    assert "superpod.rack[0..31]" in ids and "superpod.rack[96..127]" in ids
    assert "superpod.leaf[*]" in ids and "superpod.core[*]" in ids
    assert len(nodes) == 4 + 1 + 16 + 1         # rack blocks, leaves, 16 pod planes, cores


def test_racks_view_draws_fabric_levels_in_order_and_wraps_racks():
    system = topoc.load(GOLDEN.parent.parent / "library/nvidia/nvl72_superpod.topo")  # 64 racks
    nodes, _ = r.racks(system)
    tier = {n.id: n.tier for n in nodes}
    # A Clos drawn as rows: cores at the top, then the pod spine planes, then the leaves, the
    # racks at the bottom.
    assert tier["superpod.core[*]"] < tier["superpod.pod0"] < tier["superpod.leaf[*]"]
    assert all(n.tier is None for n in nodes if n.kind == "unit")
    assert tier["superpod.leaf[*]"] < r.UNIT_TIER
    # 64 racks wrap into even rows read left to right, top to bottom (y grows upwards).
    from topoc.backends.layout import layout
    pos, _, (w, h), _ = layout(nodes, system.name, r._box, r._tier)
    racks = [pos[f"superpod.rack{i}"] for i in range(64)]
    rows = sorted({y for _, y in racks}, reverse=True)
    assert len(rows) > 1 and all(len([p for p in racks if p[1] == y]) == 64 // len(rows)
                                 for y in rows)
    assert racks == sorted(racks, key=lambda p: (-p[1], p[0]))
    assert 1 / 4 <= w / h <= 6


def test_render_guards(tmp_path, capsys, monkeypatch):
    """Too large a view is refused at once, a view that does not apply says so, a bad
    --highlight gets a suggestion, --color in a view without GPU boxes says so (and the
    legend does not claim it), and Graphviz's own warnings come as one summarised note."""
    from topoc.cli import main
    cluster = str(library_file("nvl72_cluster.topo"))
    with monkeypatch.context() as m:     # every library view now fits: lower the bound
        m.setattr(r, "MAX_LAYOUT", 100)
        assert main(["render", cluster, "-D", "racks=4", "--view", "physical",
                     "-o", str(tmp_path / "x.png")]) == 2
        assert "boxes and lines; Graphviz lays out at most 100" in capsys.readouterr().err
        assert not (tmp_path / "x.png").exists()
        assert main(["render", cluster, "-D", "racks=4", "--view", "physical",
                     "-o", str(tmp_path / "x.dot")]) == 0            # DOT text is still fine
    assert main(["render", str(library_file("dgx_h100.topo")), "--view", "racks",
                 "-o", str(tmp_path / "n.png")]) == 2
    assert "one machine" in capsys.readouterr().err and not (tmp_path / "n.png").exists()
    dgx = str(library_file("dgx_h100.topo"))
    assert main(["render", dgx, "--highlight", "nvlnk", "-o", str(tmp_path / "y.dot")]) == 2
    assert "did you mean 'nvlink'" in capsys.readouterr().err
    assert main(["render", dgx, "--highlight", "dgx.gpu3", "--highlight", "pcie",
                 "-o", str(tmp_path / "y.dot")]) == 0
    capsys.readouterr()
    assert main(["render", cluster, "--view", "racks", "--parallel", "train", "--color", "dp",
                 "-o", str(tmp_path / "r.dot")]) == 0
    # racks hold GPUs of many dp groups: striped, and named by the groups' range
    racks_dot = (tmp_path / "r.dot").read_text()
    assert "dp:0..71" in racks_dot and racks_dot.count('<TD BGCOLOR="') >= 72
    assert "fill and tag: dp group" in racks_dot
    notes: list[str] = []
    if not HAS_DOT:
        return
    system = topoc.load(library_file("gb200_nvl72.topo"))
    data, _ = r.render(system, "svg", r.Options(view="physical"), notes)
    # besides the note that the asked-for view is bigger than a slide (--size fits it)
    graphviz = [n for n in notes if not n.startswith("the physical view is ")]
    assert data.startswith(b"<?xml") and len(graphviz) <= 1 and len(notes) - len(graphviz) == 1
    assert all(n.startswith("Graphviz reported") for n in graphviz)


def test_highlight_takes_link_type_names_and_racks_view_says_when_it_does_not_apply(tmp_path,
                                                                                  capsys):
    cluster = str(library_file("nvl72_cluster.topo"))
    assert main(["render", cluster, "-D", "racks=2", "--highlight", "ndr",
                 "-o", str(tmp_path / "h.dot")]) == 0
    dot = (tmp_path / "h.dot").read_text()      # the fabric view: NDR lines at 4 pt
    assert "(fabric view)" in dot and 'penwidth="4"' in dot and '#1f4e9a40' not in dot
    assert main(["render", cluster, "-D", "racks=2", "--highlight", "ndr", "--view", "racks",
                 "-o", str(tmp_path / "h.dot")]) == 0
    dot = (tmp_path / "h.dot").read_text()
    assert 'color="#1f4e9a" ' in dot and 'penwidth=4' in dot
    assert main(["render", str(library_file("dgx_h100.topo")), "--view", "racks",
                 "-o", str(tmp_path / "r.png")]) == 2
    err = capsys.readouterr().err
    assert "one machine" in err and "--view logical" in err and not (tmp_path / "r.png").exists()


def test_palette_is_distinct_and_text_reads_on_every_fill():
    assert len(set(r.PALETTE)) == len(r.PALETTE) >= 36

    def luminance(c):
        ch = [int(c[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        ch = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in ch]
        return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2]
    for fill in r.PALETTE + ("#000075", "#4f81bd", "#76b900"):
        text = 1.0 if r.text_color(fill) == "white" else 0.0
        hi, lo = max(text, luminance(fill)), min(text, luminance(fill))
        assert (hi + 0.05) / (lo + 0.05) >= 4.0, fill       # readable (WCAG: 4.5 body text)


def test_leaves_are_framed_by_scalable_unit_and_named_by_rail():
    """As NVIDIA's SuperPOD reference architecture draws a fabric: a scalable unit's leaves in
    one frame, each leaf with its rail; an NVL72 cluster's four leaves under their rack."""
    system = topoc.load(library_file("h100_fourtier.topo"))         # 64 nodes: 2 SUs
    source, _ = r.dot_source(system, r.Options(view="racks"))
    assert 'subgraph "cluster_cluster.SU 0"' in source
    assert 'subgraph "cluster_cluster.SU 1"' in source
    su1 = source[source.index("cluster_cluster.SU 1"):]
    assert "leaf8\nrail 0" in su1[:su1.index("subgraph") if "subgraph" in su1 else None]
    nvl72 = topoc.load(library_file("nvl72_cluster.topo"))
    racks, _ = r.dot_source(nvl72, r.Options(view="logical"))
    # an NVL72 cluster's leaves in a frame a rack (the lines from the spine planes run on
    # tracks above the frames, so none crosses a frame's title; they crossed the leaf row)
    assert 'subgraph "cluster_cluster.rack3 leaves"' in racks
    assert racks.count("\nrail 3\n") == 8       # one label per rack (tooltips aside)
    if HAS_DOT:
        svg, _ = r.render(nvl72, "svg", r.Options(view="logical"))
        assert not [t for t in geometry.lines_through_titles(svg) if t[2].endswith(" leaves")]


def test_names_are_the_shortest_unique_suffix():
    from topoc.backends.style import unique_suffixes
    assert unique_suffixes(["sys.pod0.spine3", "sys.pod1.spine3", "sys.leaf7"]) == \
        {"sys.pod0.spine3": "pod0.spine3", "sys.pod1.spine3": "pod1.spine3",
         "sys.leaf7": "leaf7"}
    rack, _ = r.dot_source(topoc.load(library_file("gb200_nvl72.topo")),
                           r.Options(view="physical"))
    assert 'label="nvswitch_tray3\nchip1' in rack         # chips repeat: their tray too
    node, _ = r.dot_source(topoc.load(library_file("dgx_h100.topo")),
                           r.Options(view="physical"))
    assert 'label="nvswitch0\nNVSwitch3"' in node          # unique: no path


def test_a_cluster_draws_its_first_machine_and_folds_the_rest():
    """The physical and logical views of a cluster: node0 in full, the other 31 nodes one
    summary box with their counts, the fabric above."""
    system = topoc.load(library_file("h100_cluster.topo"))
    for view in ("physical", "logical"):
        nodes, edges = r.BUILDERS[view](system)
        ids = {n.id for n in nodes}
        assert "cluster.node0.gpu7" in ids and "cluster.node1.gpu0" not in ids
        box = next(n for n in nodes if n.id == "cluster.node[1..31]")
        assert box.label.startswith("node[1..31]: 31 nodes") and "248 GPUs" in box.label
        assert {"cluster.leaf0", "cluster.spine3"} <= ids
        assert any(e.src == "cluster.node[1..31]" or e.dst == "cluster.node[1..31]"
                   for e in edges)
    assert r.machines_folded(topoc.load(library_file("gb200_nvl72.topo"))) is None
    assert r.machines_folded(topoc.load(library_file("pcie_server.topo"))) is None


@pytest.mark.parametrize("view", ["physical", "logical", "racks"])
def test_ring_over_folded_machines_draws_on_every_view_of_a_cluster(view):
    """--ring dp:0 on h100_cluster's logical view raised KeyError: the ring's GPUs in folded
    machines were mapped to racks-view boxes this view does not draw."""
    system = topoc.load(library_file("h100_cluster.topo"))
    notes: list[str] = []
    source, _ = r.dot_source(system, r.Options(view=view, parallel="train", ring="dp:0"),
                             notes)
    drawn = {m.group(1) for m in re.finditer(r'^\s*"([^"]+)" \[', source, re.M)}
    hops = [line for line in source.splitlines() if f'color="{r.RING_COLOR}"' in line]
    assert hops
    for line in hops:
        a, b = (part.strip().split(" ")[0].strip('"') for part in line.split("--", 1)) \
            if "--" in line else (part.strip().split(" ")[0].strip('"')
                                  for part in line.split("->", 1))
        assert a in drawn and b in drawn, (a, b)


def test_highlight_by_the_name_a_box_shows(tmp_path, capsys):
    cluster = str(library_file("h100_cluster.topo"))
    assert main(["render", cluster, "--view", "logical", "--highlight", "leaf3",
                 "-o", str(tmp_path / "h.dot")]) == 0
    assert "penwidth=4" in (tmp_path / "h.dot").read_text()
    assert main(["render", cluster, "--highlight", "gpu0", "-o", str(tmp_path / "g.dot")]) == 0
    assert "32 instances of that name" in capsys.readouterr().err
    assert main(["render", cluster, "--highlight", "leaf33", "-o", str(tmp_path / "x.dot")]) == 2
    assert "did you mean 'leaf3'?" in capsys.readouterr().err


def _highlighted_boxes(source: str) -> set[str]:
    """The boxes drawn with the highlight's red outline (a box's attributes span lines)."""
    return {m.group(1) for m in re.finditer(r'^\s*"([^"]+)" \[(.*?)\]$', source, re.M | re.S)
            if re.search(r"(^|\s)penwidth=4\b", m.group(2))
            and re.search(r"(^|\s)color=red\b", m.group(2))}


@pytest.mark.parametrize("view, name, box", [
    ("physical", "node5.gpu3", "cluster.node[1..31]"),
    ("logical", "cluster.node5", "cluster.node[1..31]"),
    ("physical", "cluster.node0.gpu3", "cluster.node0.gpu3"),
])
def test_highlighting_a_folded_device_highlights_its_box(tmp_path, view, name, box):
    """Issue 46: a device (or instance) drawn inside a summary box showed nothing; the box
    that draws it is highlighted, as --ring maps its GPUs (a device drawn itself stays so)."""
    out = tmp_path / "h.dot"
    assert main(["render", str(library_file("h100_cluster.topo")), "--view", view,
                 "--highlight", name, "-o", str(out)]) == 0
    assert _highlighted_boxes(out.read_text()) == {box}


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz dot not installed")
@pytest.mark.parametrize("file, more", [("h100_cluster", ["--color", "dp"]),
                                        ("h100_superpod", ["-D", "nodes=512", "--color", "tp"])])
def test_the_group_colour_bar_has_equal_cells(tmp_path, capsys, file, more):
    """Issue 46: the keyed bar of a box holding several groups had unequal cells (Graphviz
    spread the text's width over them unevenly): every cell of a box's bar is as wide as
    every other in the SVG, with no Graphviz warning (the second case has 32 groups a box,
    past the bar's 24 cells: its '+8' cell)."""
    out = tmp_path / "dp.svg"
    assert main(["render", str(library_file(f"{file}.topo")), "--view", "racks",
                 "--parallel", "train", *more, "-o", str(out)]) == 0
    assert "layout warning" not in capsys.readouterr().err
    ns = {"s": "http://www.w3.org/2000/svg"}
    checked = 0
    for g in ET.parse(out).getroot().iter("{http://www.w3.org/2000/svg}g"):
        if g.get("class") != "node":
            continue
        cells = []
        for poly in g.findall(".//s:polygon", ns):
            if poly.get("fill") in (None, "none", "#f4f4f4", "white", "transparent"):
                continue
            xs = [float(p.split(",")[0]) for p in poly.get("points").split()]
            cells.append(max(xs) - min(xs))
        if len(cells) > 2:
            checked += 1
            assert max(cells) - min(cells) < 0.6, (g.find("s:title", ns).text, cells)
    assert checked >= 8


@pytest.mark.skipif(not HAS_DOT, reason="Graphviz dot not installed")
@pytest.mark.parametrize("view", [None, "racks"])
def test_the_dot_file_is_the_picture(tmp_path, view):
    """Issue 46: once rows wrapped (the NVL72 cluster's racks view is too wide in one row)
    the .dot file held the unwrapped layout while the SVG showed the wrapped one. Graphviz
    drawing the .dot as docs/render.md says gives topoc's own SVG, byte for byte."""
    src = str(library_file("nvl72_cluster.topo"))
    more = ["--view", view] if view else []
    assert main(["render", src, *more, "-o", str(tmp_path / "p.dot")]) == 0
    assert main(["render", src, *more, "-o", str(tmp_path / "p.svg")]) == 0
    again = subprocess.run([shutil.which("dot"), "-Kneato", "-n2", "-Tsvg",
                            str(tmp_path / "p.dot")], capture_output=True, check=True).stdout
    assert again == (tmp_path / "p.svg").read_bytes()
