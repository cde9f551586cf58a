"""``topoc render``: Graphviz diagrams of a compiled system.

Views:
- ``physical``: every device and link, nested in clusters that follow the hierarchy;
- ``logical``: each NVLink switch domain drawn as one fabric node, every GPU's lanes into it
  bundled on one edge;
- ``racks``: one box per top-level instance (rack, node) with the links between boxes
  aggregated per link class: the view for large clusters.

The DOT text is built with everything sorted, so the same system gives the same bytes.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections import defaultdict

import attrs
import graphviz

from ..compiler.ir.system import System
from ..compiler.ir.locality import UnionFind, common_prefix
from ..compiler.ir.groups import rank_groups
from ..compiler.ir.summary import scaleout_levels
from ..compiler.base.units import RATE, human
from .layout import box_size, layout, natural, parts

VIEWS = ("physical", "logical", "racks")
#: The default view is the most detailed one whose drawing stays under these counts.
LEGIBLE_NODES, LEGIBLE_EDGES = 320, 700

KIND_STYLE = {
    "gpu": {"shape": "box", "fillcolor": "#76b900", "fontcolor": "black"},
    "cpu": {"shape": "box", "style": "filled,rounded", "fillcolor": "#4f81bd",
            "fontcolor": "white"},
    "nic": {"shape": "hexagon", "fillcolor": "#f79646"},
    "dpu": {"shape": "hexagon", "fillcolor": "#fac090", "style": "filled,bold"},
    "switch": {"shape": "octagon", "fillcolor": "#8064a2", "fontcolor": "white"},
    "pcie_switch": {"shape": "diamond", "fillcolor": "#bfbfbf"},
    "net_switch": {"shape": "doubleoctagon", "fillcolor": "#c0504d", "fontcolor": "white"},
    "fabric": {"shape": "box", "style": "filled,bold", "fillcolor": "#8064a2",
               "fontcolor": "white"},
    "unit": {"shape": "box3d", "fillcolor": "#eeeeee"},
    "netunit": {"shape": "box3d", "fillcolor": "#e6b9b8"},
}
CLASS_COLOR = {"nvlink": "#4e9a06", "nvlink_c2c": "#00a3a3", "pcie": "#555555",
               "infiniband": "#1f4e9a", "ethernet": "#e36c09", "inter_socket": "#c00000"}
LEGEND_NAME = {"unit": "rack / node (group)", "netunit": "switch group", "fabric": "NVLink fabric",
               "switch": "NVLink switch", "net_switch": "network switch"}
# Ranks from the host down: CPU, PCIe switches, GPUs and NICs, NVLink switches, the network.
TIER = {"cpu": 0, "unit": 0, "pcie_switch": 1, "gpu": 2, "nic": 2, "dpu": 2, "switch": 3, "fabric": 3,
        "net_switch": 4, "netunit": 5}
#: A top-level array of network switches with more members than this is drawn as one box.
FOLD = 64
BLOCK = 32
#: Boxes plus lines Graphviz lays out in seconds: a 2-rack NVL72 physical view (3,644) takes
#: about 5 s on 2 cores, and the time grows faster than the size. Past this a picture is
#: refused (the DOT text can still be written).
MAX_LAYOUT = 5000
#: Up to this many lines Graphviz routes them around the boxes; past it they are straight and
#: drawn under the boxes (routing around obstacles took 9.5 s for the NVL72's 216 lines).
SPLINE_EDGES = 100
#: The DOT text carries topoc's positions: dot would discard them, neato -n2 keeps them.
HEADER = "// topoc placed every box: draw with  neato -n2 -Tsvg FILE.dot -o FILE.svg\n"
#: A box holding more groups than this shows the first ones' colours and names the count.
MAX_STRIPES = 8
SHAPE_ROOM = {"diamond": (1.6, 1.5), "hexagon": (1.25, 1.1), "octagon": (1.25, 1.15),
              "doubleoctagon": (1.3, 1.2), "box3d": (1.05, 1.05)}
PALETTE = ("#e6194b", "#3cb44b", "#ffe119", "#4363d8", "#f58231", "#911eb4", "#46f0f0",
           "#f032e6", "#bcf60c", "#fabebe", "#008080", "#e6beff", "#9a6324", "#fffac8",
           "#800000", "#aaffc3", "#808000", "#ffd8b1", "#000075", "#808080")


class DotMissing(Exception):
    """A picture format was asked for and Graphviz's ``dot`` could not run."""


