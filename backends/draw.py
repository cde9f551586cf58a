"""The DOT text of one view: boxes where ``layout`` put them, full meshes folded into bands,
every line and label placed by ``route``, group colours, the ring overlay and the legend.

Everything is emitted sorted, so the same view gives the same bytes; Graphviz (``neato
-n2``) only draws.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

import attrs
import graphviz

from ..compiler.base.units import RATE, human
from .layout import PAD, TITLE, layout, natural
from .route import (BAND_H, Band, Labels, Rows, Segments, arc, detour, label_size, meshes, overlaps,
                    polyline, rect, route, spline)
from .nudge import apart
from .trunks import on_tracks, room as trunk_room
from .uplinks import bar_label, climb_out, room, stubs_aside
from .style import (CLASS_COLOR, RING_COLOR, kind_name, kind_style, legend_name, Edge, Node,
                    Options, box, penwidth, short, text_color, tier)


#: A figure carried by more lines than this is not written on each (the legend lists it).
MANY = 12


@attrs.frozen
class Picture:
    """The DOT text and the drawing's size in points, title and legend included."""

    source: str
    width: float
    height: float
    lines: int = 0          # lines drawn (rings left out)
    crossing: int = 0       # of them, lines through a box they do not join
    titles_crossed: int = 0     # frame titles no spot of which is clear of lines


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _figure(e: Edge) -> str:
    lanes = f"x{e.lanes} " if e.lanes > 1 else ""
    return f"{lanes}{human(e.bandwidth, RATE)}"


def _plural(kind: str, n: int) -> str:
    name = kind_name(kind)
    if n == 1:
        return name
    return name + ("es" if name.endswith(("ch", "s")) else "s")


def _called(members: Sequence[str], nodes: dict[str, Node], n: int = 2) -> str:
    """What a band's members are: their kind ('GPUs', 'network switches'), or for racks, nodes
    and trays the name they share ('nodes', 'trays')."""
    kinds = {nodes[m].kind for m in members}
    if kinds <= {"unit", "netunit"}:
        stems = {re.sub(r"[\d\[\]*.]+$", "", short(m)) for m in members}
        if len(stems) == 1:
            stem = stems.pop()
            return stem if n == 1 else stem + "s"
    return _plural(min(kinds), n)


def _frames_of(node: str, frames: dict, against: set[str], nodes: dict) -> list[tuple]:
    """Frames holding ``node`` and none of ``against`` (a frame holds what its path prefixes,
    and what is placed in it: a scalable unit's leaves)."""
    def holds(c: str, n: str) -> bool:
        where = nodes[n].cluster if n in nodes else ""
        return n.startswith(c + ".") or where == c or where.startswith(c + ".")
    return [r for c, r in frames.items()
            if holds(c, node) and not any(holds(c, a) for a in against)]


def _bands(nodes: dict[str, Node], pos: dict, sizes: dict, frames: dict,
           edges: list[Edge]) -> tuple[list[Band], list[Edge], set[tuple[str, str]]]:
    """Full meshes between rows folded into bands: the bands, the edges left (stubs in place
    of each mesh's lines) and the stubs whose figure the band's label already gives."""
    foldable = lambda n: n in pos and nodes[n].kind != "fabric"      # noqa: E731
    bands: list[Band] = []
    gone: set[int] = set()
    stubs: list[Edge] = []
    quiet: set[tuple[str, str]] = set()
    index = {}
    for i, e in enumerate(edges):
        index[e.src, e.dst, e.cls] = i
        index[e.dst, e.src, e.cls] = i
    for side, other, cls in meshes(edges, foldable):
        if len({round(pos[o][1]) for o in other}) > 1:
            side, other = other, side
            if len({round(pos[o][1]) for o in other}) > 1:
                continue
        oy = pos[other[0]][1]
        for part in ([s for s in side if pos[s][1] > oy], [s for s in side if pos[s][1] < oy]):
            mine = [index.get((s, o, cls)) for s in part for o in other]
            if len(part) < 2 or None in mine or gone & set(mine):
                continue
            above = pos[part[0]][1] > oy
            near = []       # the edges of the gap: the other row's side, the part's side
            for group, against, top in ((other, set(part), above), (part, set(other), not above)):
                ys = []
                for n in group:
                    r = rect(pos[n], sizes[n])
                    fr = _frames_of(n, frames, against, nodes)
                    edge_y = [r[3] if top else r[1]] + [f[3] if top else f[1] for f in fr]
                    ys.append(max(edge_y) if top else min(edge_y))
                near.append(max(ys) if top else min(ys))
            lo, hi = sorted(near)
            if hi - lo < BAND_H + 12:
                continue
            y = (lo + hi) / 2
            xs = [pos[n][0] for n in (*part, *other)]
            kinds = {nodes[n].kind for n in part}
            okinds = {nodes[n].kind for n in other}
            per = defaultdict(lambda: [0, 0.0])
            for n in part:
                for o in other:
                    e = edges[index[n, o, cls]]
                    per[n][0] += e.lanes
                    per[n][1] += e.bandwidth
            figures = {tuple(v) for v in per.values()}
            what = (f"{cls} full mesh: {len(part)} {_called(part, nodes)} x "
                    f"{len(other)} {_called(other, nodes)}")
            if len(figures) == 1:
                lanes, bw = next(iter(figures))
                what += (f", each {_called(part, nodes, 1)} "
                         f"{'x' + str(lanes) + ' ' if lanes > 1 else ''}{human(bw, RATE)}")
            w = label_size(what)[0] * 8 / 8 + 8
            x0, x1 = min(xs) - 12, max(xs) + 12
            if x1 - x0 < w:
                mid = (x0 + x1) / 2
                x0, x1 = mid - w / 2, mid + w / 2
            if any(b.x0 < x1 and x0 < b.x1 and abs(b.y - y) < BAND_H + 4 for b in bands) or \
                    any(overlaps((x0, y - BAND_H / 2, x1, y + BAND_H / 2), rect(pos[n], sizes[n]))
                        for n in pos):
                continue        # the gap is taken (another band, a box): keep the lines
            band = Band(f"mesh/{cls}/{len(bands)}", x0, x1, y, tuple(part), tuple(other), cls,
                        what)
            bands.append(band)
            gone |= set(mine)
            types = tuple(sorted({t for i in mine for t in edges[i].types}))
            for n in part:
                stubs.append(Edge(n, band.id, cls, per[n][0], per[n][1], True, types))
                if len(figures) == 1:
                    quiet.add((n, band.id))
            for o in other:
                lanes = sum(edges[index[n, o, cls]].lanes for n in part)
                bw = sum(edges[index[n, o, cls]].bandwidth for n in part)
                stubs.append(Edge(band.id, o, cls, lanes, bw, True, types))
    kept = [e for i, e in enumerate(edges) if i not in gone]
    return bands, kept + stubs, quiet


