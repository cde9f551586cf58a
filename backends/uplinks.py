"""NIC uplinks out of a machine or rack drawn in full inside a cluster (issue 46).

A cluster's physical or logical view draws its first machine in a frame and the fabric's
leaves above it. Each NIC's line up to its leaf leaves its own frame first, then turns to
the leaf:

- a NIC with nothing above it inside the frame (a top-row tray's NIC) climbs straight up
  out of the frame, between its tray's title and its neighbours, then runs to its leaf;
- a NIC below other boxes (an NVL72 rack's trays 10-17, drawn upside down under the NVLink
  spine) rises just clear of its own row, runs sideways to the gap between its tray and the
  next, and climbs that gap out of the rack, crossing the NVLink bar at right angles (a bar
  is a folded bus: crossing it is crossing lines, as two lines of a drawing may); it never
  runs round the rack.

The lines that share a gap each take a lane of their own (LANE apart, the ones arriving
from the left left of the ones from the right, so none crosses another's rise) and the
ones that share a row's sideways run each their own height (the nearest NIC lowest): no
two are drawn along each other.
"""

from __future__ import annotations

import math
from collections import defaultdict

from ..compiler.ir.kinds import is_endpoint
from .style import penwidth

#: Points between the lanes of climbs that share a gap.
LANE = 4.0
#: Points between the sideways runs of NICs of one row that climb the same gap.
RISE = 7.0
#: Points above the frame's top where a climb turns to its leaf.
EXIT = 8.0
#: Points a climb keeps clear of a box.
CLEAR = 3.0
#: Points between the tracks above a frame, one a box its uplinks go to.
TRACK = 8.0
#: A gap at least this wide holds its climbs near its edge, not in its middle.
WIDE = 40.0
#: At most this far beside its own tray a climb's gap is (the gap between two trays).
NEXT = 30.0


def bar_label(bar: tuple[float, float, float, float], label: str) \
        -> tuple[float, float, float, float]:
    """The extent of a bar's centred text (Helvetica 10: at most 0.62 em a character), which
    no line may cross; elsewhere a line may cross a bar at right angles."""
    cx = (bar[0] + bar[2]) / 2
    half = max((len(s) for s in label.split("\n")), default=0) * 10 * 0.62 / 2 + 4
    return (cx - half, bar[1], cx + half, bar[3])


def _top_frame(cluster: str, name: str) -> str | None:
    if cluster in ("", name):
        return None
    return ".".join(cluster.split(".")[:2])


def _gaps(spans: list[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]]:
    """The open x ranges in ``lo..hi`` that none of ``spans`` covers."""
    out, x = [], lo
    for a, b in sorted(spans):
        if a > x:
            out.append((x, a))
        x = max(x, b)
    if x < hi:
        out.append((x, hi))
    return out