@attrs.frozen
class Node:
    """A drawn box: a device, a fabric or an aggregated unit."""

    id: str
    kind: str
    label: str
    cluster: str        # id prefix of the cluster it sits in ('' for the top)
    tier: int | None = None     # drawing tier when not the kind's (a switch box's level)


@attrs.frozen
class Edge:
    """A drawn line: one link or several bundled (lanes and bandwidth summed)."""

    src: str
    dst: str
    cls: str
    lanes: int
    bandwidth: float
    duplex: bool = True


@attrs.frozen
class Options:
    """What to draw beyond the topology: group colours and highlights."""

    view: str | None = None
    parallel: str | None = None
    color: str = "tp"
    highlight: tuple[str, ...] = ()
    ring: str | None = None      # a group (dp:3, world, or a rank list 0..7) whose ring to draw


def _parent(device_id: str) -> str:
    return device_id.rpartition(".")[0]


def _short(device_id: str) -> str:
    return parts(device_id)[-1]


def physical(system: System) -> tuple[list[Node], list[Edge]]:
    """Every device and every link."""
    nodes = [Node(d.id, d.kind, f"{_short(d.id)}\n{d.model.name}", _parent(d.id))
             for d in system.devices]
    edges = [Edge(link.src, link.dst, link.cls, link.lanes, link.bandwidth, link.duplex)
             for link in system.links]
    return nodes, edges


def nvlink_domains(system: System) -> dict[str, list[str]]:
    """NVLink switches grouped by the switch fabric they form (connected through GPUs)."""
    switches = {d.id for d in system.devices if d.kind == "switch"}
    sets = UnionFind()
    gpu_switches: dict[str, list[str]] = defaultdict(list)
    for link in system.links:
        if link.cls == "nvlink":
            for a, b in ((link.src, link.dst), (link.dst, link.src)):
                if a in switches:
                    gpu_switches[b].append(a)
    for members in gpu_switches.values():
        for s in members[1:]:
            sets.union(s, members[0])
    domains: dict[str, list[str]] = defaultdict(list)
    for s in sorted(switches):
        domains[sets.find(s)].append(s)
    return {min(v): v for v in domains.values()}


def logical(system: System) -> tuple[list[Node], list[Edge]]:
    """NVLink switch domains collapsed into one fabric node each; lanes bundled."""
    nodes, _ = physical(system)
    fabric_of: dict[str, str] = {}
    fabrics = []
    for members in nvlink_domains(system).values():
        prefix = common_prefix(members)
        fid = f"{prefix}.nvlink_fabric" if prefix else "nvlink_fabric"
        model = system.device(members[0]).model.name
        fabrics.append(Node(fid, "fabric", f"NVLink fabric\n{len(members)} x {model}",
                            prefix if "." in fid else ""))
        fabric_of.update(dict.fromkeys(members, fid))
    nodes = [n for n in nodes if n.id not in fabric_of] + fabrics
    return nodes, _bundle(system, lambda dev: fabric_of.get(dev, dev))


