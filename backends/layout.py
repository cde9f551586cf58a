"""Positions for ``topoc render``: the hierarchy laid out in declaration order.

Graphviz's ``dot`` orders boxes by crossing minimisation, which scatters gpu0..7 and racks 0..7;
a person reads a diagram in index order. So topoc places every box itself and Graphviz (``neato
-n2``) only routes the lines between them:

- a cluster (tray, node, rack) stacks its contents in rows by tier, from the host down: CPUs,
  PCIe switches, GPUs and NICs, NVLink switches, the network; each row in index order (gpu2
  before gpu10), wrapped into a grid when it would make the picture too wide;
- a cluster holding GPU units and switch units is drawn as the NVL72 is built: the GPU trays in
  two stacks, the larger above, the switch trays between them;
- the wrap width is chosen per cluster so its aspect ratio stays near ``TARGET`` and between
  1:3 and 3:1 wherever the contents allow.

Coordinates are Graphviz points, y growing upwards (the first row is at the top).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Sequence

import attrs

#: Width over height aimed at, and the limits kept where possible.
TARGET = 1.6
MIN_ASPECT, MAX_ASPECT = 1 / 4, 4.0
GAP_X, GAP_Y = 18.0, 60.0           # between boxes in a row, between rows (room for labels)
PAD, TITLE = 12.0, 22.0             # inside a cluster's frame, and its label above
CHAR_W, LINE_H = 6.2, 13.0          # Helvetica 10 pt


@attrs.frozen
class Item:
    """A box to place: a device or unit (``cluster`` False) or a laid-out cluster."""

    id: str
    tier: int
    width: float
    height: float
    cluster: bool = False
    gpus: bool = False          # holds GPUs (a compute unit), for the switch sandwich
    top: bool = False           # aligned to the top of its row (a summary box beside a machine)
    anchor: str | None = None   # drawn just after this sibling, in its row (a NIC by its switch)
    pad: tuple[float, float] = (0.0, 0.0)   # empty points before and after it in its row


@attrs.define
class Placed:
    """A laid-out cluster: its size and the offsets of what it contains."""

    width: float
    height: float
    nodes: dict[str, tuple[float, float]]        # centre, relative to the top-left corner
    clusters: dict[str, tuple[float, float, float, float]]   # x0, y0 (top), x1, y1 (bottom)
    ragged: bool = False        # some wrapped row is shorter than the one above it
    lower: tuple[str, ...] = () # clusters drawn upside down (the compute trays below a spine)
    rows: int = 0               # rows of boxes: each wrap adds lines through boxes


def box_size(label: str) -> tuple[float, float]:
    """Width and height in points of a box with this label (Helvetica 10, Graphviz margins)."""
    lines = label.split("\n")
    return max(54.0, max(len(s) for s in lines) * CHAR_W + 20), max(36.0, len(lines) * LINE_H + 14)


_PART = re.compile(r"[^.\[]+(?:\[[^\]]*\])?")
#: An array element's stem and index: the first number of a folded range (rack[32..63]), else
#: the number that ends the name (gpu2, and cx8sw3: a stem may hold digits, as ConnectX-8's)
#: (a name with a number inside and none at its end keeps the first: 'rack0 leaves', rack 0)
_INDEX = re.compile(r"^(.*?)\[(\d+)|^(.*?)(\d+)$|^(\D*?)(\d+)")


def _indexed(part: str) -> tuple[str, int] | None:
    m = _INDEX.match(part)
    if m is None:
        return None
    stem, number = next((m.group(i), m.group(i + 1)) for i in (1, 3, 5) if m.group(i + 1))
    return stem, int(number)


def parts(path: str) -> list[str]:
    """A path's parts, dots inside a folded range kept: 'pod.rack[0..31]' -> pod, rack[0..31]."""
    return _PART.findall(path)


def natural(name: str) -> tuple:
    """Sort key for a path: each part's stem, then its first number (tray2 before tray10,
    rack[32..63] before rack[128..159])."""
    out = []
    for part in parts(name):
        found = _indexed(part)
        out.append(found if found else (part, -1))
    return tuple(out)