def climb_out(routed: list[tuple], name: str, by_id: dict, rects: dict, frames: dict,
              bars: dict[str, str] | None = None) -> list[tuple]:
    """``routed`` (edge, start, end, path) with each NIC uplink that leaves a top-level frame
    for a box above it drawn as the module says; every other line as it was. ``bars`` are
    the bars (id: text) a climb may cross away from their text."""
    out = list(routed)
    inside: dict[str, list] = defaultdict(list)     # top-level frame -> what a climb avoids
    rects = dict(rects)
    for n in by_id.values():
        top = _top_frame(n.cluster, name)
        if top in frames and n.id in rects and n.kind != "fabric":
            inside[top].append(rects[n.id])
    texts = [bar_label(rects[b], text) for b, text in (bars or {}).items() if b in rects]
    bar_rects = [rects[b] for b in (bars or {}) if b in rects]
    holds = _holders(by_id, name)
    climbs: dict[tuple, list[tuple[int, float, float, bool]]] = defaultdict(list)
    ends: dict[int, tuple] = {}
    leaving: dict[str, list[tuple[int, str]]] = defaultdict(list)    # frame -> (line, box)
    planned = track_plan([e for e, *_ in routed], by_id, rects, frames, name)
    height = track_heights(planned, frames)
    for k, (e, _p, _q, _path) in enumerate(routed):
        fed = _feed(e, by_id, rects, frames, name)
        if fed is not None and fed[0] in planned:  # a summary box's line: along its track
            top, upper, lower = fed
            h = height[top, lower.id]
            ru, rl = rects[upper.id], rects[lower.id]
            x_u, x_l = (ru[0] + ru[2]) / 2, (rl[0] + rl[2]) / 2
            path = [(x_u, ru[1]), (x_u, h), (x_l, h), (x_l, rl[3])]
            if upper.id != e.src:
                path = path[::-1]
            out[k] = (e, path[0], path[-1], path)
            continue
        ends_of = _uplink(e, by_id, rects, frames, name)
        if ends_of is None:
            continue
        top, inner, outer = ends_of
        frame = frames[top]
        ri, ro = rects[inner.id], rects[outer.id]
        start = ((ri[0] + ri[2]) / 2, ri[3])
        end = ((ro[0] + ro[2]) / 2, ro[1])
        y_out = frame[3] + EXIT
        above = [r for r in inside[top] if r != ri and r[3] > start[1] and r[1] < frame[3]]
        if not any(r[0] - CLEAR < start[0] < r[2] + CLEAR for r in above):
            out[k] = (e, start, start, [start])
            ends[k] = (end, y_out, inner.id == e.src)
            leaving[top].append((k, outer.id))
            continue
        plan = _climb(top, inner, start, frame, frames, holds,
                      [*inside[top], *texts], bar_rects)
        if plan is None:
            continue
        climbs[(top, *plan)].append((k, start[0], start[1], inner.id == e.src))
        ends[k] = (end, y_out, inner.id == e.src)
        leaving[top].append((k, outer.id))
    _lanes(out, climbs)
    tracks = {k: height[top, box] for top, members in leaving.items()
              for k, box in members if (top, box) in height}
    for k, (end, y_out, forward) in ends.items():
        e, _p, _q, pts = out[k]
        if k in tracks:         # up to its box's track, along it, up into the box
            pts = [*pts, (pts[-1][0], tracks[k]), (end[0], tracks[k]), end]
        else:
            pts = [*pts, (pts[-1][0], y_out), end]
        if not forward:
            pts = pts[::-1]
        out[k] = (e, pts[0], pts[-1], pts)
    return out


def _uplink(e, by_id: dict, rects: dict, frames: dict, name: str) -> tuple | None:
    """(frame, NIC, box) when ``e`` is a NIC's uplink out of a top-level frame to a box above
    the frame, else None."""
    if not e.duplex:
        return None
    a, b = by_id.get(e.src), by_id.get(e.dst)
    if a is None or b is None:
        return None
    for inner, outer in ((a, b), (b, a)):
        top = _top_frame(inner.cluster, name)
        if (is_endpoint(inner.kind) and top in frames
                and _top_frame(outer.cluster, name) != top
                and rects[outer.id][1] >= frames[top][3]):
            return top, inner, outer
    return None


def _feed(e, by_id: dict, rects: dict, frames: dict, name: str) -> tuple | None:
    """(frame, upper, lower) when ``e`` joins a top-level box above a top-level frame (a
    leaf) to a top-level box beside the frame whose top is the frame's (the summary box of
    the other racks, drawn in the frame's row): its line crosses the frame's uplinks'
    tracks, so it takes a track of its own; else None."""
    a, b = by_id.get(e.src), by_id.get(e.dst)
    if a is None or b is None:
        return None
    for upper, lower in ((a, b), (b, a)):
        ru, rl = rects.get(upper.id), rects.get(lower.id)
        if ru is None or rl is None or lower.cluster not in ("", name) or \
                (upper.cluster not in ("", name) and upper.kind != "net_switch"):
            continue        # a leaf may be in its unit's frame
        for top, f in frames.items():
            if "." in top[len(name) + 1:] or rl[0] < f[2] and f[0] < rl[2]:
                continue        # not a top-level frame, or the box is not beside it
            if abs(rl[3] - f[3]) < 2 and ru[1] >= f[3]:
                return top, upper, lower
    return None


