"""The fabric view of ``topoc render``: a cluster's scale-out network as network architects
draw a Clos or rail-optimised fabric (NVIDIA's SuperPOD reference architectures): tiers as
rows, cores at the top, then spines, then each pod's leaves with its racks or nodes right
under them; the cables between a pod's machines and its leaves as one coloured line per rail;
identical pods and switch groups folded into one drawn box with "x N", the exceptions drawn.

What makes it scale: it reads the scale-out links' integer arrays (no Link objects), so a
picture of 8,192 NVL72 racks costs the NICs and switches, never the NVLink millions; and it
draws at most a few boxes a tier, so the picture stays slide-sized at any size.

Geometry by construction: every line runs straight between two rows, from a port of its
own on the lower box's top edge to a port of its own on the upper box's bottom edge, ports
ordered along each edge by where the other end is; two lines with no box in common never
share both ends, so they cross at most once and never run along each other.
"""

from __future__ import annotations

import math
from collections import defaultdict

import attrs

from ..compiler.ir.incidence import arrays_in
from ..compiler.ir.summary import level_array
from ..compiler.ir.system import SCALEOUT_CLASSES, System
from .layout import natural, parts, top_level
from .style import CLASS_COLOR, PALETTE, RING_COLOR, Options, penwidth, text_color

#: Label sizes (pt): a drawn box's text, a line's figure, the title. At 96 px an inch and a
#: picture within SLIDE_PT, the smallest is 10 pt = 13 px on a 1,920 x 1,080 slide.
FONT, LINE_FONT, TITLE_FONT = 12, 10, 20
#: The picture's budget in points: 1,920 x 1,080 px at Graphviz's 96 px an inch.
SLIDE_PT = (1440.0, 810.0)
#: A tier with more groups than this folds identical ones into one box with "x N".
COLUMNS = 8
#: Rails drawn as separate lines between a pod's machines and its leaves (more: one line).
RAILS = 16
ROW_GAP = 150.0
GAP = 28.0
CHAR_W = 0.6 * FONT


class NotApplicable(ValueError):
    """The system has no scale-out network to draw."""


@attrs.frozen
class Box:
    """A drawn box: a pod's machines, a pod's leaves or a group of switches, folded ``times``."""

    id: str
    row: int                        # 0: machines, 1: leaves, 2: spines, ...
    label: str
    members: tuple[int, ...]        # device indices (switches) or unit numbers (machines)
    times: int = 1


@attrs.frozen
class Line:
    """Cables between two boxes: how many, their bandwidth per direction in all, the rail
    (-1: no rail) and the link class."""

    low: str
    high: str
    cables: int
    bandwidth: float
    rail: int
    cls: str
    types: tuple[str, ...] = ()


@attrs.frozen
class Drawing:
    """The fabric view's DOT text, size in points, and each device-holding box's id."""

    source: str
    width: float
    height: float
    boxes: tuple[str, ...]
    steps: int = 0          # ring steps drawn between boxes


def _rate(bw: float) -> str:
    for unit, scale in (("PB/s", 1e15), ("TB/s", 1e12), ("GB/s", 1e9)):
        if bw >= scale:
            return f"{bw / scale:.3g} {unit}"
    return f"{bw / 1e6:.3g} MB/s"


def _span(names: list[str]) -> str:
    """'node[0..31]' for consecutive members of one array, else the first .. the last."""
    if len(names) == 1:
        return names[0]
    keys = [natural(n)[-1] for n in names]
    if len({k[0] for k in keys}) == 1 and \
            [k[1] for k in keys] == list(range(keys[0][1], keys[0][1] + len(keys))):
        return f"{keys[0][0]}[{keys[0][1]}..{keys[-1][1]}]"
    return f"{names[0]} .. {names[-1]}"


def _plural(word: str, n: int) -> str:
    return f"{n} {word}" + ("" if n == 1 else "es" if word.endswith(("ch", "s")) else "s")


