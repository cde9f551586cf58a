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
import re
import shutil
import subprocess
from collections import defaultdict

import attrs
import graphviz

from ..compiler.ir.system import System
from ..compiler.ir.locality import UnionFind, common_prefix
from ..compiler.ir.groups import lone_rank, rank_groups
from ..compiler.ir.kinds import is_endpoint
from ..compiler.ir.summary import scaleout_levels
from .clos import frame_leaves
from .layout import natural, parts, stem as _stem, top_levels
from .style import (CLASS_COLOR, PALETTE, RING_COLOR,  # noqa: F401
                    UNIT_TIER, kind_name, kind_tier, Edge, Node, Options, text_color, unique_suffixes,
                    box as _box,
                    tier as _tier)

VIEWS = ("physical", "logical", "racks", "fabric")
#: The default view is the most detailed one whose drawing stays under these counts.
LEGIBLE_NODES, LEGIBLE_EDGES = 320, 700

#: A top-level array of network switches with more members than this is drawn as one box.
FOLD = 64
BLOCK = 32
#: A folded physical or logical view draws the machines after the first in at most this
#: many summary boxes.
SUMMARIES = 8
#: Boxes plus lines Graphviz lays out in seconds: a 2-rack NVL72 physical view (3,644) takes
#: about 5 s on 2 cores, and the time grows faster than the size. Past this a picture is
#: refused (the DOT text can still be written).
MAX_LAYOUT = 5000
#: No side of a picture longer than this (points), and its width over height in this range.
MAX_SIDE = 10_000.0
MIN_RATIO, MAX_RATIO = 1 / 4, 4.0
#: At most this share of a picture's lines may run through a box they do not join.
MAX_CROSSING = 0.05
#: Pictures with more device boxes than this label them by name only (models in the legend).
COMPACT = 48
#: The DOT text carries topoc's positions: dot would discard them, neato -n2 keeps them.
HEADER = "// topoc placed every box and line: draw with  neato -n2 -Tsvg FILE.dot -o FILE.svg\n"
class DotMissing(Exception):
    """A picture format was asked for and Graphviz's ``dot`` could not run."""


class TooLarge(ValueError):
    """The view cannot be drawn legibly: too many boxes and lines for Graphviz, a side beyond
    MAX_SIDE or a shape outside MIN_RATIO..MAX_RATIO, or a view that does not apply."""


def _parent(device_id: str) -> str:
    return device_id.rpartition(".")[0]


def _short(device_id: str) -> str:
    return parts(device_id)[-1]


def _host_side(system: System, nodes: list[Node]) -> list[Node]:
    """NICs and DPUs moved to the host side, above the GPUs: next to the PCIe switch they hang
    off (same cluster), in the PCIe switch row when they link a CPU to a GPU (they are its
    switch), else in a row above the CPU or GPU they hang off; network switches above the
    machines, one row per fabric level (leaves nearest), so the NICs' lines go up to them."""
    kind = {n.id: n.kind for n in nodes}
    cluster = {n.id: n.cluster for n in nodes}
    hosts: dict[str, list[str]] = defaultdict(list)
    for link in system.links:
        for a, b in ((link.src, link.dst), (link.dst, link.src)):
            if is_endpoint(kind.get(a, "")) and kind.get(b) in ("pcie_switch", "cpu", "gpu"):
                hosts[a].append(b)
    level = scaleout_levels(system) if any(n.kind == "net_switch" for n in nodes) else {}
    # a PCIe switch between a CPU and a GPU framed apart from it (a GB300 tray's ConnectX-8
    # switch over its Superchip's GPU): above the frame, on the host side, as the NIC on a
    # GB300's GPU is; under the frame it stood in the way of the GPUs' NVLink lines and
    # apart from its GPU
    framed_gpu: set[str] = set()
    for link in system.links:
        for a, b in ((link.src, link.dst), (link.dst, link.src)):
            if kind.get(a) == "pcie_switch" and kind.get(b) == "gpu" and \
                    cluster.get(b, "").startswith(cluster.get(a, "") + ".") and \
                    cluster.get(a) not in ("", None):
                framed_gpu.add(a)
    above = kind_tier("cpu") - 1
    framed_here = {cluster[a]: True for a in framed_gpu}
    out = []
    for n in nodes:
        if n.kind == "net_switch":      # the fabric above the machines, leaves nearest
            n = attrs.evolve(n, tier=-level.get(n.id, 1))
        if n.id in framed_gpu:
            n = attrs.evolve(n, tier=above)
        if is_endpoint(n.kind) and hosts.get(n.id):
            switch = [h for h in sorted(hosts[n.id]) if kind[h] == "pcie_switch"
                      and cluster[h] == n.cluster]
            host_kinds = {kind[h] for h in hosts[n.id]}
            if switch:
                n = attrs.evolve(n, tier=above if switch[0] in framed_gpu
                                 else kind_tier("pcie_switch"), anchor=switch[0])
            elif {"cpu", "gpu"} <= host_kinds:
                # between a CPU and a GPU, it is that GPU's PCIe switch (HGX B300's CX8 with
                # its built-in switch): in the PCIe switch row, over its GPU, so each GPU
                # keeps its own NIC and no line crosses the CPUs' row
                n = attrs.evolve(n, tier=kind_tier("pcie_switch"))
            elif host_kinds & {"cpu", "gpu"}:
                # on a CPU, or on a GPU (GB300's CX8): above the host, never between the
                # GPUs and their NVLink switches; above the switches over a framed GPU
                # (a GB300 tray's BlueField-3 over its CX8 switches), whose lines to their
                # GPUs are the more
                n = attrs.evolve(n, tier=above - 1 if framed_here.get(n.cluster) else above)
        out.append(n)
    return out