def track_plan(edges, by_id: dict, rects: dict, frames: dict, name: str) \
        -> dict[str, list[tuple[str, float]]]:
    """For each top-level frame whose NIC uplinks leave it for boxes above (a rack's trays'
    NICs, and a machine's own: a DGX node's eight NICs drawn under their rail leaves ran
    slanted under the leaves' lines to the other nodes' summary box): the tracks above
    it, (box, widest line) from the frame up. First one track a box the uplinks go to (a
    rail's leaf), left to right: its uplinks run along it and up into the box as a
    bundle, lines with a box in common. Then one a summary box beside the frame (the other
    racks), in the order of the boxes feeding it, left to right, so that no line from a
    box above drops across another's track. No two lines into different boxes share a
    track."""
    uplinks: dict[str, dict[str, float]] = defaultdict(dict)
    feeds: dict[str, dict[str, list]] = defaultdict(dict)
    machine: set[str] = set()           # frames whose own NICs (in no tray) leave them
    feeders: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        found = _uplink(e, by_id, rects, frames, name)
        if found is not None:
            if found[1].cluster == found[0]:
                machine.add(found[0])
            top, _inner, outer = found
            w = uplinks[top].get(outer.id, 0.0)
            uplinks[top][outer.id] = max(w, penwidth(e.bandwidth))
            continue
        fed = _feed(e, by_id, rects, frames, name)
        if fed is not None:
            top, upper, lower = fed
            x = (rects[upper.id][0] + rects[upper.id][2]) / 2
            got = feeds[top].setdefault(lower.id, [math.inf, 0.0])
            got[0], got[1] = min(got[0], x), max(got[1], penwidth(e.bandwidth))
            feeders[top].add(upper.id)
    plan = {}
    for top, boxes in uplinks.items():
        if top in machine and not _one_row({*boxes, *feeders[top]}, rects, frames[top]):
            continue        # a machine's leaves in several rows (256 DGX nodes' 64 leaves):
            # a track above the machine would cross the lower rows; its lines as routed
        order = sorted(boxes, key=lambda b: ((rects[b][0] + rects[b][2]) / 2, b))
        fed_order = sorted(feeds.get(top, {}).items(), key=lambda kv: (kv[1][0], kv[0]))
        plan[top] = [(b, boxes[b]) for b in order] + [(b, w) for b, (_x, w) in fed_order]
    return plan


def _one_row(boxes: set[str], rects: dict, frame: tuple) -> bool:
    """Whether ``boxes`` stand in one row above ``frame`` with no box between them and it."""
    bottoms = {round(rects[b][1], 1) for b in boxes}
    if len(bottoms) > 1:
        return False
    low = min(bottoms)
    return not any(frame[3] < r[1] and r[3] < low for r in rects.values())


def track_heights(plan: dict, frames: dict) -> dict[tuple[str, str], float]:
    """(frame, box) -> the height of the box's track: EXIT above the frame, then each
    track TRACK above the last, or more between wide lines (3 pt clear)."""
    out = {}
    for top, tracks in plan.items():
        y, last = frames[top][3] + EXIT, None
        for box, w in tracks:
            if last is not None:
                y += max(TRACK, (last + w) / 2 + 3)
            out[top, box] = y
            last = w
    return out


def room(edges, by_id: dict, rects: dict, frames: dict, name: str) -> tuple[float, float]:
    """(height, points): the boxes above the height must move up by the points to leave
    room for the tracks above a frame (EXIT clear of the boxes above); (0, 0) when the tracks
    fit."""
    plan = track_plan(edges, by_id, rects, frames, name)
    heights = track_heights(plan, frames)
    cut, need = 0.0, 0.0
    for top, tracks in plan.items():
        f = frames[top]
        highest = max(heights[top, b] for b, _w in tracks) + tracks[-1][1] / 2 + EXIT
        upper = [r[1] for r in rects.values() if r[1] >= f[3] - 0.5]
        if upper and highest - min(upper) > need:
            cut, need = f[3] + 0.5, highest - min(upper)
    return cut, need


def _holders(by_id: dict, name: str) -> set[str]:
    """Frames that hold a GPU, CPU or NIC (a tray, a Superchip): a climb passes beside them,
    never through; a frame of switches alone (an NVLink switch tray) it may pass through
    between its boxes, clear of its title."""
    out: set[str] = set()
    for n in by_id.values():
        if n.kind in ("gpu", "cpu") or is_endpoint(n.kind):
            c = n.cluster
            while c and c != name:
                out.add(c)
                c = c.rpartition(".")[0]
    return out


def _spans(top: str, lo: float, hi: float, frames: dict, holds: set[str],
           boxes: list) -> list[tuple[float, float]]:
    """The x ranges a climb between heights ``lo`` and ``hi`` inside ``top`` keeps out of:
    frames that hold devices, the titles of the others, boxes (each grown by CLEAR)."""
    out = []
    for c, f in frames.items():
        if not c.startswith(top + ".") or f[3] <= lo or f[1] >= hi:
            continue
        if c in holds:
            out.append((f[0] - CLEAR, f[2] + CLEAR))
        else:           # its title, centred (12 pt, 0.62 em a character)
            half = len(c.rpartition(".")[2]) * 12 * 0.62 / 2 + 4
            mid = (f[0] + f[2]) / 2
            out.append((mid - half, mid + half))
    out += [(r[0] - CLEAR, r[2] + CLEAR) for r in boxes if r[3] > lo and r[1] < hi]
    return out