def _bundle(system: System, where) -> list[Edge]:
    """Links mapped through ``where`` (device -> drawn node), merged per node pair and class."""
    merged: dict[tuple, list] = {}
    for link in system.links:
        a, b = where(link.src), where(link.dst)
        if a == b:
            continue
        key = (min(a, b), max(a, b), link.cls, link.duplex) if link.duplex else \
            (a, b, link.cls, False)
        acc = merged.setdefault(key, [0, 0.0])
        acc[0] += link.lanes
        acc[1] += link.bandwidth
    return [Edge(k[0], k[1], k[2], lanes, bw, k[3]) for k, (lanes, bw) in merged.items()]


def _units(system: System) -> dict[str, str]:
    """Device id -> its box in the racks view: the top-level instance it belongs to. A top-level
    array with more than FOLD members is folded: network switches into one box, anything else
    (racks, nodes) into boxes of BLOCK consecutive members."""
    prefix = system.name + "."
    top = {d.id: prefix + d.id[len(prefix):].split(".", 1)[0] for d in system.devices}
    members: dict[str, set[str]] = defaultdict(set)
    network_only: dict[str, bool] = defaultdict(lambda: True)
    for d in system.devices:
        stem = top[d.id].rstrip("0123456789")
        if stem != top[d.id]:
            members[stem].add(top[d.id])
            network_only[stem] &= d.kind == "net_switch"
    fold = {stem for stem, units in members.items() if len(units) > FOLD}

    def box(unit: str) -> str:
        stem = unit.rstrip("0123456789")
        if stem not in fold:
            return unit
        if network_only[stem]:
            return f"{stem}[*]"
        lo = int(unit[len(stem):]) // BLOCK * BLOCK
        return f"{stem}[{lo}..{min(lo + BLOCK, len(members[stem])) - 1}]"
    return {dev: box(unit) for dev, unit in top.items()}


def racks(system: System) -> tuple[list[Node], list[Edge]]:
    """One box per top-level instance; links between boxes aggregated per class."""
    unit_of = _units(system)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    single: dict[str, str] = {}
    for d in system.devices:
        unit = unit_of[d.id]
        counts[unit][d.kind] += 1
        single[unit] = d.model.name if unit == d.id else ""
    # Boxes of network switches sit below the racks, one tier per fabric level (leaves, then
    # spines, then cores), so the uplinks between them are drawn top to bottom.
    level = scaleout_levels(system)
    unit_level: dict[str, int] = defaultdict(int)
    for d in system.devices:
        if d.kind == "net_switch":
            unit_level[unit_of[d.id]] = max(unit_level[unit_of[d.id]], level.get(d.id, 1))
    nodes = []
    for unit, kinds in counts.items():
        tier = TIER["net_switch"] + unit_level[unit] if set(kinds) == {"net_switch"} else None
        if single[unit]:
            kind = next(iter(kinds))
            nodes.append(Node(unit, kind, f"{_short(unit)}\n{single[unit]}", "", tier))
        else:
            body = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            kind = "netunit" if set(kinds) == {"net_switch"} else "unit"
            nodes.append(Node(unit, kind, f"{_short(unit)}\n{body}", "", tier))
    return nodes, _bundle(system, unit_of.__getitem__)


BUILDERS = {"physical": physical, "logical": logical, "racks": racks}


def choose_view(system: System) -> tuple[str, list[Node], list[Edge]]:
    """The most detailed view that stays legible (LEGIBLE_NODES / LEGIBLE_EDGES), built."""
    for view in ("physical", "logical"):
        if view == "physical" and (len(system.devices) > LEGIBLE_NODES
                                   or len(system.links) > LEGIBLE_EDGES):
            continue   # counted without building: the physical view has one box per device
        nodes, edges = BUILDERS[view](system)
        if len(nodes) <= LEGIBLE_NODES and len(edges) <= LEGIBLE_EDGES:
            return view, nodes, edges
    return ("racks", *racks(system))


def _box(n: Node) -> tuple[float, float]:
    """Points a box needs: its label (two more lines room for a group tag), its shape."""
    w, h = box_size(n.label + "\ntp:00")
    fw, fh = SHAPE_ROOM.get(KIND_STYLE[n.kind]["shape"], (1.0, 1.0))
    return w * fw, h * fh