class _Model:
    """The fabric read from the scale-out link arrays: units (machines), pods (machines and
    the leaves they hang from), switch groups per tier and the cables between them."""

    def __init__(self, system: System):
        import numpy as np
        a, b, bw = arrays_in(system, SCALEOUT_CLASSES)
        if not len(a):
            raise NotApplicable(f"the fabric view draws the scale-out network; {system.name} "
                                "has no InfiniBand or Ethernet links: draw --view logical")
        level = level_array(system)
        swap = level[a] > level[b]
        small = np.int32 if len(system.devices) < 2**31 else np.int64
        lo, hi = np.where(swap, b, a).astype(small), np.where(swap, a, b).astype(small)
        self.system, self.devices = system, system.devices
        self.level, self.lo, self.hi, self.bw = level, lo, hi, bw
        cls = system.ends
        codes = cls.arrays(lambda t: t.cls in SCALEOUT_CLASSES, ("type",))[0]
        self.cls = [cls.types[c].cls for c in np.unique(codes).tolist()][0]
        self.type_names = [cls.types[c].name for c in range(len(cls.types))]
        self.codes = codes
        # machines: the top-level instances of the endpoints (level 0)
        ends = np.unique(lo[level[lo] == 0]).tolist()
        name = system.name
        tops = [top_level(name, self.devices[i].id) for i in ends]
        unit_names = sorted(set(tops), key=natural)
        if len(unit_names) < 2:
            raise NotApplicable(f"the fabric view draws a fabric between machines; "
                                f"{name} is one machine: draw --view logical")
        self.unit_names = unit_names
        number = {u: k for k, u in enumerate(unit_names)}
        numbers = [number[t] for t in tops]
        del tops            # 590,000 NICs' names at 8,192 NVL72 racks: not kept
        #: device index -> its machine's number (-1 for a switch or a device off the network)
        self.unit_arr = np.full(len(self.devices), -1, dtype=np.int64)
        self.unit_arr[ends] = numbers
        self.top = max(level[hi].tolist()) if len(hi) else 1
        self.nic_count = dict(enumerate(np.bincount(numbers, minlength=len(unit_names))
                                        .tolist()))
        del ends, numbers
        self.gpu_count: dict[str, int] = defaultdict(int)
        for g in system.gpus:
            self.gpu_count[top_level(name, g.id)] += 1

    def pods(self) -> list[tuple[list[int], list[int]]]:
        """(machines, leaves) of each connected piece of the machine-leaf cabling, in the
        order of their first machine; leaves in id order. Found in numpy: each machine and
        leaf takes the least machine number it reaches, spread over the cables and jumped
        along (label[label]) until nothing changes, so the rounds grow with the log of a
        piece's length (262,144 cables of 32,768 DGX nodes: a few rounds, no Python loop
        over the cables)."""
        import numpy as np
        level, lo, hi = self.level, self.lo, self.hi
        first = (level[lo] == 0) & (level[hi] == 1)
        n = len(self.devices)
        pairs = np.unique(self.unit_arr[lo[first]] * n + hi[first])    # machine-leaf, once
        u, j = pairs // n, pairs % n
        leaves, jl = np.unique(j, return_inverse=True)
        count = len(self.unit_names)
        label = np.arange(count)
        while True:
            at_leaf = np.full(len(leaves), count)
            np.minimum.at(at_leaf, jl, label[u])
            new = label.copy()
            np.minimum.at(new, u, at_leaf[jl])
            new = new[new]                      # jump: a machine takes its label's label
            if np.array_equal(new, label):
                break
            label = new
        at_leaf = np.full(len(leaves), count)
        np.minimum.at(at_leaf, jl, label[u])
        machines: dict[int, list[int]] = defaultdict(list)
        for k, c in enumerate(label.tolist()):
            machines[c].append(k)
        switches: dict[int, list[int]] = defaultdict(list)
        for s, c in zip(leaves.tolist(), at_leaf.tolist()):
            switches[c].append(s)
        out = [(m, sorted(switches.get(c, []), key=lambda d: natural(self.devices[d].id)))
               for c, m in machines.items()]
        return sorted(out, key=lambda p: p[0][0] if p[0] else len(self.unit_names))


def _fold(groups: list[tuple[tuple, list]]) -> list[tuple[list, int]]:
    """Groups (signature, members) folded when there are more than COLUMNS: identical ones
    (same signature) into one, listed in the order of their first; else as they are."""
    if len(groups) <= COLUMNS:
        return [([g], 1) for _, g in groups]
    folded: dict[tuple, list] = {}
    for sig, g in groups:
        folded.setdefault(sig, []).append(g)
    return [(gs, len(gs)) for gs in folded.values()]


def build(system: System) -> tuple[list[Box], list[Line], dict]:
    """The boxes and lines of the fabric view, and a map from a box id to the machine numbers
    or switch indices it stands for (what overlays look up); kept per system."""
    found = system.memo.get("fabric_view")
    if found is None:
        found = system.memo["fabric_view"] = _build(system)
    return found