def _device_label(d, compact: bool, names: dict[str, str] | None = None) -> str:
    """'gpu0' and its model; in a crowded picture the name alone (the legend names models).
    A switch chip by its shortest name no other drawn switch shares (``names``): a chip in
    a switch tray with the tray ('nvswitch_tray3' over 'chip1'), a node's 'nvswitch0'."""
    name = _short(d.id)
    if d.kind == "switch" and names:
        name = names.get(d.id, name).replace(".", "\n")
    return name if compact else f"{name}\n{d.model.name}"


def _switch_names(devices) -> dict[str, str]:
    return unique_suffixes(d.id for d in devices if d.kind == "switch")


def physical(system: System) -> tuple[list[Node], list[Edge]]:
    """Every device and every link; in a system of several machines, the first machine's,
    the others and the fabric folded into boxes (see ``machines_folded``)."""
    folded = machines_folded(system)
    if folded is not None:
        return _folded_view(system, *folded, lambda dev: dev)
    compact = len(system.devices) > COMPACT
    names = _switch_names(system.devices)
    nodes = [Node(d.id, d.kind, _device_label(d, compact, names), _parent(d.id))
             for d in system.devices]
    edges = [Edge(link.src, link.dst, link.cls, link.lanes, link.bandwidth, link.duplex,
                  (link.type.name,))
             for link in system.links]
    return _host_side(system, nodes), edges