def _nearest(spans, frame, x: float) -> float | None:
    """``x`` when no span covers it, else the free point nearest to it: a narrow gap's
    middle, or a wide gap's point nearest ``x`` kept WIDE / 2 inside its edges."""
    if not any(a < x < b for a, b in spans):
        return x
    points = []
    for a, b in _gaps(spans, frame[0], frame[2]):
        if b - a < 2 * CLEAR:
            continue
        points.append((a + b) / 2 if b - a < WIDE else min(max(x, a + WIDE / 2), b - WIDE / 2))
    return min(points, key=lambda c: (abs(c - x), c)) if points else None


def _climb(top: str, inner, start, frame, frames: dict, holds: set[str], boxes: list,
           bar_rects: list) -> tuple | None:
    """The climb of the NIC at ``start`` out of frame ``top``: ((column, jog height, floor,
    ceiling), ...) from the gap beside its own tray up, each later column reached by a jog
    at that height in the corridor between floor and ceiling (an NVL72's physical view: the
    switch trays' gaps do not line up with the compute trays'); None when there is none."""
    parts = inner.cluster.split(".")
    depth = len(top.split("."))
    own = frames.get(".".join(parts[:depth + 1]))
    if own is None or len(parts) <= depth:      # a NIC of a machine, in no tray: as routed
        return None
    inner_frames = [f for c, f in frames.items() if c.startswith(top + ".")]
    x = _nearest(_spans(top, start[1], own[3], frames, holds, boxes), frame, start[0])
    if x is None or not own[0] - NEXT <= x <= own[2] + NEXT:
        return None
    legs = [(x, None, None, None)]
    y = own[3]
    for _ in range(8):
        if not any(a < x < b for a, b in _spans(top, y, frame[3], frames, holds, boxes)):
            return tuple(legs)
        # the corridor above y, and the row of things that stands on its ceiling
        things = [*boxes, *bar_rects, *inner_frames]
        ceiling = min((r[1] for r in things if r[1] > y + 1), default=frame[3])
        stage = max((r[3] for r in things if abs(r[1] - ceiling) < 1), default=frame[3])
        jog = (y + ceiling) / 2
        # a gap free all the way out of the frame if there is one, else the nearest free
        # past the next row
        c = _nearest(_spans(top, jog, frame[3], frames, holds, boxes), frame, x)
        if c is None or abs(c - x) > NEXT * 2:
            c = _nearest(_spans(top, jog, stage, frames, holds, boxes), frame, x)
        if c is None:
            return None
        if abs(c - x) > 0.5:
            legs.append((c, jog, y, ceiling))
            x = c
        y = stage
    return None


def _overlapping(ks: list[int], a: dict[int, float], b: dict[int, float]) -> list[list[int]]:
    """The jogs ``ks`` (from x ``a[k]`` to ``b[k]``) in groups whose x spans overlap: only
    jogs that share some x need heights of their own."""
    spans = sorted((min(a[k], b[k]), max(a[k], b[k]), k) for k in ks)
    groups: list[list[int]] = []
    right = -math.inf
    for lo, hi, k in spans:
        if lo > right + LANE:
            groups.append([])
        groups[-1].append(k)
        right = max(right, hi)
    return groups