def _build(system: System) -> tuple[list[Box], list[Line], dict]:
    import numpy as np
    m = _Model(system)
    devices, level, lo, hi, bw = m.devices, m.level, m.lo, m.hi, m.bw
    pods = m.pods()
    # each pod's signature: its machines' and leaves' counts, the leaves' model, cables a
    # rail and up; identical pods fold
    box_of_switch: dict[int, str] = {}
    box_of_unit: dict[int, str] = {}
    boxes: list[Box] = []
    n = len(devices)
    leaf_rail = np.full(n, -1, dtype=np.int64)         # a leaf's place in its pod: its rail
    pod_of_leaf = np.full(n, -1, dtype=np.int64)
    pod_of_unit = np.full(len(m.unit_names), -1, dtype=np.int64)
    for p, (units, leaves) in enumerate(pods):
        leaf_rail[leaves] = np.arange(len(leaves))
        pod_of_leaf[leaves] = p
        pod_of_unit[units] = p
    first = (level[lo] == 0) & (level[hi] == 1)
    width = max(1, max(len(leaves) for _, leaves in pods))
    keys, counts = np.unique(pod_of_unit[m.unit_arr[lo[first]]] * width + leaf_rail[hi[first]],
                             return_counts=True)
    rail_cables: dict[int, dict[int, int]] = defaultdict(dict)
    for k, c in zip(keys.tolist(), counts.tolist()):
        rail_cables[k // width][k % width] = c
    up = level[hi] > level[lo]
    ups = pod_of_leaf[lo[(level[lo] == 1) & up]]
    up_count = dict(enumerate(np.bincount(ups[ups >= 0], minlength=len(pods)).tolist()))
    sigs = []
    for p, (units, leaves) in enumerate(pods):
        rails = tuple(rail_cables[p].get(r, 0) for r in range(len(leaves))) \
            if rail_cables[p] else ()
        models = tuple(sorted({devices[s].model.name for s in leaves}))
        sigs.append(((len(units), len(leaves), models, rails, up_count.get(p, 0)), p))
    for gs, times in _fold(sigs):
        ps = gs
        units = [u for p in ps for u in pods[p][0]]
        leaves = [s for p in ps for s in pods[p][1]]
        one_units, one_leaves = pods[ps[0]]
        tag = f"pod{ps[0]}" if times == 1 else f"pod{ps[0]}x{times}"
        names = [m.unit_names[u] for u in units]
        word = _stem_word(names[0])
        each = f"\nx {times}: {_plural(word, len(one_units))} a pod" \
            if times > 1 and len(one_units) > 1 else ""
        held = _held(m, units[0])
        unit_label = _span([parts(n)[-1] for n in names]) + \
            (f"\n{_plural(word, len(units))}{each}" if len(units) > 1 else "") + \
            (f"\n{held}" + (" each" if len(units) > 1 else "") if held else "")
        models = sorted({devices[s].model.name for s in one_leaves})
        leaf_label = (f"{_plural('leaf', len(one_leaves)).replace('leafs', 'leaves')}"
                      f"\n{', '.join(models)}"
                      + (f"\nx {times}: one set a {'pod' if len(one_units) > 1 else word}"
                         if times > 1 else ""))
        boxes.append(Box(f"{tag}.machines", 0, unit_label, tuple(units), times))
        if leaves:
            boxes.append(Box(f"{tag}.leaves", 1, leaf_label, tuple(leaves), times))
        for u in units:
            box_of_unit[u] = f"{tag}.machines"
        for s in leaves:
            box_of_switch[s] = f"{tag}.leaves"
    # higher tiers: switches grouped by the boxes below them and their top-level instance
    # (a plane, a pod's spines), then folded when a tier has more groups than COLUMNS
    name = system.name
    for k in range(2, m.top + 1):
        at = np.unique(np.concatenate((hi[level[hi] == k], lo[level[lo] == k]))).tolist()
        below: dict[int, set[str]] = defaultdict(set)
        cables_up: dict[int, int] = defaultdict(int)
        step = (level[hi] == k) & (level[lo] == k - 1)
        code = _codes(box_of_switch, boxes, n)
        pairs = np.unique(hi[step] * (len(boxes) + 1) + code[lo[step]] + 1)  # switch, box below
        for j, c in zip((pairs // (len(boxes) + 1)).tolist(),
                        (pairs % (len(boxes) + 1) - 1).tolist()):
            if c >= 0:
                below[j].add(boxes[c].id)
        ups_k = lo[(level[lo] == k) & up]
        for i, c in zip(*(x.tolist() for x in np.unique(ups_k, return_counts=True))):
            cables_up[i] = c
        groups: dict[tuple, list[int]] = defaultdict(list)
        for s in at:
            inst = top_level(name, devices[s].id)
            groups[(tuple(sorted(below[s])), inst if inst != devices[s].id else "")].append(s)
        if all(len(g) == 1 for g in groups.values()):   # one switch an instance: by array
            regrouped: dict[tuple, list[int]] = defaultdict(list)
            for (under, inst), g in groups.items():
                regrouped[under, natural(inst)[-1][0] if inst else ""] += g
            groups = regrouped
        ordered = sorted(groups.values(), key=lambda g: natural(devices[g[0]].id))
        sigs = [((len(g), tuple(sorted({devices[s].model.name for s in g})),
                  sum(cables_up[s] for s in g), len(below[g[0]])), g) for g in ordered]
        tier = "spine" if k == 2 else "core" if k == m.top else "super-spine"
        for gs, times in _fold(sigs):
            members = [s for g in gs for s in g]
            one = gs[0]
            insts = sorted({top_level(name, devices[s].id) for s in one}, key=natural)
            if len(insts) == 1 and insts[0] != devices[one[0]].id:
                called = parts(insts[0])[-1]        # a plane, a pod's spines
            elif len(insts) == len(one):            # one switch an instance: the array
                called = _span([parts(i)[-1] for i in insts])
            else:
                called = _span([parts(devices[s].id)[-1] for s in one])
            models = sorted({devices[s].model.name for s in one})
            tag = f"t{k}.{devices[one[0]].id.removeprefix(name + '.')}" + \
                (f"x{times}" if times > 1 else "")
            label = (f"{called}\n{_plural(tier, len(one)).replace('switchs', 'switches')}"
                     f"\n{', '.join(models)}"
                     + (f"\nx {times}: identical groups" if times > 1 else ""))
            boxes.append(Box(tag, k, label, tuple(members), times))
            for s in members:
                box_of_switch[s] = tag
    # the lines: cables between boxes, a pod's machines to its leaves per rail
    code = _codes(box_of_switch, boxes, n)
    index = {b.id: k for k, b in enumerate(boxes)}
    by_unit = np.array([index[box_of_unit[u]] for u in range(len(m.unit_names))],
                       dtype=np.int64)
    ends = m.unit_arr >= 0
    code[ends] = by_unit[m.unit_arr[ends]]
    # int32 and one array at a time: 2 M scale-out links at 8,192 NVL72 racks
    nb, nr = len(boxes), width + 1
    code = code.astype(np.int32)
    low, high = code[lo], code[hi]
    keep = (low >= 0) & (high >= 0) & (low != high)
    key = (low * nb + high) * nr
    del low, high
    key += np.where(level[lo] == 0, leaf_rail[hi].astype(np.int32), np.int32(-1)) + 1
    key = key[keep]
    uniq, inverse = np.unique(key, return_inverse=True)
    del key
    cables = np.bincount(inverse).tolist()
    total = np.bincount(inverse, weights=bw[keep]).tolist()
    nt = len(m.type_names)
    kinds = np.unique(inverse * nt + m.codes[keep])
    types: dict[int, set[str]] = defaultdict(set)
    for k, t in zip((kinds // nt).tolist(), (kinds % nt).tolist()):
        types[k].add(m.type_names[t])
    out = []
    for k, key_k in enumerate(uniq.tolist()):
        pair, r = divmod(key_k, nr)
        lw, hg = divmod(pair, nb)
        out.append(Line(boxes[lw].id, boxes[hg].id, cables[k], total[k], r - 1, m.cls,
                        tuple(sorted(types[k]))))
    members = {b.id: b.members for b in boxes}
    return boxes, out, {"units": m.unit_names, "members": members,
                        "unit_box": box_of_unit, "switch_box": box_of_switch}


def _codes(box_of_switch: dict[int, str], boxes: list[Box], n: int):
    """Device index -> the number of the box that draws it (-1 for none), for numpy."""
    import numpy as np
    index = {b.id: k for k, b in enumerate(boxes)}
    code = np.full(n, -1, dtype=np.int64)
    if box_of_switch:
        code[list(box_of_switch)] = [index[b] for b in box_of_switch.values()]
    return code


def _held(m: _Model, unit: int) -> str:
    """'8 GPUs, 32 NICs': what one machine holds of GPUs and network endpoints."""
    name = m.unit_names[unit]
    gpus = m.gpu_count.get(name, 0)
    nics = m.nic_count.get(unit, 0)
    return ", ".join(t for t in ((_plural("GPU", gpus) if gpus else ""),
                                 (_plural("NIC", nics) if nics else "")) if t)


def _stem_word(unit_name: str) -> str:
    last = parts(unit_name)[-1]
    word = last.split("[")[0].rstrip("0123456789")
    return word or "machine"


def _size(label: str) -> tuple[float, float]:
    rows = label.split("\n")
    return max(len(r) for r in rows) * CHAR_W + 20, len(rows) * (FONT + 3) + 14


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _place(boxes: list[Box], lines: list[Line]) -> tuple[dict, dict, float, float]:
    """Centres and sizes of the boxes (points, y up) and the picture's width and height:
    each pod's machines under its leaves, a column per pod; a higher tier's boxes in the
    order of the mean position of what they connect to below, spread over the width."""
    size = {b.id: _size(b.label) for b in boxes}
    rows: dict[int, list[Box]] = defaultdict(list)
    for b in boxes:
        rows[b.row].append(b)
    height_of = {r: max(size[b.id][1] for b in bs) for r, bs in rows.items()}
    size = {b.id: (size[b.id][0], height_of[b.row]) for b in boxes}
    pos: dict[str, tuple[float, float]] = {}
    x = 0.0
    leaves = {b.id.rpartition(".")[0]: b for b in rows.get(1, [])}
    for b in rows.get(0, []):
        pod = b.id.rpartition(".")[0]
        w = max(size[b.id][0], size[leaves[pod].id][0] if pod in leaves else 0)
        pos[b.id] = (x + w / 2, 0.0)
        if pod in leaves:
            pos[leaves[pod].id] = (x + w / 2, 0.0)
        x += w + GAP
    width = max(x - GAP, 1.0)
    # the machines' columns centred under the widest tier above them
    need = max([width] + [sum(size[b.id][0] for b in bs) + GAP * (len(bs) - 1)
                          for r, bs in rows.items() if r >= 2])
    shift = (need - width) / 2
    pos = {k: (px + shift, py) for k, (px, py) in pos.items()}
    width = need
    y = 40.0
    ys = {}
    for r in sorted(rows):
        ys[r] = y + height_of[r] / 2
        y += height_of[r] + ROW_GAP
    below: dict[str, list[str]] = defaultdict(list)
    for ln in lines:
        below[ln.high].append(ln.low)
    for r in sorted(rows):
        if r >= 2:
            order = sorted(rows[r], key=lambda b: (sum(pos[o][0] for o in below[b.id]) /
                                                   max(1, len(below[b.id])), natural(b.id)))
            need = sum(size[b.id][0] for b in order) + GAP * (len(order) - 1)
            width = max(width, need)
            want = [sum(pos[o][0] for o in below[b.id]) / max(1, len(below[b.id]))
                    if below[b.id] else width / 2 for b in order]
            xs, edge = [], 0.0
            for b, c in zip(order, want):          # at its mean, pushed right of its left mate
                c = max(c, edge + size[b.id][0] / 2)
                xs.append(c)
                edge = c + size[b.id][0] / 2 + GAP
            shift = max(0.0, edge - GAP - width)
            edge = width
            for k in range(len(order) - 1, -1, -1):     # back inside the width from the right
                c = min(xs[k] - shift, edge - size[order[k].id][0] / 2)
                xs[k] = c
                edge = c - size[order[k].id][0] / 2 - GAP
            for b, c in zip(order, xs):
                pos[b.id] = (c, 0.0)
    pos = {k: (x, ys[next(b.row for b in boxes if b.id == k)]) for k, (x, _) in pos.items()}
    return pos, size, width, y - ROW_GAP


def _ports(lines: list[Line], pos: dict, size: dict) -> dict[tuple[int, str], float]:
    """Each line's x where it leaves a box: the lines on one edge evenly spaced along it in
    the order of their other end (so lines sharing a box never cross each other)."""
    edges: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for k, ln in enumerate(lines):
        edges[ln.low, "top"].append((pos[ln.high][0], ln.rail, k))
        edges[ln.high, "bottom"].append((pos[ln.low][0], ln.rail, k))
    out = {}
    for (box, _side), items in edges.items():
        items.sort()
        x, w = pos[box][0], size[box][0] * 0.9
        for n, (_, _, k) in enumerate(items):
            out[k, box] = x - w / 2 + w * (n + 1) / (len(items) + 1)
    return out


def _box_of(system: System, info: dict):
    """device id -> the box that draws it: its machine's pod box or its switch group's box
    (None for a device the view does not draw: a switch off the scale-out network)."""
    unit_number = {u: k for k, u in enumerate(info["units"])}
    switch_box = {system.devices[i].id: b for i, b in info["switch_box"].items()}

    def box(dev: str) -> str | None:
        if dev in switch_box:
            return switch_box[dev]
        unit = unit_number.get(top_level(system.name, dev))
        return info["unit_box"].get(unit) if unit is not None else None
    return box


def highlighted(system: System, info: dict, ids) -> set[str]:
    """The boxes that draw a device of each id (a device or every device under an instance):
    a machine's pod box, a switch group's box; an id holding several machines names all their
    boxes."""
    box = _box_of(system, info)
    out = set()
    for h in ids:
        found = box(h)
        if found:
            out.add(found)
            continue
        for k, unit in enumerate(info["units"]):
            if unit.startswith(h + ".") or h.startswith(unit + "."):
                out.add(info["unit_box"][k])
        for i, b in info["switch_box"].items():
            if system.devices[i].id.startswith(h + "."):
                out.add(b)
    return out


def _colors(system: System, info: dict, gpu_colors: dict, boxes: list[Box]) -> dict:
    """Each box holding GPUs of the groups ``gpu_colors`` colours: one group's fill and tag,
    or stripes of up to MAX_STRIPES groups' colours and the range (``dp:0..71``)."""
    from .style import MAX_STRIPES
    box = _box_of(system, info)
    held: dict[str, dict[int, str]] = defaultdict(dict)
    kind = ""
    for gpu, (color, tag) in gpu_colors.items():
        b = box(gpu)
        if b:
            kind, _, index = tag.rpartition(":")
            held[b][int(index)] = color
    out = {}
    for b, groups in held.items():
        order = sorted(groups)
        if len(order) == 1:
            out[b] = (groups[order[0]], f"{kind}:{order[0]}")
            continue
        run = order == list(range(order[0], order[-1] + 1))
        tag = f"{kind}:{order[0]}..{order[-1]}" if run else f"{kind}: {len(order)} groups"
        out[b] = (":".join(groups[i] for i in order[:MAX_STRIPES]), tag)
    return out


def ring_steps(system: System, info: dict, ring_gpus: list[str]) -> list[tuple[str, str]]:
    """A ring (GPU ids in ring order) as steps between the boxes that hold its GPUs; steps
    inside a box left out, consecutive equal steps once."""
    box = _box_of(system, info)
    order = [box(g) for g in ring_gpus]
    out = []
    for a, b in zip(order, order[1:] + order[:1]):
        if a and b and a != b and (not out or out[-1] != (a, b)):
            out.append((a, b))
    return out


def draw(system: System, opts: Options = Options(), gpu_colors: dict | None = None,
         ring_gpus: list[str] | None = None) -> Drawing:
    """The fabric view as DOT text with every position set (``neato -n2`` draws it).
    ``gpu_colors``: GPU id -> (fill, group tag) for --color; ``opts.highlight``: ids whose
    boxes are outlined, link classes and types whose lines stay; ``ring_gpus``: a ring's GPUs
    in order, drawn as arcs between the boxes that hold them."""
    boxes, lines, info = build(system)
    if opts.heat:          # topoc blast's heat map: each box by the worst failure it shows
        from .heat import heat_colors
        colors = heat_colors(_box_of(system, info), opts.heat)
    else:
        colors = _colors(system, info, gpu_colors, boxes) if gpu_colors else {}
    outlined = highlighted(system, info, [h for h in opts.highlight if "." in h])
    hops = ring_steps(system, info, ring_gpus) if ring_gpus else []
    pos, size, width, height = _place(boxes, lines)
    lines, bands = _meshes(boxes, lines, pos, size)
    port = _ports(lines, pos, size)
    out = [f'graph "{_esc(system.name)}" {{',
           f'graph [fontname="Helvetica", fontsize="{TITLE_FONT}", labelloc="t", '
           f'label="{_esc(system.name)} (fabric view)", outputorder="edgesfirst", '
           f'bb="0,0,{width:.1f},{height + 40:.1f}"];',
           f'node [fontname="Helvetica", fontsize="{FONT}", shape="box", style="filled", '
           'fixedsize="true"];',
           f'edge [fontname="Helvetica", fontsize="{LINE_FONT}"];']
    highlight_lines = {h for h in opts.highlight if "." not in h}
    for b in sorted(boxes, key=lambda b: (b.row, pos[b.id][0])):
        (x, y), (w, h) = pos[b.id], size[b.id]
        fill = "#eeeeee" if b.row == 0 else "#c0504d" if b.row == 1 else "#e6b9b8"
        label = b.label
        if b.id in colors:
            fill, tag = colors[b.id]
            label += f"\n{tag}"
            h = _size(label)[1]
        style = "filled,striped" if ":" in fill else "filled"
        font = text_color(fill.split(":")[0]) if b.row else "black"
        extra = ""
        if b.id in outlined:
            extra = ', color="red", penwidth="4"'
        elif opts.highlight:
            extra = ', color="#00000040", fontcolor="#00000080"'
        shape = "box3d" if b.times > 1 else "box"
        out.append(f'"{_esc(b.id)}" [label="{_esc(label)}", pos="{x:.1f},{y:.1f}!", '
                   f'width="{w / 72:.3f}", height="{h / 72:.3f}", shape="{shape}", '
                   f'style="{style}", fillcolor="{fill}", fontcolor="{font}"{extra}]')
    taken: list[tuple[float, float, float, float]] = [
        (pos[b][0] - size[b][0] / 2, pos[b][1] - size[b][1] / 2,
         pos[b][0] + size[b][0] / 2, pos[b][1] + size[b][1] / 2) for b in pos]
    rails = sorted({ln.rail for ln in lines if ln.rail >= 0})
    rails = rails if len(rails) > 1 else []         # one leaf a pod: no rails to tell apart
    rail_bundles: set[tuple[str, str]] = set()
    fanned = _fan_labelled(lines, port, boxes)
    # every pod's rails alike: their figure once, in the legend
    times_of = {b.id: b.times for b in boxes}
    per_rail = {(ln.cables // times_of[ln.low], round(ln.bandwidth / max(1, ln.cables)))
                for ln in lines if ln.rail >= 0}
    rail_text = None
    if len(per_rail) == 1 and rails:
        cab, bw_one = next(iter(per_rail))
        rail_text = f"{cab} cables a rail in a pod, {_rate(bw_one)} each"
    # every line as drawn (ends and width), so that no label goes under one
    drawn = [((port[k, ln.low], pos[ln.low][1] + size[ln.low][1] / 2),
              (port[k, ln.high], pos[ln.high][1] - size[ln.high][1] / 2),
              penwidth(ln.bandwidth / max(1, ln.cables)
                       * min(ln.cables // times_of[ln.low], 8)))
             for k, ln in enumerate(lines)]
    for band in bands:
        for box, x in band.stubs:
            y_box = pos[box][1] + size[box][1] / 2 if pos[box][1] < band.y \
                else pos[box][1] - size[box][1] / 2
            drawn.append(((x, y_box), (x, band.y), band.width))
    for k, ln in sorted(enumerate(lines), key=lambda kl: (kl[1].low, kl[1].high, kl[1].rail)):
        p, q, width_pt = drawn[k]
        times = times_of[ln.low]
        color = PALETTE[ln.rail % len(PALETTE)] if rails and 0 <= ln.rail and len(rails) <= RAILS \
            else CLASS_COLOR.get(ln.cls, "#1f4e9a")
        per = ln.bandwidth / max(1, ln.cables)
        attrs_ = [f'pos="{p[0]:.1f},{p[1]:.1f} {p[0]:.1f},{p[1]:.1f} {q[0]:.1f},{q[1]:.1f} '
                  f'{q[0]:.1f},{q[1]:.1f}"', f'color="{color}"', f'penwidth="{width_pt:.2f}"',
                  f'tooltip="{_esc(ln.low)} - {_esc(ln.high)}: {ln.cables} cables, '
                  f'{_rate(ln.bandwidth)} per direction"']
        if opts.highlight and ln.cls not in highlight_lines and \
                not highlight_lines.intersection(ln.types):
            attrs_[1] = f'color="{color}40"'
        elif opts.highlight:
            attrs_[2] = 'penwidth="4"'
        text = None
        if ln.rail >= 0:
            if rail_text is None and (ln.low, ln.high) not in rail_bundles:
                rail_bundles.add((ln.low, ln.high))
                n = sum(1 for o in lines if (o.low, o.high) == (ln.low, ln.high))
                cab = ln.cables // times
                text = (f"{n} rails x {cab} cables" if n > 1 else
                        f"x{cab} {_rate(ln.bandwidth / max(1, ln.cables))}") + \
                    (" each pod" if times > 1 else "")
        else:
            # lines of one fan with one figure: labelled once, on its middle line
            text = _figure_text(ln, times) if k in fanned else None
        if text:
            if ln.rail >= 0:      # beside the bundle, right of its rightmost rail
                right = max(port[j, ln.low] for j, o in enumerate(lines)
                            if (o.low, o.high) == (ln.low, ln.high))
                top = pos[ln.high][1] - size[ln.high][1] / 2
                p, q = (right + 2, p[1]), (right + 2 + (q[0] - p[0]), top)
            at = _free_spot(text, p, q, taken, drawn, width_pt)
            if at is not None:
                attrs_.append(f'label="{_esc(text)}", lp="{at[0]:.1f},{at[1]:.1f}"')
        out.append(f'"{_esc(ln.low)}" -- "{_esc(ln.high)}" [{", ".join(attrs_)}]')
    for band in bands:
        x0, x1, y = band.x0, band.x1, band.y
        out.append(f'"{_esc(band.id)}" [label="{_esc(band.label)}", pos="{(x0 + x1) / 2:.1f},'
                   f'{y:.1f}!", width="{(x1 - x0) / 72:.3f}", height="{BAND_H / 72:.3f}", '
                   f'fillcolor="#dddddd", fontsize="{LINE_FONT}", color="#888888"]')
        for box, x in band.stubs:
            ends = ((x, pos[box][1] + size[box][1] / 2), (x, y - BAND_H / 2)) \
                if pos[box][1] < y else ((x, pos[box][1] - size[box][1] / 2), (x, y + BAND_H / 2))
            (px, py), (qx, qy) = ends
            color = CLASS_COLOR.get(band.cls, "#1f4e9a")
            lit = band.cls in highlight_lines or highlight_lines.intersection(band.types)
            if opts.highlight and not lit:
                color += "40"
            out.append(f'"{_esc(box)}" -- "{_esc(band.id)}" [pos="{px:.1f},{py:.1f} {px:.1f},'
                       f'{py:.1f} {qx:.1f},{qy:.1f} {qx:.1f},{qy:.1f}", color="{color}", '
                       f'penwidth="{band.width:.2f}"]')
    for step, (a, b) in enumerate(hops or ()):
        from .route import arc
        p, q = pos[a], pos[b]
        bend = min(60.0, 0.3 * math.dist(p, q) + 12)
        spl, mid = arc(p, q, bend if q[0] >= p[0] else -bend)
        out.append(f'"{_esc(a)}" -- "{_esc(b)}" [pos="{spl}", color="{RING_COLOR}", '
                   f'penwidth="2.5", dir="forward", label="{step}", fontcolor="{RING_COLOR}", '
                   f'fontsize="12", lp="{mid[0]:.1f},{mid[1]:.1f}"]')
    legend, lw, lh = _legend(rails, lines, opts, bool(colors), rail_text)
    lx, ly = width + 24 + lw / 2, height - lh / 2
    out.append(f'legend [label={legend}, shape="plaintext", style="", fixedsize="false", '
               f'fontsize="{LINE_FONT}", pos="{lx:.1f},{ly:.1f}!"]')
    out.append("}")
    return Drawing("\n".join(out) + "\n", width + 24 + lw, max(height, lh) + 40,
                   tuple(b.id for b in boxes), len(hops))


BAND_H = 18.0


@attrs.frozen
class Band:
    """A full mesh between two rows (every box of one to every box of the other) drawn as a
    grey bar in the gap with one stub from each box, and its figure on the bar."""

    id: str
    x0: float
    x1: float
    y: float
    label: str
    stubs: tuple[tuple[str, float], ...]
    cls: str
    width: float
    types: tuple[str, ...] = ()


def _meshes(boxes: list[Box], lines: list[Line], pos: dict, size: dict) \
        -> tuple[list[Line], list[Band]]:
    """The lines left once every full mesh between two neighbouring rows (at least two boxes
    each side, no rail bundle) is folded into a Band."""
    row = {b.id: b.row for b in boxes}
    times = {b.id: b.times for b in boxes}
    rows = sorted({b.row for b in boxes})
    bands, left = [], list(lines)
    for r, up in zip(rows, rows[1:]):
        between = [ln for ln in left if row[ln.low] == r and row[ln.high] == up and ln.rail < 0]
        lows = sorted({ln.low for ln in between}, key=lambda b: pos[b][0])
        highs = sorted({ln.high for ln in between}, key=lambda b: pos[b][0])
        if len(lows) < 2 or len(highs) < 2 or len(between) != len(lows) * len(highs) or \
                len({(ln.low, ln.high) for ln in between}) != len(between):
            continue
        stubs = tuple((b, pos[b][0]) for b in lows + highs)
        xs = [x for _, x in stubs]
        top = min(pos[b][1] - size[b][1] / 2 for b in highs)
        bottom = max(pos[b][1] + size[b][1] / 2 for b in lows)
        per = {(ln.cables // times[ln.low], ln.bandwidth / max(1, ln.cables)) for ln in between}
        n_low = sum(times[b] for b in lows)
        n_high = sum(times[b] for b in highs)
        figure = (f"x{next(iter(per))[0]} {_rate(next(iter(per))[1])} each pair"
                  if len(per) == 1 else f"{sum(ln.cables for ln in between):,} cables")
        label = f"full mesh: each of {n_low} below to each of {n_high} above, {figure}"
        w = len(label) * LINE_FONT * 0.55 + 12
        mid = (min(xs) + max(xs)) / 2
        x0, x1 = min(min(xs) - 8, mid - w / 2), max(max(xs) + 8, mid + w / 2)
        cables = max(ln.cables // times[ln.low] for ln in between)
        bands.append(Band(f"mesh{r}.{up}", x0, x1, (top + bottom) / 2, label, stubs,
                          between[0].cls, penwidth(between[0].bandwidth / max(1, between[0].cables)
                                                   * min(cables, 8)),
                          tuple(sorted({t for ln in between for t in ln.types}))))
        left = [ln for ln in left if ln not in between]
    return left, bands


def _figure_text(ln: Line, times: int) -> str:
    """The figure written on a line of no rail: its cables and bandwidth each."""
    per = ln.bandwidth / max(1, ln.cables)
    return f"x{ln.cables // times} {_rate(per)}" + (" each" if times > 1 else "")


def _fan_labelled(lines: list[Line], port: dict, boxes: list[Box]) -> set[int]:
    """The lines (indices) of no rail whose figure is written: one a fan (the lines of one
    figure out of one box), its middle line by where the lines' other ends sit, the largest
    fans first, a line's label serving both fans it is in (none on a line whose other fan is
    labelled already). The first line of a fan was
    labelled: h100_fourtier's 'x64 800 GB/s' sat beside its leftmost, shallowest line, far
    from the fan's middle."""
    times = {b.id: b.times for b in boxes}
    fans: dict[tuple[str, str], list[tuple[float, int]]] = defaultdict(list)
    keys: dict[int, tuple[tuple[str, str], ...]] = {}
    for k, ln in enumerate(lines):
        if ln.rail >= 0:
            continue
        text = _figure_text(ln, times[ln.low])
        keys[k] = ((ln.high, text), (ln.low, text))
        fans[ln.high, text].append((port[k, ln.low], k))
        fans[ln.low, text].append((port[k, ln.high], k))
    labelled, covered = set(), set()
    for key in sorted(fans, key=lambda key: (-len(fans[key]), key)):
        if key in covered:
            continue
        members = [k for _x, k in sorted(fans[key])]
        mid = (len(members) - 1) / 2
        free = sorted((abs(i - mid), i) for i, k in enumerate(members)
                      if not covered.intersection(keys[k]))
        if not free:
            continue
        k = members[free[0][1]]
        labelled.add(k)
        covered.update(keys[k])
    return labelled


#: Where along its line a label is tried, middle first.
SPOTS = (0.5, 0.35, 0.65, 0.2, 0.8, 0.275, 0.425, 0.575, 0.725, 0.125, 0.875)


def _free_spot(text: str, p, q, taken: list, drawn: list | None = None,
               width: float = 1.0) -> tuple[float, float] | None:
    """A spot for a line's label beside the line, on no box, no other label and no line
    (``drawn``: (start, end, width) of every straight line; a label under a line of a fan
    was half hidden: h100_fourtier's 'x64 800 GB/s'). Beside means clear of the line's own
    ``width`` and of its slant over the label's height (a thick line's label 4 pt off its
    middle sat on the line itself, and found no spot)."""
    from .route import segment_meets
    w, h = len(text) * LINE_FONT * 0.55 + 4, LINE_FONT + 4
    slant = abs(q[0] - p[0]) / max(1.0, abs(q[1] - p[1]))
    side = w / 2 + 4 + width / 2 + min(h / 2 * slant, w)
    for t in SPOTS:
        x, y = p[0] + (q[0] - p[0]) * t, p[1] + (q[1] - p[1]) * t
        # beside it, then (a shallow line, which a label beside it would sit on) above or
        # below it, then diagonally off it
        for dx, dy in ((side, 0), (-side, 0), (0, h / 2 + 8), (0, -h / 2 - 8),
                       (side, h / 2 + 8), (-side, h / 2 + 8),
                       (side, -h / 2 - 8), (-side, -h / 2 - 8)):
            r = (x + dx - w / 2, y + dy - h / 2, x + dx + w / 2, y + dy + h / 2)
            if all(r[2] < o[0] or r[0] > o[2] or r[3] < o[1] or r[1] > o[3] for o in taken) \
                    and not any(segment_meets(a, b, r, wd / 2 + 1) for a, b, wd in drawn or ()):
                taken.append(r)
                return x + dx, y + dy
    return None


def _legend(rails: list[int], lines: list[Line], opts: Options, colored: bool,
            rail_text: str | None) -> tuple[str, float, float]:
    rows = ['<TR><TD COLSPAN="2"><B>fabric view</B></TD></TR>']
    if rails and len(rails) <= RAILS:
        cells = "".join(f'<TD BGCOLOR="{PALETTE[r % len(PALETTE)]}" WIDTH="14"></TD>'
                        for r in rails)
        rows.append(f'<TR><TD><TABLE BORDER="0" CELLSPACING="0"><TR>{cells}</TR></TABLE></TD>'
                    f'<TD ALIGN="LEFT">rails {rails[0]}..{rails[-1]}, a pod\'s leaves in order'
                    '</TD></TR>')
    for cls in sorted({ln.cls for ln in lines}):
        rows.append(f'<TR><TD><FONT COLOR="{CLASS_COLOR.get(cls, "#1f4e9a")}"><B>'
                    f'&#9473;&#9473;&#9473;</B></FONT></TD><TD ALIGN="LEFT">{cls} between '
                    'tiers</TD></TR>')
    notes = ([rail_text] if rail_text and rails else []) + [
             "x N: identical pods or switch groups folded",
             "figures: cables and bandwidth per direction a cable"]
    if opts.heat:
        notes.append("fill: the worst single failure in the box (topoc blast), against "
                     "the worst: lightest up to 25 %, darkest to 100 %")
    elif colored:
        notes.append(f"fill and tag: the {opts.color} groups a box holds")
    if opts.ring:
        notes.append(f"red arcs: ring of {opts.ring}, steps between boxes")
    rows += [f'<TR><TD COLSPAN="2" ALIGN="LEFT">{n}</TD></TR>' for n in notes]
    width = max(len(n) for n in notes) * LINE_FONT * 0.55 + 30
    return (f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0">{"".join(rows)}</TABLE>>',
            width, len(rows) * (LINE_FONT + 9) + 4)