def machines_folded(system: System) -> tuple[str, dict[str, str]] | None:
    """For a system of several machines (two or more top-level instances holding GPUs, no
    NVLink between them): the first machine, drawn in full, and every other device's box.
    The other machines go into summary boxes of consecutive machines wired to the same
    fabric boxes (a scalable unit, a rack's leaves), at most SUMMARIES of them; the fabric
    into the racks view's boxes. None for one machine, or one NVLink domain across top-level
    instances (an NVL72's trays are drawn in full)."""
    top = top_levels(system)
    machines = sorted({top[g.id] for g in system.gpus if top[g.id] != g.id}, key=natural)
    if len(machines) < 2:
        return None
    if any(link.cls.startswith("nvlink") and top[link.src] != top[link.dst]
           for link in system.links):
        return None
    unit_of = _units(system)
    kind = {d.id: d.kind for d in system.devices}
    wired: dict[str, set[str]] = defaultdict(set)
    for link in system.links:
        for a, b in ((link.src, link.dst), (link.dst, link.src)):
            if kind[b] == "net_switch" and kind[a] != "net_switch":
                wired[top[a]].add(unit_of[b])
    rest = machines[1:]
    runs: list[list[str]] = []
    for m in rest:
        if runs and wired[runs[-1][-1]] == wired[m] and _stem(m) == _stem(runs[-1][-1]):
            runs[-1].append(m)
        else:
            runs.append([m])
    if len(runs) > SUMMARIES:
        per = -(-len(rest) // SUMMARIES)
        runs = [rest[i:i + per] for i in range(0, len(rest), per)]
    box = {}
    for run in runs:
        stems = {_stem(m) for m in run}
        name = run[0] if len(run) == 1 or len(stems) > 1 else \
            f"{stems.pop()}[{_index(run[0])}..{_index(run[-1])}]"
        box.update(dict.fromkeys(run, name))
    return machines[0], {d.id: box.get(top[d.id], unit_of[d.id]) for d in system.devices
                         if top[d.id] != machines[0]}


def _index(unit: str) -> int:
    return int(unit[len(_stem(unit)):])


def _folded_view(system: System, first: str, box_of: dict[str, str],
                 inside) -> tuple[list[Node], list[Edge]]:
    """The first machine in full (devices mapped through ``inside``), every other device in
    its box: machines as summary boxes with their counts in the machine's row, the fabric
    above them as Clos rows."""
    keep = [d for d in system.devices if d.id not in box_of]
    compact = len(keep) > COMPACT
    names = _switch_names(keep)
    nodes = _host_side(system, [Node(d.id, d.kind, _device_label(d, compact, names),
                                     _parent(d.id)) for d in keep])
    drawn = {inside(d.id) for d in keep}
    nodes = [n for n in nodes if n.id in drawn] + \
        [n for n in _fabrics(system)[0] if n.id in drawn]
    row = min(_tier(n) for n in nodes if n.kind != "net_switch")
    level = scaleout_levels(system)
    for n in _unit_nodes(system, box_of, per_line=2):
        if n.kind in ("netunit", "net_switch"):
            lv = max(level.get(d, 1) for d, u in box_of.items() if u == n.id)
            n = attrs.evolve(n, tier=-lv)
        else:
            n = attrs.evolve(n, tier=row)
        nodes.append(n)
    where = lambda dev: box_of.get(dev) or inside(dev)      # noqa: E731
    return nodes, _bundle(system, where)


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


def _fabrics(system: System) -> tuple[list[Node], dict[str, str]]:
    """One fabric box per NVLink switch domain, and each switch's fabric."""
    fabric_of: dict[str, str] = {}
    fabrics = []
    for members in nvlink_domains(system).values():
        prefix = common_prefix(members)
        fid = f"{prefix}.nvlink_fabric" if prefix else "nvlink_fabric"
        model = system.device(members[0]).model.name
        trays = {_parent(m) for m in members} - {prefix}
        held = f" in {len(trays)} switch trays" if len(trays) > 1 else ""
        fabrics.append(Node(fid, "fabric", f"NVLink fabric: {len(members)} x {model}{held}",
                            prefix if "." in fid else ""))
        fabric_of.update(dict.fromkeys(members, fid))
    return fabrics, fabric_of


def logical(system: System) -> tuple[list[Node], list[Edge]]:
    """NVLink switch domains collapsed into one fabric bar each; each GPU's lanes bundled.
    In a system of several machines the first machine so, the others folded into boxes."""
    fabrics, fabric_of = _fabrics(system)
    folded = machines_folded(system)
    if folded is not None:
        return _folded_view(system, *folded, lambda dev: fabric_of.get(dev, dev))
    compact = len(system.devices) > COMPACT
    names = _switch_names(system.devices)
    nodes = [Node(d.id, d.kind, _device_label(d, compact, names), _parent(d.id))
             for d in system.devices]
    nodes = [n for n in nodes if n.id not in fabric_of] + fabrics
    return _host_side(system, nodes), _bundle(system, lambda dev: fabric_of.get(dev, dev))


def _bundle(system: System, where) -> list[Edge]:
    """Links mapped through ``where`` (device -> drawn node), merged per node pair and class."""
    merged: dict[tuple, list] = {}
    for link in system.links:
        a, b = where(link.src), where(link.dst)
        if a == b:
            continue
        key = (min(a, b), max(a, b), link.cls, link.duplex) if link.duplex else \
            (a, b, link.cls, False)
        acc = merged.setdefault(key, [0, 0.0, set()])
        acc[0] += link.lanes
        acc[1] += link.bandwidth
        acc[2].add(link.type.name)
    return [Edge(k[0], k[1], k[2], lanes, bw, k[3], tuple(sorted(types)))
            for k, (lanes, bw, types) in merged.items()]


def _units(system: System) -> dict[str, str]:
    """Device id -> its box in the racks view: the top-level instance it belongs to. A top-level
    array with more than FOLD members is folded: network switches into one box, anything else
    (racks, nodes) into boxes of BLOCK consecutive members."""
    top = top_levels(system)
    members: dict[str, set[str]] = defaultdict(set)
    network_only: dict[str, bool] = defaultdict(lambda: True)
    for d in system.devices:
        stem = _stem(top[d.id])
        if stem != top[d.id]:
            members[stem].add(top[d.id])
            network_only[stem] &= d.kind == "net_switch"
    fold = {stem for stem, units in members.items() if len(units) > FOLD}

    def box(unit: str) -> str:
        stem = _stem(unit)
        if stem not in fold:
            return unit
        if network_only[stem]:
            return f"{stem}[*]"
        lo = int(unit[len(stem):]) // BLOCK * BLOCK
        return f"{stem}[{lo}..{min(lo + BLOCK, len(members[stem])) - 1}]"
    return {dev: box(unit) for dev, unit in top.items()}


def _counted(kinds: dict[str, int], per_line: int = 0) -> str:
    """'36 CPUs, 72 GPUs, 18 NVLink switches' in kind order; ``per_line`` kinds a line."""
    out = []
    for k, n in sorted(kinds.items()):
        name = kind_name(k)
        plural = name + ("es" if name.endswith(("ch", "s")) else "s")
        out.append(f"{n} {name if n == 1 else plural}")
    if per_line:
        return ",\n".join(", ".join(out[i:i + per_line]) for i in range(0, len(out), per_line))
    return ", ".join(out)


def racks_apply(system: System) -> bool:
    """The racks view applies when some top-level instance holds more than one device."""
    held: dict[str, int] = defaultdict(int)
    for unit in _units(system).values():
        held[unit] += 1
    return any(n > 1 for n in held.values())


def racks(system: System, per_line: int = 0) -> tuple[list[Node], list[Edge]]:
    """One box per top-level instance; links between boxes aggregated per class. The fabric is
    drawn as Clos rows above the racks: leaves, then spines, then cores at the top.
    ``per_line``: kinds a line in a box's count (narrow boxes), 0 for one line."""
    unit_of = _units(system)
    return _unit_nodes(system, unit_of, per_line), _bundle(system, unit_of.__getitem__)


def _unit_nodes(system: System, unit_of: dict[str, str], per_line: int = 0) -> list[Node]:
    """A box for each unit ``unit_of`` names, labelled with its name and what it holds
    (``per_line`` kinds a line: narrow boxes beside a machine drawn in full)."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    single: dict[str, str] = {}
    for d in system.devices:
        unit = unit_of.get(d.id)
        if unit is None:
            continue
        counts[unit][d.kind] += 1
        single[unit] = d.model.name if unit == d.id else ""
    level = scaleout_levels(system)
    unit_level: dict[str, int] = defaultdict(int)
    for d in system.devices:
        if d.kind == "net_switch" and d.id in unit_of:
            unit_level[unit_of[d.id]] = max(unit_level[unit_of[d.id]], level.get(d.id, 1))
    names = unique_suffixes(counts)
    nodes = []
    for unit, kinds in counts.items():
        tier = UNIT_TIER - unit_level[unit] if set(kinds) == {"net_switch"} else None
        name = names[unit]
        held = re.fullmatch(r"(.*?)\[(\d+)\.\.(\d+)\]", name)
        if held:            # 'node[1..31]: 31 nodes'
            n = int(held.group(3)) - int(held.group(2)) + 1
            name += f": {n} {_stem(parts(held.group(1))[-1])}s"
        if single[unit]:
            kind = next(iter(kinds))
            nodes.append(Node(unit, kind, f"{name}\n{single[unit]}", "", tier))
        else:
            kind = "netunit" if set(kinds) == {"net_switch"} else "unit"
            nodes.append(Node(unit, kind, f"{name}\n{_counted(kinds, per_line)}", "", tier))
    return nodes


BUILDERS = {"physical": physical, "logical": logical, "racks": racks}


def choose_view(system: System) -> tuple[str, list[Node], list[Edge]]:
    """The view to draw when none is asked for: for a node or a rack (one NVLink domain or
    none) the logical view, as vendors draw machines (switch chips as one backplane); for a
    cluster the most detailed view that stays legible, the racks view at the end."""
    if page_view(system):
        return ("logical", *logical(system))
    gpus = len(system.gpus)
    for view in ("logical",):
        nodes, edges = BUILDERS[view](system)
        if len(nodes) <= LEGIBLE_NODES and len(edges) <= LEGIBLE_EDGES and gpus <= 72:
            return view, nodes, edges
    return ("racks", *racks(system))


def page_view(system: System) -> str | None:
    """The view a pan-and-zoom page (the HTML report) draws: a machine or a rack in its logical
    view even where a slide could not hold it legibly (the page zooms), anything larger in the
    default view (None)."""
    if len(nvlink_domains(system)) <= 1 and len(system.devices) <= LEGIBLE_NODES:
        return "logical"
    return None


def _view(system: System, opts: Options):
    """The view drawn, its boxes and its lines."""
    if opts.view:
        if opts.view == "racks" and not racks_apply(system):
            raise TooLarge(f"the racks view draws one box per rack or node; {system.name} is "
                           "one machine (every top-level instance is a single device): draw "
                           "--view logical or --view physical")
        return opts.view, *BUILDERS[opts.view](system)
    return choose_view(system)


def layout_size(system: System, opts: Options) -> tuple[str, int]:
    """The view ``opts`` draws and its boxes plus lines, what Graphviz's time grows with."""
    view, nodes, edges = _view(system, opts)
    return view, len(nodes) + len(edges)


def ring_group(system: System, opts: Options):
    """The group ``opts.ring`` names: a rank list if it has digits only, else a group spec."""
    from ..compiler.ir.groups import select_group
    spec = opts.ring
    if spec and (spec[0].isdigit()):
        return select_group(system, ranks_text=spec)
    return select_group(system, spec, opts.parallel)


def box_finder(system: System, drawn: set[str]):
    """device id -> the box a view that draws ``drawn`` shows it in: itself, its folded
    machine, its NVLink fabric bar, its rack or block, or the nearest drawn box that holds it
    (None when no drawn box does). The one mapping --ring and --highlight share."""
    unit_of = _units(system)
    folded = machines_folded(system)
    box_of = folded[1] if folded is not None else {}
    fabric_of = _fabrics(system)[1]

    def box(dev: str) -> str | None:
        for candidate in (dev, box_of.get(dev), fabric_of.get(dev), unit_of.get(dev)):
            if candidate in drawn:
                return candidate
        while "." in dev:
            dev = _parent(dev)
            if dev in drawn:
                return dev
        return None
    return box


def highlight_boxes(system: System, highlight: tuple[str, ...],
                    drawn: set[str]) -> tuple[str, ...]:
    """``highlight`` with, for each id none of whose own boxes is drawn (a device or instance
    inside a folded machine, rack block or fabric bar), the boxes that draw its devices, so
    highlighting what a summary box holds outlines that box."""
    out = list(highlight)
    box = None
    for h in highlight:
        if any(n == h or n.startswith(h + ".") for n in drawn):
            continue
        box = box or box_finder(system, drawn)
        under = {box(d.id) for d in system.devices if d.id == h or d.id.startswith(h + ".")}
        out += sorted(b for b in under if b is not None and b not in out)
    return tuple(out)


def ring_hops(system: System, opts: Options, drawn: set[str],
              notes: list[str] | None = None) -> list[tuple[str, str]]:
    """Channel 0 of the group's ring as (box, next box), one per step, each GPU mapped to the
    box this view draws it in (itself, its folded machine, its rack or block, or the nearest
    drawn box that holds it); [] without --ring. Steps between GPUs of one box are left out."""
    if not opts.ring:
        return []
    from ..compiler.collectives.orders import ring_orders
    group = ring_group(system, opts)
    if len(group.ranks) < 2:        # dot_source's note says why
        return []
    order = ring_orders(system, group.ranks, 1)[0]
    drawn_box = box_finder(system, drawn)

    def box(position: int) -> str | None:
        return drawn_box(system.gpus[group.ranks[position]].id)
    hops = [(box(a), box(b)) for a, b in zip(order, order[1:] + order[:1])]
    if notes is not None and any(a is None or b is None for a, b in hops):
        notes.append(f"--ring {opts.ring}: some GPUs of the ring are in no box this view draws; "
                     "their steps are left out")
    return [(a, b) for a, b in hops if a is not None and b is not None]


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
    hold: one group's colour, or a keyed bar of the groups' colours, and the groups named
    ('dp:3', 'dp:0..7', 'dp: 12 groups')."""
    unit_of = _units(system)
    held: dict[str, set[int]] = defaultdict(set)
    tags: dict[int, str] = {}
    for gpu in system.gpus:
        if gpu.id in gpu_colors:
            color, tag = gpu_colors[gpu.id]
            index = int(tag.rpartition(":")[2])
            tags[index] = color
            held[unit_of[gpu.id]].add(index)
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
        out[n.id] = (":".join(tags[i] for i in groups), name)
    return out


def dot_source(system: System, opts: Options = Options(),
               notes: list[str] | None = None, check: bool = False) -> tuple[str, str]:
    """The DOT text for ``system`` and the view it shows, laid out as the picture is drawn
    (rows wrapped, the racks view when the default one does not fit), so that a .dot file
    is the picture the SVG/PNG shows; what the drawing cannot show goes to ``notes``. With
    ``check``, a picture still beyond MAX_SIDE or MIN_RATIO..MAX_RATIO raises ``TooLarge``
    naming the view to draw instead; without, its DOT text is returned all the same."""
    view, nodes, edges = _view(system, opts)
    page = page_pt(opts)
    nodes, plain = frame_leaves(system, nodes)
    pic = _picture(system, view, nodes, edges, opts, notes)
    if nodes != plain:      # unless the unit frames cost legibility: then the leaves in a row
        bare = _picture(system, view, plain, edges, opts, None)
        if not _fits(pic, page) or pic.titles_crossed > bare.titles_crossed:
            nodes, pic = plain, bare
    for widest in (4.0, 3.0, 2.0):          # too wide: wrap the top level's rows sooner
        if _fits(pic, page) or pic.width < pic.height:
            break
        pic = _picture(system, view, nodes, edges, opts, notes, widest)
    if not opts.view and view != "racks" and \
            not (_fits(pic, page) and slide_px(pic, page) >= SLIDE_PX) and racks_apply(system):
        # the default view out of its limits or not legible on a slide: the racks view,
        # its boxes' counts on two lines when one line makes it too wide for a slide
        for per_line in (0, 2):
            view, (nodes, edges) = "racks", racks(system, per_line)
            nodes, _ = frame_leaves(system, nodes)
            pic = _picture(system, view, nodes, edges, opts, notes)
            if slide_px(pic, page) >= SLIDE_PX:
                break
    elif opts.view == "racks" and slide_px(pic, page) < SLIDE_PX:
        # asked for by name: the same two-line counts when one line is not legible on the
        # page (a GB300 NVL72 rack with CX8 PCIe switches and BlueField-3s: 7.5 -> 10.7 px)
        framed, bare = frame_leaves(system, racks(system, 2)[0])
        # the leaves framed or in a row as chosen above
        narrow = _picture(system, view, bare if nodes == plain else framed, edges, opts, None)
        if slide_px(narrow, page) > slide_px(pic, page) and _fits(narrow, page):
            pic = narrow
    if check and not _fits(pic, page):
        instead = ("--view racks" if view != "racks" and racks_apply(system)
                   else "a smaller system (-D)")
        if pic.crossing > MAX_CROSSING * max(1, pic.lines):
            raise TooLarge(f"the {view} view would run {pic.crossing:,} of its {pic.lines:,} "
                           "lines through boxes they do not join (a legible picture has at "
                           f"most {MAX_CROSSING:.0%}). Draw {instead}, or write the DOT text "
                           "with -o FILE.dot")
        raise TooLarge(f"the {view} view would be {pic.width:,.0f} x {pic.height:,.0f} pt; a "
                       f"legible picture is at most {max(MAX_SIDE, *page):,.0f} pt on a side and between "
                       f"1:4 and 4:1. Draw {instead}, or write the DOT text with -o FILE.dot")
    if opts.view and not opts.size and notes is not None and slide_px(pic) < SLIDE_PX:
        notes.append(f"the {view} view is {pic.width * 96 / 72:,.0f} x "
                     f"{pic.height * 96 / 72:,.0f} px, its smallest text "
                     f"{slide_px(pic):.1f} px high on a 1,920 x 1,080 slide: drawn at full "
                     "size for a poster (--size WxH or --size poster fits it to a page)")
    if opts.ring and notes is not None:
        lone = lone_rank(ring_group(system, opts))
        if lone:
            notes.append(f"--ring {opts.ring}: {lone}; no ring is drawn")
    if view == "logical" and notes is not None and not nvlink_domains(system):
        notes.append("no NVLink switch domain: the logical view draws every device, as the "
                     "physical one does")
    return HEADER + pic.source, view


#: A slide, in points (1,920 x 1,080 px at Graphviz's 96 px an inch), and the least height of
#: a text on it in px: a default picture scaled down to the slide keeps its texts this high.
SLIDE_PT = (1440.0, 810.0)
SLIDE_PX = 10.0
#: Named pages for ``--size`` (px at 96 px an inch): a slide, and a poster (A0 landscape,
#: 1,189 x 841 mm, at 150 dpi).
PAGES = {"slide": (1920, 1080), "poster": (7022, 4967)}
#: The largest page ``--size`` takes, px a side (a PNG Graphviz draws past this is mostly
#: memory: 20,000 x 20,000 px is 1.6 GB of pixels).
MAX_PAGE_PX = 20_000


def parse_size(text: str) -> tuple[int, int]:
    """``--size``'s page: "WxH" in px (``7680x4320``) or a name of ``PAGES``; ValueError
    saying what is accepted otherwise."""
    named = PAGES.get(text.strip().lower())
    if named:
        return named
    m = re.fullmatch(r"\s*(\d+)\s*[xX\u00d7]\s*(\d+)\s*", text)
    if not m:
        raise ValueError(f"--size {text}: give WIDTHxHEIGHT in px (7680x4320) or one of "
                         f"{', '.join(PAGES)}")
    w, h = int(m.group(1)), int(m.group(2))
    if not (100 <= w <= MAX_PAGE_PX and 100 <= h <= MAX_PAGE_PX):
        raise ValueError(f"--size {text}: each side between 100 and {MAX_PAGE_PX:,} px")
    return w, h


def page_pt(opts: Options) -> tuple[float, float]:
    """The page the picture is for, in points: ``opts.size`` or the slide."""
    if opts.size is None:
        return SLIDE_PT
    return opts.size[0] * 72 / 96, opts.size[1] * 72 / 96


def smallest_font(source: str) -> float:
    """The smallest font size (pt) of a text the DOT text draws: boxes' 10 pt, a folded mesh's
    and a line's label 8 pt (only when some line is labelled), a keyed bar's cells."""
    sizes = [10.0]
    for line in source.splitlines():
        if line.lstrip().startswith(("edge [", "graph [", "node [")):
            continue
        sizes += [float(v) for v in re.findall(r'(?:fontsize|POINT-SIZE)="?(\d+(?:\.\d+)?)', line)]
        if " -- " in line and re.search(r'\blabel=', line) and "fontsize" not in line:
            sizes.append(8.0)
    return min(sizes)


def slide_px(pic, page: tuple[float, float] = SLIDE_PT) -> float:
    """The smallest text's height in px once the picture is scaled down to fit ``page``
    (points; a 1,920 x 1,080 slide unless --size says otherwise), never up."""
    scale = min(1.0, page[0] / max(1.0, pic.width), page[1] / max(1.0, pic.height))
    return smallest_font(pic.source) * 96 / 72 * scale


def _fits(pic, page: tuple[float, float] = SLIDE_PT) -> bool:
    """Within the size and shape limits (a poster's page lifts MAX_SIDE to its own longer
    side), and at most MAX_CROSSING of its lines through boxes they do not join."""
    ratio = pic.width / max(1.0, pic.height)
    return (max(pic.width, pic.height) <= max(MAX_SIDE, *page) and MIN_RATIO <= ratio <= MAX_RATIO
            and pic.crossing <= MAX_CROSSING * max(1, pic.lines))


def _picture(system: System, view: str, nodes, edges, opts: Options, notes,
             widest: float = 6.0):
    from .draw import picture
    colors = _group_colors(system, opts) if not opts.heat else {}
    ids = {n.id for n in nodes}
    shown = any(n in colors for n in ids)
    if opts.heat:
        from .heat import heat_colors
        colors = heat_colors(box_finder(system, ids), opts.heat)
    elif opts.parallel and not shown:
        colors = _unit_colors(system, colors, nodes)
        shown = bool(colors)
    if opts.parallel and not shown and notes is not None:
        notes.append(f"--color {opts.color}: the {view} view draws no box that holds a GPU")
    colors = {k: v for k, v in colors.items() if k in ids}
    models: dict[str, set[str]] = defaultdict(set)
    for d in system.devices:
        models[d.kind].add(d.model.name)
    if opts.highlight:
        opts = attrs.evolve(opts, highlight=highlight_boxes(system, opts.highlight, ids))
    return picture(system.name, view, nodes, edges, opts, colors,
                   ring_hops(system, opts, ids, notes), dict(models), widest,
                   len(rank_groups(system.parallel(opts.parallel), opts.color))
                   if opts.parallel and not opts.heat else 0)

def render(system: System, fmt: str = "dot", opts: Options = Options(),
           notes: list[str] | None = None) -> tuple[bytes, str]:
    """The diagram as bytes in ``fmt`` (dot, svg, png, pdf) and the view drawn; Graphviz's
    warnings and what the view cannot show are summarised in ``notes``.

    Raises ``DotMissing`` when a picture is asked for and Graphviz's ``dot`` cannot run, and
    ``TooLarge`` when the view has more than ``MAX_LAYOUT`` boxes and lines to lay out, would be
    larger than MAX_SIDE or out of shape, or does not apply to the system.
    """
    # a PNG is drawn to its page: the slide for a default picture, --size's page when given
    # (an asked-for view without --size keeps its own size, as a poster did before --size)
    fit = opts.size or (None if opts.view else PAGES["slide"])
    if opts.view == "fabric" or (not opts.view and fabric_applies(system)):
        source, view = fabric_source(system, opts, notes), "fabric"
        return _draw(source, fmt, notes, fit), view
    if fmt != "dot":
        view, size = layout_size(system, opts)
        if size > MAX_LAYOUT:
            raise TooLarge(f"the {view} view has {size:,} boxes and lines; Graphviz lays out "
                           f"at most {MAX_LAYOUT:,} in reasonable time. Draw --view racks (it "
                           "folds arrays), a smaller system (-D), or write the DOT text with "
                           "-o FILE.dot")
    source, view = dot_source(system, opts, notes, check=fmt != "dot")
    return _draw(source, fmt, notes, fit), view


def fabric_applies(system: System) -> bool:
    """The fabric view is the default for a system of several machines on a scale-out
    network (a multi-node or multi-rack cluster): it stays slide-sized at any size, and its
    lines never run along each other (docs/render.md)."""
    from .fabric import NotApplicable, build
    try:
        build(system)
    except NotApplicable:
        return False
    return True


def fabric_source(system: System, opts: Options, notes: list[str] | None = None) -> str:
    """The fabric view's DOT text with the overlays ``opts`` asks for."""
    from .fabric import NotApplicable, draw
    ring = None
    if opts.ring:
        from ..compiler.collectives.orders import ring_orders
        group = ring_group(system, opts)
        lone = lone_rank(group)
        if lone:
            if notes is not None:
                notes.append(f"--ring {opts.ring}: {lone}; no ring is drawn")
        else:
            order = ring_orders(system, group.ranks, 1)[0]
            ring = [system.gpus[group.ranks[k]].id for k in order]
    colors = _group_colors(system, opts)
    try:
        drawing = draw(system, opts, colors, ring)
    except NotApplicable as exc:
        raise TooLarge(str(exc)) from None
    if ring and not drawing.steps and notes is not None:
        notes.append(f"--ring {opts.ring}: every GPU of the ring is in one box of the fabric "
                     "view, so it has no step between boxes; no ring is drawn (--view racks "
                     "or logical draws its steps)")
    if opts.parallel and notes is not None and not colors:
        notes.append(f"--color {opts.color}: the fabric view draws no box that holds a GPU")
    return HEADER + drawing.source


def _draw(source: str, fmt: str, notes: list[str] | None,
          fit: tuple[int, int] | None = None) -> bytes:
    """``source`` (positions set) drawn by Graphviz in ``fmt``, or itself for dot; a PNG
    scaled down to fit ``fit`` px (never up: Graphviz's ``size`` without ``!``)."""
    if fmt == "dot":
        return source.encode("utf-8")
    dot = shutil.which("dot")
    if dot is None:
        raise DotMissing(f"Graphviz's 'dot' program is needed for .{fmt} output; install it "
                         "with 'apt-get install graphviz' (or your system's package manager), "
                         "or write a .dot file")
    # topoc placed every box and line; neato -n2 keeps them and only draws.
    size = [f"-Gsize={fit[0] / 96:.4f},{fit[1] / 96:.4f}"] if fit and fmt == "png" else []
    done = subprocess.run([dot, "-Kneato", "-n2", f"-T{fmt}", *size],
                          input=source.encode("utf-8"),
                          capture_output=True, check=False)
    warnings = [ln for ln in done.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    if done.returncode != 0:
        raise DotMissing(f"Graphviz's dot failed: {warnings[-1] if warnings else done.returncode}")
    if warnings and notes is not None:
        notes.append(f"Graphviz reported {len(warnings)} layout warning"
                     f"{'s' if len(warnings) > 1 else ''} (some lines may be drawn oddly), "
                     f"e.g. {warnings[0][:160]}")
    return done.stdout