def _tier(n: Node) -> int:
    return TIER[n.kind] if n.tier is None else n.tier


def _penwidth(bandwidth: float) -> str:
    # 1 at <= 25 GB/s, about +1 per doubling, capped so bundles stay readable.
    return f"{min(8.0, 1.0 + max(0.0, math.log2(bandwidth / 25e9))):.2f}"


def _group_colors(system: System, opts: Options) -> dict[str, tuple[str, str]]:
    if not opts.parallel:
        return {}
    strategy = system.parallel(opts.parallel)
    out = {}
    for index, ranks in enumerate(rank_groups(strategy, opts.color)):
        for r in ranks:
            out[system.gpus[r].id] = (PALETTE[index % len(PALETTE)], f"{opts.color}:{index}")
    return out


def _unit_colors(system: System, gpu_colors: dict[str, tuple[str, str]],
                 nodes: list[Node]) -> dict[str, tuple[str, str]]:
    """Boxes that stand for many GPUs (racks, nodes, folded blocks) coloured by the groups they
    hold: one group's colour, or stripes of up to MAX_STRIPES groups, and the groups named
    ('dp:3', 'dp:0..7', 'dp: 12 groups')."""
    unit_of = _units(system)
    held: dict[str, list[int]] = defaultdict(list)
    tags: dict[int, str] = {}
    for gpu in system.gpus:
        if gpu.id in gpu_colors:
            color, tag = gpu_colors[gpu.id]
            index = int(tag.rpartition(":")[2])
            tags[index] = color
            box = unit_of[gpu.id]
            if index not in held[box]:
                held[box].append(index)
    kind = next(iter(gpu_colors.values()))[1].partition(":")[0] if gpu_colors else ""
    out = {}
    for n in nodes:
        groups = sorted(held.get(n.id, ()))
        if not groups:
            continue
        if len(groups) == 1:
            out[n.id] = (tags[groups[0]], f"{kind}:{groups[0]}")
            continue
        run = groups == list(range(groups[0], groups[-1] + 1))
        name = f"{kind}:{groups[0]}..{groups[-1]}" if run else f"{kind}: {len(groups)} groups"
        stripes = ":".join(tags[i] for i in groups[:MAX_STRIPES])
        out[n.id] = (stripes, name)
    return out


def _highlighted(opts: Options, node_id: str) -> bool:
    return any(node_id == h or node_id.startswith(h + ".") for h in opts.highlight)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _legend(kinds: set[str], classes: set[str], opts: Options, view: str,
            shown: bool = True) -> str:
    rows = [f'<TR><TD COLSPAN="2"><B>{view} view</B></TD></TR>']
    for kind in sorted(kinds):
        color = KIND_STYLE[kind]["fillcolor"]
        name = LEGEND_NAME.get(kind, kind)
        rows.append(f'<TR><TD BGCOLOR="{color}" WIDTH="24"></TD><TD ALIGN="LEFT">{name}</TD></TR>')
    for cls in sorted(classes):
        rows.append(f'<TR><TD><FONT COLOR="{CLASS_COLOR[cls]}"><B>&#8212;&#8212;</B></FONT></TD>'
                    f'<TD ALIGN="LEFT">{cls}</TD></TR>')
    if opts.parallel and shown:
        rows.append(f'<TR><TD COLSPAN="2">fill: {opts.color} group (stripes: several)</TD></TR>')
    if opts.ring:
        rows.append(f'<TR><TD><FONT COLOR="{RING_COLOR}"><B>- - &gt;</B></FONT></TD>'
                    f'<TD ALIGN="LEFT">ring of {_html(opts.ring)}</TD></TR>')
    return f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0">{"".join(rows)}</TABLE>>'