def stem(name: str) -> str:
    """An array element's name without its index: 'rack12' -> 'rack'."""
    return name.rstrip("0123456789")


def top_level(system_name: str, device_id: str) -> str:
    """The top-level instance holding ``device_id``: 'sys.rack3.tray0.gpu1' -> 'sys.rack3'."""
    prefix = system_name + "."
    return prefix + device_id[len(prefix):].split(".", 1)[0]


def top_levels(system) -> dict[str, str]:
    """Device id -> its top-level instance (``top_level``), for every device."""
    return {d.id: top_level(system.name, d.id) for d in system.devices}


def _stem(item_id: str) -> str:
    last = parts(item_id)[-1] if item_id else ""
    found = _indexed(last)
    return found[0] if found else last


def _balanced(members: list[Item], wrap: int) -> list[list[Item]]:
    """``members`` in rows of at most ``wrap``, as even as possible (8 at 7 -> 4 + 4)."""
    lines = -(-len(members) // wrap)
    per = -(-len(members) // lines)
    return [members[i:i + per] for i in range(0, len(members), per)]


def _groups(items: Sequence[Item]) -> list[list[Item]]:
    """Items by tier and, inside a tier, by name (gpus, then nics), each in index order."""
    groups: dict[tuple[int, str], list[Item]] = defaultdict(list)
    for it in items:
        groups[it.tier, _stem(it.anchor or it.id)].append(it)
    return [_sorted(groups[k]) for k in sorted(groups)]


def _order(it: Item, before: frozenset = frozenset()) -> tuple:
    """Index order; an anchored item next to its anchor (after it, or before it when it is in
    the first half of the items anchored there)."""
    if it.anchor:
        return (natural(it.anchor), -1 if it.id in before else 1, natural(it.id))
    return (natural(it.id), 0, ())


def _sorted(group: list[Item]) -> list[Item]:
    """A group in index order, the items anchored to one box split around it (nic0 pcie0
    nic1), so a line from the box to each is short and passes no other box."""
    at: dict[str, list[Item]] = defaultdict(list)
    for it in group:
        if it.anchor:
            at[it.anchor].append(it)
    before = frozenset(it.id for items in at.values() if len(items) > 1
                       for it in sorted(items, key=lambda i: natural(i.id))[:len(items) // 2])
    return sorted(group, key=lambda it: _order(it, before))


def _per_row(group: list[Item], width: float) -> int:
    """How many of ``group`` fit side by side in ``width`` (its widest ones side by side: a
    machine drawn in full and the summary boxes of the others fit in one row)."""
    widths = sorted((it.width for it in group), reverse=True)
    used, n = -GAP_X, 0
    for w in widths:
        if used + GAP_X + w > width + 0.01:
            break
        used += GAP_X + w
        n += 1
    return max(1, n)


def _rows(items: Sequence[Item], width: float) -> list[list[Item]]:
    """Every group wrapped into even rows no wider than ``width`` (or one item, if wider);
    a row of switches with their NICs beside them that would wrap, or whose next group has
    one box a switch, is drawn as blocks instead (``_blocks``), and that group (the GPUs)
    in the blocks' columns."""
    out: list[list[Item]] = []
    groups = _groups(items)
    columns = None
    for k, g in enumerate(groups):
        if columns is not None and len(g) == sum(len(c) for c in columns[1]):
            out += _in_columns(_sorted(g), *columns)
            columns = None
            continue
        columns = None
        blocks = _blocks(g)
        # blocks when the row would wrap, or when the next group has one box a switch
        # (a GPU each: under its switch, not in a row of its own far narrower)
        if blocks and (_per_row(g, width) < len(g) or
                       k + 1 < len(groups) and len(groups[k + 1]) == len(blocks)):
            rows, columns = _block_rows(blocks, width)
            out += rows
            continue
        out += _balanced(g, _per_row(g, width))
    return out


#: NICs a row of a switch's block (two: a block no wider than two NICs side by side).
BLOCK_COLS = 2


def _blocks(group: list[Item]) -> list[tuple[Item, list[Item]]] | None:
    """(switch, its NICs) in index order when ``group`` is switches each with two or more
    NICs anchored to it and nothing else (AWS p5's PCIe switches, four EFAs each), else
    None."""
    anchored: dict[str, list[Item]] = defaultdict(list)
    for it in group:
        if it.anchor:
            anchored[it.anchor].append(it)
    own = [it for it in group if not it.anchor]
    if not own or any(len(anchored.get(it.id, ())) < 2 for it in own) or \
            len(own) + sum(len(v) for v in anchored.values()) != len(group):
        return None
    own.sort(key=lambda it: natural(it.id))
    return [(it, sorted(anchored[it.id], key=lambda i: natural(i.id))) for it in own]


def _block_width(blocks: list[tuple[Item, list[Item]]]) -> float:
    nic = max(it.width for _sw, nics in blocks for it in nics)
    return max(max(sw.width for sw, _ in blocks), BLOCK_COLS * nic + (BLOCK_COLS - 1) * GAP_X)


def _padded(cells: list[list[Item]], slot: float) -> list[Item]:
    """One row of cells side by side, each centred in a slot ``slot`` wide (empty points
    before its first item and after its last)."""
    row = []
    for cell in cells:
        used = sum(it.width for it in cell) + GAP_X * (len(cell) - 1) if cell else 0.0
        side = (slot - used) / 2
        if not cell:        # an empty cell: its slot kept by the next one's padding
            continue
        for j, it in enumerate(cell):
            row.append(attrs.evolve(it, pad=(side if j == 0 else 0.0,
                                             side if j == len(cell) - 1 else 0.0)))
    return row


def _block_rows(blocks: list[tuple[Item, list[Item]]], width: float) \
        -> tuple[list[list[Item]], tuple[float, list[list[Item]]]]:
    """Each switch with its NICs in a block: the NICs BLOCK_COLS a row above the switch,
    the switch under them, blocks side by side in the columns of a grid as wide as
    ``width`` allows (AWS p5: EFAs 0-3 in two rows of two over PCIe switch 0, each GPU then
    under its switch, where one row of NICs and switches beside each other wrapped into
    two and each switch's GPU stood under another switch's). The rows, and (the slot
    width, the switches by grid row) for the group drawn in the same columns."""
    slot = _block_width(blocks)
    per = max(1, int((width + GAP_X + 0.01) // (slot + GAP_X)))
    out: list[list[Item]] = []
    grid: list[list[Item]] = []
    for line in _balanced_pairs(blocks, per):
        depth = max(-(-len(nics) // BLOCK_COLS) for _sw, nics in line)
        for r in range(depth):
            out.append(_padded([nics[r * BLOCK_COLS:(r + 1) * BLOCK_COLS] for _sw, nics in line],
                               slot))
        out.append(_padded([[sw] for sw, _nics in line], slot))
        grid.append([sw for sw, _nics in line])
    return [r for r in out if r], (slot, grid)


def _balanced_pairs(blocks: list, wrap: int) -> list[list]:
    lines = -(-len(blocks) // wrap)
    per = -(-len(blocks) // lines)
    return [blocks[i:i + per] for i in range(0, len(blocks), per)]


def _in_columns(group: list[Item], slot: float, grid: list[list[Item]]) -> list[list[Item]]:
    """``group`` (as many as the blocks above: a GPU a switch) in the blocks' columns, one
    under each block, in index order."""
    out, i = [], 0
    for line in grid:
        out.append(_padded([[it] for it in group[i:i + len(line)]], slot))
        i += len(line)
    return out


def _sandwich(items: Sequence[Item]) -> list[list[Item]] | None:
    """GPU units above and below what switches them (the NVL72's build: 10 compute trays, the
    9 NVLink switch trays, 8 compute trays), when a cluster holds just those: two or more units
    with GPUs, and NVLink switch units, switch boxes or a fabric (tier 4) between them."""
    compute = sorted((it for it in items if it.cluster and it.gpus), key=lambda it: natural(it.id))
    middle = [it for it in items if not (it.cluster and it.gpus)]
    if len(compute) < 2 or not middle or any(it.tier != 4 for it in middle):
        return None
    upper = (len(compute) + 2) // 2
    return [compute[:upper], *_rows(middle, sum(it.width + GAP_X for it in middle)),
            compute[upper:]]


def _arrange(rows: list[list[Item]]) -> Placed:
    """Rows top to bottom, each centred in the widest."""
    rows = [r for r in rows if r]
    widths = [sum(it.width + it.pad[0] + it.pad[1] for it in r) + GAP_X * (len(r) - 1)
              for r in rows]
    inner_w = max(widths, default=0.0)
    nodes: dict[str, tuple[float, float]] = {}
    clusters: dict[str, tuple[float, float, float, float]] = {}
    y = 0.0
    for row, w in zip(rows, widths):
        height = max(it.height for it in row)
        x = (inner_w - w) / 2
        for it in row:
            x += it.pad[0]
            top = y if it.top else y + (height - it.height) / 2
            if it.cluster:
                clusters[it.id] = (x, top, x + it.width, top + it.height)
            else:
                nodes[it.id] = (x + it.width / 2, top + it.height / 2)
            x += it.width + it.pad[1] + GAP_X
        y += height + GAP_Y
    ragged = any(len(b) < len(a) and _stem(a[0].id) == _stem(b[0].id) and a[0].tier == b[0].tier
                 for a, b in zip(rows, rows[1:]))
    return Placed(inner_w, max(0.0, y - GAP_Y), nodes, clusters, ragged, rows=len(rows))


def _aspect(p: Placed, framed: bool) -> float:
    extra_w, extra_h = (2 * PAD, 2 * PAD + TITLE) if framed else (0.0, 0.0)
    return (p.width + extra_w) / max(1.0, p.height + extra_h)


def _best(items: Sequence[Item], framed: bool, widest: float = 6.0) -> Placed:
    """The wrap width whose aspect is nearest TARGET, preferring ones within
    MIN_ASPECT..MAX_ASPECT, then the smaller area."""
    groups = _groups(items)
    main = max(groups, key=len)
    unit = max(it.width for it in main)
    sandwich = _sandwich(items)
    if sandwich is not None:        # each part in one row, the lower one upside down (its
        placed = _arrange(sandwich)  # GPUs face the switches as theirs above do)
        placed.lower = tuple(it.id for it in sandwich[-1])
        if _aspect(placed, framed) <= (MAX_ASPECT if framed else widest):
            return placed
        # too wide (trays with their NICs' PCIe switches and DPUs beside them): the upper
        # and the lower part in two rows each, the lower ones upside down
        upper, *middle, lower = sandwich
        half_u, half_l = (len(upper) + 1) // 2, (len(lower) + 1) // 2
        split = _arrange([upper[:half_u], upper[half_u:], *middle, lower[:half_l],
                          lower[half_l:]])
        split.lower = placed.lower
        return split if _aspect(split, framed) < _aspect(placed, framed) else placed
    else:                           # the largest group w wide, the others fitted to that width
        widths = {w * unit + (w - 1) * GAP_X for w in {*range(1, min(len(main), 64) + 1),
                                                        len(main)}}
        widths |= {sum(it.width + GAP_X for it in g) - GAP_X for g in groups}   # a row each
        options = [_arrange(_rows(items, w)) for w in sorted(widths)]

    def score(p: Placed) -> tuple:
        a = _aspect(p, framed)
        # the whole picture goes below its legend and title when wide: room for a wider top
        inside = MIN_ASPECT <= a <= (MAX_ASPECT if framed else widest)
        return (not inside, p.ragged, p.rows, abs(math.log(a / TARGET)), p.width * p.height)
    return min(options, key=score)


def layout(nodes: Sequence, root: str, size: Callable[[object], tuple[float, float]],
           tier: Callable[[object], int], widest: float = 6.0) -> tuple[dict[str, tuple[float, float]],
                                                   dict[str, tuple[float, float, float, float]],
                                                   tuple[float, float], frozenset[str]]:
    """Positions of ``nodes`` (with ``id``, ``kind``, ``cluster`` and optionally ``anchor``),
    bounding boxes of their clusters, the drawing's width and height, all in points with y
    upwards, and the clusters drawn upside down (title at the bottom). ``root`` is the cluster
    drawn without a frame (the system); ``widest`` bounds the top level's width over height
    (wider than a cluster's: the legend goes below a wide picture)."""
    by_cluster: dict[str, list] = defaultdict(list)
    for n in nodes:
        by_cluster[n.cluster if n.cluster != root else ""].append(n)
    clusters: set[str] = set()
    for c in by_cluster:
        while c and c != root:
            clusters.add(c)
            c = c.rpartition(".")[0]
    children: dict[str, list[str]] = defaultdict(list)
    for c in clusters:
        parent = c.rpartition(".")[0]
        children[parent if parent in clusters else ""].append(c)
    has_gpu: dict[str, bool] = {}
    under: dict[str, list] = defaultdict(list)       # every node inside a cluster, at any depth
    for n in nodes:
        c = n.cluster
        while c and c != root:
            under[c].append(n)
            c = c.rpartition(".")[0]

    mirrored: dict[str, object] = {}

    def place(cluster: str) -> Placed:
        """Lay out one cluster's contents (its sub-clusters first, recursively)."""
        items = [Item(n.id, tier(n), *size(n), anchor=getattr(n, "anchor", None),
                      top=n.kind == "unit" and bool(children.get(cluster)))
                 for n in by_cluster.get(cluster, ())]
        inner: dict[str, Placed] = {}
        gpu_here = any(n.kind == "gpu" for n in by_cluster.get(cluster, ()))
        for c in children.get(cluster, ()):
            inner[c] = place(c)
            gpu_here |= has_gpu[c]
            items.append(Item(c, min(tier(n) for n in under[c]), inner[c].width + 2 * PAD,
                              inner[c].height + 2 * PAD + TITLE, True, has_gpu[c]))
        has_gpu[cluster] = gpu_here
        mine = by_cluster.get(cluster, ())
        if cluster and mine and not children.get(cluster) and \
                all(n.kind == "net_switch" for n in mine):
            placed = _arrange(_rows(items, math.inf))   # a unit's leaves: one row, by rail
        else:
            # a machine drawn in full beside its cluster's summary boxes may be as wide as the
            # picture (its NICs in one row rather than wrapped under each other)
            machine = bool(cluster) and cluster.count(".") == root.count(".") + 1 and \
                any(n.kind == "unit" for n in by_cluster.get("", ()))
            placed = _best(items, framed=bool(cluster) and not machine, widest=widest)
        # Nest: a child's contents move into its frame (mirrored for a lower sandwich part).
        for c, (x0, y0, x1, y1) in list(placed.clusters.items()):
            sub = inner[c]
            ox, oy = x0 + PAD + (x1 - x0 - 2 * PAD - sub.width) / 2, y0 + PAD + TITLE
            h = sub.height
            if c in placed.lower:
                mirrored.update(sub.clusters)
                flip = lambda y: h - y      # noqa: E731
            else:
                flip = lambda y: y          # noqa: E731
            for nid, (x, y) in sub.nodes.items():
                placed.nodes[nid] = (x + ox, flip(y) + oy)
            for cid, (a, b, c2, d) in sub.clusters.items():
                b, d = sorted((flip(b), flip(d)))
                placed.clusters[cid] = (a + ox, b + oy, c2 + ox, d + oy)
        return placed

    top = place("")
    height = top.height
    flip = lambda y: height - y       # noqa: E731 - Graphviz's y grows upwards
    pos = {nid: (x, flip(y)) for nid, (x, y) in top.nodes.items()}
    boxes = {cid: (x0, flip(y1), x1, flip(y0)) for cid, (x0, y0, x1, y1) in top.clusters.items()}
    return pos, boxes, (top.width, height), frozenset(mirrored)