def _fan_in(nodes: dict[str, Node], edges: list[Edge]) -> set[tuple[str, str]]:
    """Lines that need no label of their own: of three or more lines of one class and one
    figure into the same summary box (every leaf into 'node[1..31]'), all but the middle one."""
    fans: dict[tuple, list[Edge]] = defaultdict(list)
    for e in edges:
        for end in (e.src, e.dst):
            if end in nodes and nodes[end].kind in ("unit", "netunit"):
                fans[end, e.cls, _figure(e)].append(e)
    out = set()
    for fan in fans.values():
        if len(fan) >= 3:
            fan.sort(key=lambda e: (e.src, e.dst))
            keep = fan[len(fan) // 2]
            out |= {(e.src, e.dst) for e in fan if e is not keep}
    return out


def _stretch(nodes: dict[str, Node], pos: dict, sizes: dict, edges: list[Edge]) -> None:
    """A fabric bar spans the boxes it joins (when its row has room): one stub per GPU drops
    straight onto it."""
    for n in sorted(nodes.values(), key=lambda n: n.id):
        if n.kind != "fabric":
            continue
        xs = [pos[e.dst if e.src == n.id else e.src][0] for e in edges
              if n.id in (e.src, e.dst) and (e.dst if e.src == n.id else e.src) in pos]
        if not xs:
            continue
        w = max(sizes[n.id][0], max(xs) - min(xs) + 40)
        x = (max(xs) + min(xs)) / 2
        r = (x - w / 2, pos[n.id][1] - 1, x + w / 2, pos[n.id][1] + 1)
        clash = any(m != n.id and abs(pos[m][1] - pos[n.id][1]) < 1 and
                    rect(pos[m], sizes[m])[0] < r[2] and r[0] < rect(pos[m], sizes[m])[2]
                    for m in pos)
        if not clash:
            pos[n.id] = (x, pos[n.id][1])
            sizes[n.id] = (w, sizes[n.id][1])


def _align(nodes: dict[str, Node], pos: dict, sizes: dict, edges: list[Edge]) -> None:
    """Rows of a flat picture (a node's boxes, no frames) shifted under what they connect to:
    each box as near the mean of its neighbours in the rows above as order and spacing allow
    (the first row: its neighbours below). GPUs end under their PCIe switches, the CPUs
    above theirs."""
    from .layout import GAP_X
    if any(n.cluster for n in nodes.values()):
        return
    rows: dict[float, list[str]] = defaultdict(list)
    for n in nodes:
        rows[round(pos[n][1], 1)].append(n)
    ys = sorted(rows, reverse=True)
    nbrs: dict[str, list[str]] = defaultdict(list)
    for e in edges:
        if e.src in pos and e.dst in pos:
            nbrs[e.src].append(e.dst)
            nbrs[e.dst].append(e.src)

    def place(row: list[str], towards) -> None:
        row.sort(key=lambda n: pos[n][0])
        want = []
        for n in row:
            ns = [pos[m][0] for m in nbrs[n] if towards(pos[m][1])]
            want.append(sum(ns) / len(ns) if ns else pos[n][0])
        gap = GAP_X + (THROUGH if _passed(row, nodes, pos, sizes, edges) else 0.0)
        xs = []
        for i, n in enumerate(row):
            x = want[i]
            if xs:
                x = max(x, xs[-1] + (sizes[row[i - 1]][0] + sizes[n][0]) / 2 + gap)
            xs.append(x)
        shift = sum(w - x for w, x in zip(want, xs)) / len(xs)
        for n, x in zip(row, xs):
            pos[n] = (x + shift, pos[n][1])
    for i, y in enumerate(ys[1:], 1):
        place(rows[y], lambda yy, y=y: yy > y + 1)
    if len(ys) > 1:
        place(rows[ys[0]], lambda yy, y=ys[0]: yy < y - 1)
    left = min(pos[n][0] - sizes[n][0] / 2 for n in pos)
    for n in pos:
        pos[n] = (pos[n][0] - left, pos[n][1])


#: Points more between the boxes of a row of switches that thick lines pass through (a
#: cluster's second row of leaves under the first): three lanes of thick lines.
THROUGH = 18.0


def _passed(row: list[str], nodes: dict[str, Node], pos: dict, sizes: dict,
            edges: list[Edge]) -> bool:
    """Whether a row of network switches has lines passing through it, between a box
    above it and one below (a cluster's racks view with its leaves wrapped in two rows:
    the planes' lines to the lower row pass the upper one, the upper row's lines to the
    racks the lower one; three thick lines through one 18 pt gap were one trunk)."""
    if not row or any(nodes[n].kind not in ("net_switch", "netunit") for n in row):
        return False
    y = pos[row[0]][1]
    half = max(sizes[n][1] for n in row) / 2
    for e in edges:
        a, b = pos.get(e.src), pos.get(e.dst)
        if a is not None and b is not None and \
                min(a[1], b[1]) < y - half and max(a[1], b[1]) > y + half:
            return True
    return False


def _grown(nodes, pos: dict, sizes: dict) -> dict:
    """Each box's outline; a double outline is drawn 4 pt outside the box's size."""
    rects = {n: rect(pos[n], sizes[n]) for n in pos}
    for n in nodes:
        if n.id in rects and kind_style(n.kind)["shape"] == "doubleoctagon":
            x0, y0, x1, y1 = rects[n.id]
            rects[n.id] = (x0 - 4, y0 - 4, x1 + 4, y1 + 4)
    return rects


def _make_room(name: str, nodes, by_id: dict, pos: dict, sizes: dict, frames: dict,
               edges: list[Edge]) -> float:
    """Everything above a machine drawn in full moved up (``pos`` and ``frames`` in place)
    as far as its uplinks' tracks need (``uplinks.room``); the points moved."""
    cut, need = room(edges, by_id, _grown(nodes, pos, sizes), frames, name)
    if need <= 0:
        return 0.0
    _lift(cut, need, pos, sizes, frames)
    return need


def _lift(cut: float, need: float, pos: dict, sizes: dict, frames: dict) -> None:
    """Every box whose bottom and every frame whose lower edge is at or above ``cut`` (less
    half a line's clearance) moved up by ``need`` points, in place."""
    for n, (x, y) in pos.items():
        if y - sizes[n][1] / 2 >= cut - 4.5:
            pos[n] = (x, y + need)
    for c, (x0, y0, x1, y1) in frames.items():
        if y0 >= cut - 4.5:
            frames[c] = (x0, y0 + need, x1, y1 + need)


def _room_for_tracks(nodes, by_id: dict, pos: dict, sizes: dict, frames: dict,
                     edges: list[Edge]) -> float:
    """Everything above a pair of switch rows whose tracks (``trunks``) do not fit in the
    gap between them moved up as far as they need, pair by pair from the bottom; the points
    moved in all."""
    moved = 0.0
    for _ in range(8):
        cut, need = trunk_room(edges, by_id, _grown(nodes, pos, sizes), frames)
        if need <= 0:
            break
        _lift(cut, need, pos, sizes, frames)
        moved += need
    return moved


def _per_member(fabric: str, edges: list[Edge]) -> str:
    """', each GPU x18 900 GB/s' when every line into a fabric carries the same figure."""
    figs = {_figure(e) for e in edges if fabric in (e.src, e.dst)}
    return f", each GPU {figs.pop()}" if len(figs) == 1 else ""


def _legend(kinds: dict[str, set[str]], figures: dict[str, list[str]], opts: Options,
            view: str, shown: bool, banded: bool, groups: int) -> tuple[str, float, float]:
    """The legend as an HTML-like label, and its width and height in points."""
    rows = [f'<TR><TD COLSPAN="2"><B>{view} view</B></TD></TR>']
    width = 0
    for kind in sorted(kinds):
        color = kind_style(kind)["fillcolor"]
        name = legend_name(kind)
        models = sorted(m for m in kinds[kind] if m)
        text = name + (f": {', '.join(models[:3])}" if models else "")
        width = max(width, len(text))
        rows.append(f'<TR><TD BGCOLOR="{color}" WIDTH="24"></TD>'
                    f'<TD ALIGN="LEFT">{_html(text)}</TD></TR>')
    for cls in sorted(figures):
        shown_figs = figures[cls][:3] + (["..."] if len(figures[cls]) > 3 else [])
        text = f"{cls}: {', '.join(shown_figs)}" if shown_figs else f"{cls} (figures on the bar)"
        width = max(width, len(text))
        rows.append(f'<TR><TD><FONT COLOR="{CLASS_COLOR[cls]}"><B>&#9473;&#9473;&#9473;</B>'
                    f'</FONT></TD><TD ALIGN="LEFT">{_html(text)}</TD></TR>')
    notes = ["figures: lanes and GB/s per direction",
             "line width: 1 pt up to 25 GB/s, +1 pt per doubling"]
    if banded:
        notes.append("grey bar: a full mesh folded, one stub per member")
    if opts.parallel and shown and not opts.heat:
        notes.append(f"fill and tag: {opts.color} group ({groups} groups; a bar of colours: "
                     "several)")
    for note in notes:
        width = max(width, len(note))
        rows.append(f'<TR><TD COLSPAN="2" ALIGN="LEFT">{_html(note)}</TD></TR>')
    if opts.heat:
        from .heat import legend_rows
        rows += legend_rows()
        width = max(width, 70)
    if opts.ring:
        rows.append(f'<TR><TD><FONT COLOR="{RING_COLOR}"><B>&#8594;</B></FONT></TD>'
                    f'<TD ALIGN="LEFT">ring of {_html(opts.ring)}, step numbers in order</TD>'
                    '</TR>')
    label = f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0">{"".join(rows)}</TABLE>>'
    return label, width * 6.0 + 50, len(rows) * 19.0 + 4


def _unit_label(n: Node, name: str, colors: Sequence[str]) -> str:
    """A box standing for many groups: its text, then a keyed bar of the groups' colours."""
    from .style import MAX_STRIPES
    text = "<BR/>".join(_html(line) for line in f"{n.label}\n{name}".split("\n"))
    shown = list(colors[:MAX_STRIPES])
    # the bar is a table of its own with fixed-size cells: as cells of the text's table,
    # Graphviz spread the text's extra width over them unevenly (128 pt to 8 pt)
    cells = "".join(f'<TD BGCOLOR="{c}" WIDTH="6" HEIGHT="8" FIXEDSIZE="TRUE"></TD>'
                    for c in shown)
    more = ('<TD WIDTH="16" HEIGHT="8" FIXEDSIZE="TRUE"><FONT POINT-SIZE="7">'
            f"+{len(colors) - len(shown)}</FONT></TD>") if len(colors) > len(shown) else ""
    return (f'<<TABLE BORDER="0" CELLSPACING="0" CELLPADDING="0"><TR><TD>{text}</TD></TR>'
            '<TR><TD><TABLE BORDER="0" CELLSPACING="0" CELLPADDING="0" FIXEDSIZE="TRUE" '
            f'WIDTH="{6 * len(shown) + (16 if more else 0)}" HEIGHT="8"><TR>'
            f'{cells}{more}</TR></TABLE></TD></TR></TABLE>>')


def picture(name: str, view: str, nodes: list[Node], edges: list[Edge], opts: Options,
            colors: dict[str, tuple[str, str]], hops: list[tuple[str, str]],
            models: dict[str, set[str]], widest: float = 6.0, groups: int = 0) -> Picture:
    """The DOT text of one view. ``colors`` maps a box to (fill, group tag) or, for a box of
    several groups, ('a:b:c', tag); ``hops`` are the ring's steps; ``models`` the device models
    per kind (the legend names them when the boxes do not); ``widest`` the widest shape the
    top-level layout may take before wrapping rows (the legend goes below a wide picture)."""
    g = graphviz.Graph(name=name, strict=False)
    pos, frames, (width, height), mirrored = layout(nodes, name, box, tier, widest)
    by_id = {n.id: n for n in nodes}
    sizes = {n.id: box(n) for n in nodes}
    _align(by_id, pos, sizes, edges)
    _stretch(by_id, pos, sizes, edges)
    height += _make_room(name, nodes, by_id, pos, sizes, frames, edges)
    height += _room_for_tracks(nodes, by_id, pos, sizes, frames, edges)
    width = max((pos[n][0] + sizes[n][0] / 2 for n in pos), default=width)
    width = max([width] + [f[2] for f in frames.values()])
    bands, edges, quiet = _bands(by_id, pos, sizes, frames, edges)
    for n in nodes:
        if n.kind == "fabric" and _per_member(n.id, edges):
            quiet |= {(e.src, e.dst) for e in edges if n.id in (e.src, e.dst)}
    quiet |= _fan_in(by_id, edges)
    g.attr(splines="true", outputorder="edgesfirst", fontname="Helvetica",
           label=f"{name} ({view} view)", labelloc="t", fontsize="20")
    g.attr("node", style="filled", fontname="Helvetica", fontsize="10")
    g.attr("edge", fontname="Helvetica", fontsize="8")

    by_cluster: dict[str, list[Node]] = defaultdict(list)
    for n in nodes:
        by_cluster[n.cluster if n.cluster in frames else ""].append(n)
    children: dict[str, list[str]] = defaultdict(list)
    for c in frames:
        p = c.rpartition(".")[0]
        children[p if p in frames else ""].append(c)

    def emit(graph, cluster: str) -> None:
        for n in sorted(by_cluster.get(cluster, ()), key=lambda n: n.id):
            style = dict(kind_style(n.kind))
            label = n.label
            if n.id in colors:
                fill, tag = colors[n.id]
                if ":" in fill:             # several groups: a keyed bar under the text
                    label = _unit_label(n, tag, fill.split(":"))
                    style.update(shape="box", fillcolor="#f4f4f4", fontcolor="black")
                else:
                    style.update(fillcolor=fill, fontcolor=text_color(fill))
                    label = f"{label}\n{tag}"
            if n.kind == "fabric":
                label += _per_member(n.id, edges)
            if _highlighted(opts, n.id):
                style.update(penwidth="4", color="red")
            x, y = pos[n.id]
            w, h = sizes[n.id]
            graph.node(n.id, label=label, pos=f"{x:.1f},{y:.1f}!", width=f"{w / 72:.3f}",
                       height=f"{h / 72:.3f}", fixedsize="true",
                       tooltip=_tip(n, models, colors.get(n.id)), **style)
        for c in sorted(children.get(cluster, ()), key=natural):
            x0, y0, x1, y1 = frames[c]
            with graph.subgraph(name=f"cluster_{c}") as sub:
                sub.attr(label=short(c), style="rounded", color="#999999",
                         fontsize=str(title_font[c]), bb=f"{x0:.1f},{y0:.1f},{x1:.1f},{y1:.1f}",
                         labelloc="b" if c in mirrored else "t", **justify.get(c, {}))
                emit(sub, c)

    rects = _grown(nodes, pos, sizes)
    band_of = {b.id: b for b in bands}
    band_of.update((n.id, n) for n in nodes if n.kind == "fabric")
    for b in bands:
        rects[b.id] = (b.x0, b.y - BAND_H / 2, b.x1, b.y + BAND_H / 2)
    bars = {b.id: b.label for b in bands}
    # a fabric bar's text as drawn: its label and the figure of each member's line
    bars.update((n.id, n.label + _per_member(n.id, edges)) for n in nodes if n.kind == "fabric")
    first = _route_all(name, edges, nodes, by_id, pos, rects, bands, band_of)
    routed = climb_out(on_tracks(first, by_id, rects, frames), name, by_id, rects, frames, bars)
    routed = stubs_aside(routed, bars, rects, by_id)
    # detours drawn on top of unrelated ones moved apart; the lines on tracks and climbs
    # (laid out in lanes of their own) stay
    routed = apart(routed, {**rects, **{f"text:{b}": bar_label(rects[b], text)
                                        for b, text in bars.items() if b in rects}},
                   {k for k, (a, b) in enumerate(zip(first, routed)) if a[3] != b[3]})
    # a frame of switches alone (a unit's leaves) has a smaller title, to fit between lines
    title_font = {c: 10 if by_cluster.get(c) and not children.get(c) and
                  all(n.kind == "net_switch" for n in by_cluster[c]) else 12 for c in frames}
    justify, titles, crossed = _titles(frames, mirrored, [path for *_, path in routed],
                                       title_font)
    emit(g, "")
    for b in bands:
        g.node(b.id, label=b.label, pos=f"{(b.x0 + b.x1) / 2:.1f},{b.y:.1f}!",
               width=f"{(b.x1 - b.x0) / 72:.3f}", height=f"{BAND_H / 72:.3f}", fixedsize="true",
               **kind_style("band"))
    labels = Labels([*rects.values(), *titles.values()])
    boxes = Labels([])          # the boxes alone, to count lines that run through one
    ids = list(rects)
    for n in ids:
        r = rects[n]
        boxes.take((r[0] + 2, r[1] + 2, r[2] - 2, r[3] - 2))
    # a bar (a folded bus: the NVLink fabric, a folded mesh) crossed at right angles away
    # from its text is lines crossing, not a line through a box
    bar_text = {b: bar_label(rects[b], text) for b, text in bars.items() if b in rects}
    crossing = 0

    signatures: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        signatures[e.cls]       # every class drawn has a legend row
        if (e.src, e.dst) not in quiet and (e.dst, e.src) not in quiet:
            signatures[e.cls].add(_figure(e))
    figures = {cls: sorted(sigs, key=lambda s: (len(s), s)) for cls, sigs in signatures.items()}
    # a figure many lines carry (every NIC's 50 GB/s up to its leaf) is read from the legend
    # and the line's width, not written on each line
    carried = Counter((e.cls, _figure(e)) for e in edges
                      if e.src not in band_of and e.dst not in band_of)
    drawn = Segments()          # no label under another line
    for k, (e, _p, _q, path) in enumerate(routed):
        drawn.add(path, penwidth(e.bandwidth), k, frozenset((e.src, e.dst)))
    for k, (e, p, q, path) in enumerate(routed):
        attrs_ = {"color": CLASS_COLOR[e.cls], "penwidth": f"{penwidth(e.bandwidth):.2f}",
                  "tooltip": f"{e.src} - {e.dst}\n{e.cls} ({', '.join(e.types)}): "
                             f"{_figure(e)} per direction",
                  "pos": polyline(path) if e.duplex else
                  f"e,{q[0]:.1f},{q[1]:.1f} " + spline(p, _short_of(p, q, 8))}
        crossing += _crosses(path, boxes, ids, {e.src, e.dst}, bar_text)
        if len(path) > 2:       # a detour: its label on its longest leg
            p, q = max(zip(path, path[1:]), key=lambda pq: math.dist(*pq))
        if not e.duplex:
            attrs_["dir"] = "forward"
        if len(figures[e.cls]) > 1 and (e.src, e.dst) not in quiet \
                and (e.dst, e.src) not in quiet and carried[e.cls, _figure(e)] <= MANY:
            text = _figure(e)
            at = labels.place(text, p, q, lambda r, k=k: drawn.clear(r, k),
                              penwidth(e.bandwidth))
            if at is not None:
                attrs_.update(label=text, lp=f"{at[0]:.1f},{at[1]:.1f}")
        if opts.highlight:
            if _edge_highlighted(opts, e):
                attrs_["penwidth"] = "4"
            else:
                attrs_["color"] += "40"   # fade what is not highlighted
        g.edge(e.src, e.dst, **attrs_)
    for step, (a, b) in enumerate(hops):
        if a == b:
            continue
        ra, rb = rects[a], rects[b]
        if abs((ra[1] + ra[3]) - (rb[1] + rb[3])) < 2:      # row-mates: over the top
            p, q = ((ra[0] + ra[2]) / 2, ra[3]), ((rb[0] + rb[2]) / 2, rb[3])
        else:
            p, q = route(ra, rb)
        bend = min(60.0, 0.3 * math.dist(p, q) + 12)
        if q[0] < p[0]:
            bend = -bend            # bow upwards whichever way the step runs
        spl, mid = arc(p, q, bend)
        g.edge(a, b, color=RING_COLOR, penwidth="2.5", dir="forward", pos=spl,
               label=f"<<B>{step}</B>>", fontcolor=RING_COLOR, fontsize="12",
               lp=f"{mid[0]:.1f},{mid[1]:.1f}")

    kinds: dict[str, set[str]] = defaultdict(set)
    for n in nodes:
        kinds[n.kind] |= models.get(n.kind, set()) if "\n" not in n.label else set()
    shown = bool(colors)
    label, lw, lh = _legend(dict(kinds), figures, opts, view, shown, bool(bands), groups)
    if width > 1.5 * height:          # a wide picture: the legend below it
        lx, ly = width / 2, -24 - lh / 2
        total_w, total_h = max(width, lw), height + lh + 24
    else:
        lx, ly = width + 24 + lw / 2, height - lh / 2
        total_w, total_h = width + lw + 24, max(height, lh)
    g.node("legend", label=label, shape="plaintext", style="", fillcolor="",
           pos=f"{lx:.1f},{ly:.1f}!")
    return Picture(g.source, total_w, total_h + 40, len(edges), crossing, len(crossed))


def _route_all(name: str, edges: list[Edge], nodes: list[Node], by_id: dict, pos: dict,
               rects: dict, bands: list[Band], band_of: dict) -> list[tuple]:
    """Every line's (edge, start, end, path), in a stable order: from the sides that face,
    through the gaps of the rows between its ends (top-level rows for a line between
    top-level boxes, every row for one that leaves a frame), over the boxes between two
    row-mates."""
    tier_of = {n.id: tier(n) for n in nodes}
    rows: dict[float, list] = defaultdict(list)       # top-level boxes by row, for detours
    every: dict[float, list] = defaultdict(list)      # every box by row
    for n in nodes:
        if n.id in pos:
            every[round(pos[n.id][1], 1)].append(rects[n.id])
            if n.cluster in ("", name):
                rows[round(pos[n.id][1], 1)].append(rects[n.id])
    for b in bands:
        rows[round(b.y, 1) + 0.01].append(rects[b.id])
        every[round(b.y, 1) + 0.01].append(rects[b.id])

    # two row-mates joined by a line side by side (a node's two CPUs and their socket link)
    # are one obstacle to a detour: a line climbing the gap between them would run along
    # the link's ends and read as a box between the CPUs (h100_cluster's nic3)
    joined_rows, joined_every = _joined(edges, pos, rects, rows), _joined(edges, pos, rects, every)
    row_index, every_index = Rows(joined_rows), Rows(joined_every)     # indexed once

    def top_frame(n: Node) -> list[str]:
        return n.cluster.split(".")[:2] if n.cluster not in ("", name) else []
    out: list[tuple] = []
    over: list[int] = []                  # the lines over the boxes between row-mates
    for e in sorted(edges, key=lambda e: (e.src, e.dst, e.cls)):
        if e.duplex and tier_of.get(e.src, 0) > tier_of.get(e.dst, 0):
            e = attrs.evolve(e, src=e.dst, dst=e.src)   # a stable direction for the DOT text
        p, q = route(rects[e.src], rects[e.dst], e.src in band_of, e.dst in band_of)
        flat = by_id.get(e.src, by_id.get(e.dst)).cluster in ("", name)
        ends = [by_id[x] for x in (e.src, e.dst) if x in by_id]
        leaves = len(ends) == 2 and top_frame(ends[0]) != top_frame(ends[1])
        path = detour(p, q, row_index) if flat and not leaves else detour(p, q, every_index)
        if abs(p[1] - q[1]) < 1 and any(p[0] < (r[0] + r[2]) / 2 < q[0] or
                                        q[0] < (r[0] + r[2]) / 2 < p[0]
                                        for r in (rows if flat else every).get(
                                            round(pos[e.src][1], 1), ())):
            # a row-mate further along: over the boxes between, from top to top
            a, b = rects[e.src], rects[e.dst]
            top = max(a[3], b[3]) + 14
            pa, pb = ((a[0] + a[2]) / 2, a[3]), ((b[0] + b[2]) / 2, b[3])
            path = [pa, (pa[0], top), (pb[0], top), pb]
            p, q = pa, pb
            over.append(len(out))
        out.append((e, p, q, path))
    return _spread_columns(_over_lanes(out, over))


def _joined(edges: list[Edge], pos: dict, rects: dict,
            rows: dict[float, list]) -> dict[float, list]:
    """``rows`` with, for every line between two neighbours of a row (no box between them),
    one box spanning both: the gap the line runs in is not a column for a detour."""
    where = {r: y for y, boxes in rows.items() for r in boxes}
    out = {y: list(boxes) for y, boxes in rows.items()}
    for e in edges:
        a, b = rects.get(e.src), rects.get(e.dst)
        if a is None or b is None or where.get(a) is None or where.get(a) != where.get(b):
            continue
        lo, hi = sorted((a, b))
        if any(lo[2] < (r[0] + r[2]) / 2 < hi[0] for r in rows[where[a]]):
            continue        # a row-mate further along: its line goes over the boxes between
        out[where[a]].append((lo[0], min(lo[1], hi[1]), hi[2], max(lo[3], hi[3])))
    return out


#: Points between the heights of row-mates' lines over the boxes between them.
LANE_STEP = 8.0


def _over_lanes(routed: list[tuple], over: list[int]) -> list[tuple]:
    """The lines ``over`` (indices into ``routed``) run over the top of the boxes between two
    row-mates (a switchless NVLink mesh: DGX-1's GPU 0-3 above GPU 1 and 2): each at its own
    height where their spans overlap, shortest lowest; at one height they would be one bus."""
    lanes: dict[float, list[list[tuple[float, float]]]] = defaultdict(list)
    out = list(routed)
    for k in sorted(over, key=lambda k: (abs(routed[k][3][0][0] - routed[k][3][3][0]),
                                         routed[k][3][0][0])):
        e, p, q, path = routed[k]
        x0, x1 = sorted((path[0][0], path[3][0]))
        rows = lanes[round(path[1][1], 1)]
        lane = next((i for i, spans in enumerate(rows)
                     if all(x1 <= a or b <= x0 for a, b in spans)), len(rows))
        if lane == len(rows):
            rows.append([])
        rows[lane].append((x0, x1))
        top = path[1][1] + lane * LANE_STEP
        out[k] = (e, p, q, [path[0], (path[0][0], top), (path[3][0], top), path[3]])
    return out


#: Points between detours that share a gap's column.
COLUMN_STEP = 6.0
#: At most this many detours share a column spread apart (3 x 6 pt stays inside a gap).
SPREAD = 3


def _spread_columns(routed: list[tuple]) -> list[tuple]:
    """Detours that climb the same gap's column over overlapping heights, with no box in
    common, moved apart by COLUMN_STEP each, in the order of their ends (so the one from
    the left stays left): two separate links would otherwise be drawn as one trunk
    (HGX B300's nic3-gpu3 and nic4-gpu4 between the CPUs)."""
    columns: dict[float, list[int]] = defaultdict(list)
    for k, (_e, _p, _q, path) in enumerate(routed):
        if len(path) == 6:
            columns[round(path[2][0], 1)].append(k)
    out = list(routed)
    for x, members in columns.items():
        if not 2 <= len(members) <= SPREAD:     # more would leave the gap: left as a trunk
            continue
        members.sort(key=lambda k: (routed[k][1][0] + routed[k][2][0], k))
        for n, k in enumerate(members):
            e, p, q, path = routed[k]
            dx = (n - (len(members) - 1) / 2) * COLUMN_STEP
            out[k] = (e, p, q, [path[0], path[1], (x + dx, path[2][1]), (x + dx, path[3][1]),
                                path[4], path[5]])
    return out


def _titles(frames: dict, mirrored, paths, font: dict[str, int]) \
        -> tuple[dict[str, dict], dict[str, tuple], list[str]]:
    """Where each frame's title goes: centred, else the spot nearest the centre along the
    frame's title band that no line runs through (a Superchip's 'sc0' clear of the lines from
    its NICs down to its CPU, a unit's title between the lines into its leaves); the DOT
    attribute that puts it there (for every frame, centred or not), the title's box, and the frames whose
    title no spot keeps clear."""
    grid: dict[tuple[int, int], list[tuple]] = defaultdict(list)
    for path in paths:
        for (x0, y0), (x1, y1) in zip(path, path[1:]):
            n = max(1, int(max(abs(x1 - x0), abs(y1 - y0)) // 3))
            for i in range(n + 1):
                x, y = x0 + (x1 - x0) * i / n, y0 + (y1 - y0) * i / n
                grid[int(x // 50), int(y // 50)].append((x, y))

    def clear(r: tuple) -> bool:
        for cx in range(int(r[0] // 50), int(r[2] // 50) + 1):
            for cy in range(int(r[1] // 50), int(r[3] // 50) + 1):
                if any(r[0] - 3 < x < r[2] + 3 and r[1] - 1 < y < r[3] + 1
                       for x, y in grid.get((cx, cy), ())):
                    return False
        return True
    place, boxes, crossed = {}, {}, []
    for c, (x0, y0, x1, y1) in sorted(frames.items()):
        w = len(short(c)) * font[c] * 0.62 + 8
        ty = (y0 + 2, y0 + TITLE) if c in mirrored else (y1 - TITLE, y1 - 2)
        mid = (x0 + x1) / 2
        lo, hi = x0 + 6 + w / 2, x1 - 6 - w / 2
        spots = sorted({mid, *(lo + 4 * i for i in range(int(max(0.0, hi - lo) // 4) + 1))},
                       key=lambda x: (abs(x - mid), x))
        at = next((x for x in spots if clear((x - w / 2, ty[0], x + w / 2, ty[1]))), None)
        if at is None:
            crossed.append(c)
            at = mid
        boxes[c] = (at - w / 2, ty[0], at + w / 2, ty[1])
        # every frame gets its own position: Graphviz passes a frame's ``lp`` down to the
        # frames inside it that set none, which drew nine switch trays' titles on the rack's
        place[c] = {"lp": f"{at:.1f},{(ty[0] + ty[1]) / 2:.1f}"}
    return place, boxes, crossed


def _tip(n: Node, models: dict[str, set[str]], color) -> str:
    """What hovering a box shows: its path, what it is, its group."""
    lines = [n.id, n.label.replace("\n", ", ")]
    if color:
        lines.append(color[1])
    return "\n".join(lines)


def _crosses(path, boxes: Labels, ids: list[str], ends: set[str],
             bars: dict[str, tuple] | None = None) -> bool:
    """Whether the line ``path`` runs through a box other than its two ends (a vertical
    run across a bar, away from the bar's text, is a crossing of lines: ``bars``)."""
    bars = bars or {}
    for (x0, y0), (x1, y1) in zip(path, path[1:]):
        n = max(1, int(max(abs(x1 - x0), abs(y1 - y0)) // 4))
        upright = abs(x1 - x0) < 0.5
        for i in range(n + 1):
            x, y = x0 + (x1 - x0) * i / n, y0 + (y1 - y0) * i / n
            for j in boxes._cells.get((int(x // 200), int(y // 200)), ()):
                r = boxes.taken[j]
                if r[0] < x < r[2] and r[1] < y < r[3] and ids[j] not in ends:
                    text = bars.get(ids[j])
                    if upright and text is not None and not text[0] < x < text[2]:
                        continue
                    return True
    return False


def _short_of(p, q, by: float):
    d = max(1.0, math.dist(p, q))
    return (q[0] - (q[0] - p[0]) / d * by, q[1] - (q[1] - p[1]) / d * by)


def _highlighted(opts: Options, node_id: str) -> bool:
    return any(node_id == h or node_id.startswith(h + ".") for h in opts.highlight)


def _edge_highlighted(opts: Options, e: Edge) -> bool:
    return (e.cls in opts.highlight or any(t in opts.highlight for t in e.types)
            or _highlighted(opts, e.src) or _highlighted(opts, e.dst))


__all__ = ["Picture", "picture", "PAD"]