def _lanes(out: list[tuple], climbs: dict) -> None:
    """The climbs spread into lanes: up a gap each its own lane (the ones arriving from the
    left left of those from the right, so none crosses another's rise), along a row's
    sideways run each its own height (the NIC nearest the gap lowest), at a jog each its own
    height in its corridor (the ones moving right from the left lanes highest), and up each
    later gap in the order they arrive."""
    paths: dict[int, list] = {}
    lane_at: dict[int, float] = {}
    first: dict[float, list] = defaultdict(list)
    for (_top, *legs), members in climbs.items():
        for m in members:
            first[legs[0][0]].append((m, legs))
    for column, members in first.items():
        left = sorted((m for m in members if m[0][1] < column), key=lambda m: m[0][1])
        right = sorted((m for m in members if m[0][1] >= column), key=lambda m: m[0][1])
        order = left + right
        for i, (m, _legs) in enumerate(order):
            k, x, y, _forward = m
            side = left if x < column else right
            rank = sorted(side, key=lambda s: abs(s[0][1] - column)).index((m, _legs))
            lane = column + (i - (len(order) - 1) / 2) * LANE
            run = y + RISE * (rank + 1)
            paths[k] = [(x, y), (x, run), (lane, run)]
            lane_at[k] = lane
    pending = {m[0]: legs for members in first.values() for m, legs in members}
    column_of = {k: legs[0][0] for k, legs in pending.items()}
    corridors: dict[int, list[tuple[int, tuple]]] = defaultdict(list)
    for k, legs in pending.items():
        for leg in legs[1:]:        # one corridor: jogs within a few points of each other
            corridors[round(leg[1] / 8)].append((k, leg))
    for key in sorted(corridors):               # from the bottom up
        movers = corridors[key]
        _, jog, floor, ceiling = movers[0][1]
        moving = {k for k, _leg in movers}
        new_lane: dict[int, float] = {}
        by_column: dict[float, list[int]] = defaultdict(list)
        for k, leg in movers:
            by_column[leg[0]].append(k)
        for column, ks in by_column.items():
            # the lanes of the lines already climbing this gap stay theirs
            taken = {round(lane_at[k], 1) for k in pending if k not in moving
                     and column_of[k] == column}
            slots = sorted((column + d * LANE for d in range(-12, 13)
                            if round(column + d * LANE, 1) not in taken),
                           key=lambda x: (abs(x - column), x))[:len(ks)]
            for k, lane in zip(sorted(ks, key=lambda k: (lane_at[k], k)), sorted(slots)):
                new_lane[k] = lane
        for group in _overlapping(list(moving), lane_at, new_lane):
            # moving right: the leftmost highest; moving left: the rightmost highest
            group.sort(key=lambda k: (new_lane[k] < lane_at[k], lane_at[k]
                                      if new_lane[k] > lane_at[k] else -lane_at[k]))
            step = max(3.0, min(LANE, (ceiling - floor) / (len(group) + 1)))
            for j, k in enumerate(group):
                h = jog + ((len(group) - 1) / 2 - j) * step
                paths[k] += [(lane_at[k], h), (new_lane[k], h)]
        for k, leg in movers:
            lane_at[k], column_of[k] = new_lane[k], leg[0]
    for k, pts in paths.items():
        e = out[k][0]
        out[k] = (e, pts[0], pts[-1], pts)


def stubs_aside(routed: list[tuple], bars: dict[str, str], rects: dict, by_id: dict) \
        -> list[tuple]:
    """``routed`` with each switch's stub onto a bar (a switch chip's drop onto a folded
    mesh) moved sideways along the switch's edge, within its middle half, when a climb or
    another unrelated line runs along it: an NVL72 rack's lower trays' uplinks climb the
    gap between two trays, which may line up with a chip's middle above the bar (tray12
    nic0's uplink ran 12 pt up switch tray 2 chip 0's stub in nvl72_cluster's physical
    view). A stub stays where it is unless moving clears it."""
    verticals = []          # (line, x, lo, hi, width, ends) of every vertical piece
    for k, (e, _p, _q, path) in enumerate(routed):
        w = penwidth(e.bandwidth)
        for p, q in zip(path, path[1:]):
            if abs(p[0] - q[0]) < 0.05 and abs(p[1] - q[1]) > 0.05:
                verticals.append((k, p[0], min(p[1], q[1]), max(p[1], q[1]), w,
                                  {e.src, e.dst}))
    out = list(routed)
    for k, (e, _p, _q, path) in enumerate(routed):
        bar = e.src if e.src in bars else e.dst if e.dst in bars else None
        other = by_id.get(e.dst if bar == e.src else e.src)
        if bar is None or other is None or other.id not in rects or len(path) != 2 or \
                abs(path[0][0] - path[1][0]) > 0.05 or other.kind in ("gpu", "cpu") or \
                is_endpoint(other.kind):
            continue
        w = penwidth(e.bandwidth)
        lo, hi = sorted((path[0][1], path[1][1]))
        ends = {e.src, e.dst}

        def clear(x: float) -> bool:
            return not any(j != k and not (ends & e2) and abs(x2 - x) < (w + w2) / 2 + 1.5
                           and min(hi, h2) - max(lo, l2) > 2.0
                           for j, x2, l2, h2, w2, e2 in verticals)
        x = path[0][0]
        if clear(x):
            continue
        box, b = rects[other.id], rects[bar]
        quarter = (box[2] - box[0]) / 4
        for d in (s * LANE * m for m in range(1, 12) for s in (1, -1)):
            nx = x + d
            if abs(nx - (box[0] + box[2]) / 2) <= quarter and b[0] < nx < b[2] and clear(nx):
                new = [(nx, path[0][1]), (nx, path[1][1])]
                out[k] = (e, new[0], new[1], new)
                break
    return out