def dot_source(system: System, opts: Options = Options(),
               notes: list[str] | None = None) -> tuple[str, str]:
    """The DOT text for ``system`` and the view it shows; what the drawing cannot show goes to
    ``notes``."""
    view, nodes, edges = _view(system, opts)
    colors = _group_colors(system, opts)
    shown = any(n.id in colors for n in nodes)
    if opts.parallel and not shown:
        colors = _unit_colors(system, colors, nodes)
        shown = bool(colors)
    if opts.parallel and not shown and notes is not None:
        notes.append(f"--color {opts.color}: the {view} view draws no box that holds a GPU")
    g = graphviz.Graph(name=system.name, strict=False)
    pos, boxes, (width, height) = layout(nodes, system.name, _box, _tier)
    g.attr(splines="true" if len(edges) <= SPLINE_EDGES else "line", outputorder="edgesfirst",
           fontname="Helvetica", label=f"{system.name} ({view} view)", labelloc="t",
           fontsize="20", overlap="true")
    g.attr("node", style="filled", fontname="Helvetica", fontsize="10")
    g.attr("edge", fontname="Helvetica", fontsize="8")

    by_cluster: dict[str, list[Node]] = defaultdict(list)
    for n in nodes:
        by_cluster[n.cluster].append(n)
    children: dict[str, list[str]] = defaultdict(list)
    for c in boxes:
        p = _parent(c)
        children[p if p in boxes else ""].append(c)

    def emit(graph, cluster: str) -> None:
        for n in sorted(by_cluster.get(cluster, ()), key=lambda n: n.id):
            style = dict(KIND_STYLE[n.kind])
            label = n.label
            if n.id in colors:
                style["fillcolor"], tag = colors[n.id]
                label = f"{label}\n{tag}"
                if ":" in style["fillcolor"]:      # several groups: stripes, on a flat box
                    style.update(shape="box", style="striped")
            if _highlighted(opts, n.id):
                style.update(penwidth="4", color="red")
            x, y = pos[n.id]
            w, h = _box(n)
            graph.node(n.id, label=label, pos=f"{x:.1f},{y:.1f}!", width=f"{w / 72:.3f}",
                       height=f"{h / 72:.3f}", **style)
        for c in sorted(children.get(cluster, ()), key=natural):
            x0, y0, x1, y1 = boxes[c]
            with graph.subgraph(name=f"cluster_{c}") as sub:
                sub.attr(label=_short(c), style="rounded", color="#999999", fontsize="12",
                         bb=f"{x0:.1f},{y0:.1f},{x1:.1f},{y1:.1f}", labelloc="t")
                emit(sub, c)
    emit(g, "")
    if system.name in by_cluster:
        emit(g, system.name)

    tier = {n.id: _tier(n) for n in nodes}
    classes = set()
    for e in sorted(edges, key=lambda e: (e.src, e.dst, e.cls)):
        if e.duplex and tier[e.src] > tier[e.dst]:
            e = attrs.evolve(e, src=e.dst, dst=e.src)   # a stable direction for the DOT text
        classes.add(e.cls)
        lanes = f"x{e.lanes} " if e.lanes > 1 else ""
        attrs_ = {"color": CLASS_COLOR[e.cls], "penwidth": _penwidth(e.bandwidth),
                  "label": f"{lanes}{human(e.bandwidth, RATE)}"}
        if not e.duplex:
            attrs_["dir"] = "forward"
        if opts.highlight:
            if e.cls in opts.highlight or _highlighted(opts, e.src) or _highlighted(opts, e.dst):
                attrs_["penwidth"] = "4"
            else:
                attrs_["color"] += "40"   # fade what is not highlighted
        g.edge(e.src, e.dst, **attrs_)
    _draw_ring(g, system, opts, {n.id for n in nodes}, view)
    kinds = {n.kind for n in nodes}
    legend = _legend(kinds, classes, opts, view, shown)
    rows = legend.count("<TR>")
    g.node("legend", label=legend, shape="plaintext", style="", fillcolor="",
           pos=f"{width + 110:.1f},{height - 9 * rows:.1f}!")
    return HEADER + g.source, view


def _view(system: System, opts: Options):
    if opts.view:
        return (opts.view, *BUILDERS[opts.view](system))
    return choose_view(system)


def layout_size(system: System, opts: Options) -> tuple[str, int]:
    """The view ``opts`` draws and its boxes plus lines, what Graphviz's time grows with."""
    view, nodes, edges = _view(system, opts)
    return view, len(nodes) + len(edges)


RING_COLOR = "#d62728"
def ring_group(system: System, opts: Options):
    """The group ``opts.ring`` names: a rank list if it has digits only, else a group spec."""
    from ..compiler.ir.groups import select_group
    spec = opts.ring
    if spec and (spec[0].isdigit()):
        return select_group(system, ranks_text=spec)
    return select_group(system, spec, opts.parallel)


def _draw_ring(g, system: System, opts: Options, drawn: set[str], view: str) -> None:
    """Channel 0 of the group's ring as numbered arrows between the boxes that hold its GPUs."""
    if not opts.ring:
        return
    from ..compiler.collectives.orders import ring_orders
    group = ring_group(system, opts)
    order = ring_orders(system, group.ranks, 1)[0]
    unit_of = _units(system)

    def box(position: int) -> str:
        dev = system.gpus[group.ranks[position]].id
        return dev if dev in drawn else unit_of[dev]     # a rack, node or folded block
    hops = [(box(a), box(b)) for a, b in zip(order, order[1:] + order[:1])]
    for step, (a, b) in enumerate(hops):
        if a != b:
            g.edge(a, b, color=RING_COLOR, penwidth="2.5", dir="forward",
                   label=str(step), fontcolor=RING_COLOR, style="dashed")


class TooLarge(ValueError):
    """The view has more boxes and lines than Graphviz lays out in reasonable time."""


def render(system: System, fmt: str = "dot", opts: Options = Options(),
           notes: list[str] | None = None) -> tuple[bytes, str]:
    """The diagram as bytes in ``fmt`` (dot, svg, png, pdf) and the view drawn; Graphviz's
    warnings and what the view cannot show are summarised in ``notes``.

    Raises ``DotMissing`` when a picture is asked for and Graphviz's ``dot`` cannot run, and
    ``TooLarge`` when the view has more than ``MAX_LAYOUT`` boxes and lines to lay out.
    """
    if fmt != "dot":
        view, size = layout_size(system, opts)
        if size > MAX_LAYOUT:
            raise TooLarge(f"the {view} view has {size:,} boxes and lines; Graphviz lays out "
                           f"at most {MAX_LAYOUT:,} in reasonable time. Draw --view racks (it "
                           "folds arrays), a smaller system (-D), or write the DOT text with "
                           "-o FILE.dot")
    source, view = dot_source(system, opts, notes)
    if fmt == "dot":
        return source.encode("utf-8"), view
    dot = shutil.which("dot")
    if dot is None:
        raise DotMissing(f"Graphviz's 'dot' program is needed for .{fmt} output; install it "
                         "with 'apt-get install graphviz' (or your system's package manager), "
                         "or write a .dot file")
    # topoc placed every box; neato -n2 keeps those positions and only routes the lines.
    done = subprocess.run([dot, "-Kneato", "-n2", f"-T{fmt}"], input=source.encode("utf-8"),
                          capture_output=True, check=False)
    warnings = [ln for ln in done.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    if done.returncode != 0:
        raise DotMissing(f"Graphviz's dot failed: {warnings[-1] if warnings else done.returncode}")
    if warnings and notes is not None:
        notes.append(f"Graphviz reported {len(warnings)} layout warning"
                     f"{'s' if len(warnings) > 1 else ''} (some lines may be drawn oddly), "
                     f"e.g. {warnings[0][:160]}")
    return done.stdout, view
