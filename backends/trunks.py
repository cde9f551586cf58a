"""Lines between two rows of network switches drawn on tracks (issue 46).

Between a row of leaves and the row of spine planes above them, each leaf's line went
straight to its plane: 32 leaves to 4 planes made a fan of long shallow lines, and lines
with no switch in common ran along each other where they crossed at a few degrees. Here each
box of the upper row has a track of its own in the gap between the rows: a line rises from
its lower box to the track of its upper box, runs along it, and rises into the box. Lines
into one box share its track (they have that box in common); lines of different boxes only
cross, at right angles. A line enters its upper box at the box's middle, moved aside when a
lower box's line rises at that x (the two would be drawn along each other).

Before any line is routed, the rows above a pair whose tracks do not fit in the gap between
them (each TRACK apart, or more between wide lines, EXIT clear of both rows) move up until
they fit (``room``; h100_fourtier's eight pods over its sixteen leaves). A pair whose tracks
still do not fit keeps its straight lines.
"""

from __future__ import annotations

from collections import defaultdict

from .style import penwidth

#: Points between two tracks, and clear of the rows above and below.
TRACK, EXIT = 8.0, 8.0
SWITCHES = ("net_switch", "netunit")


def _groups(edges: list, by_id: dict, rects: dict) -> dict[tuple[float, float], list[int]]:
    """The lines (indices into ``edges``) between two neighbouring rows of network switches,
    by the rows' heights (below, above)."""
    rows = sorted({round((r[1] + r[3]) / 2, 1) for n, r in rects.items()
                   if n in by_id and by_id[n].kind in SWITCHES})
    groups: dict[tuple[float, float], list[int]] = defaultdict(list)
    for k, e in enumerate(edges):
        a, b = by_id.get(e.src), by_id.get(e.dst)
        if a is None or b is None or a.kind not in SWITCHES or b.kind not in SWITCHES:
            continue
        ya, yb = (round((rects[n][1] + rects[n][3]) / 2, 1) for n in (e.src, e.dst))
        lo, hi = sorted((ya, yb))
        if lo == hi or any(lo < y < hi for y in rows):
            continue            # row-mates, or a line past a row between
        groups[lo, hi].append(k)
    return groups


def on_tracks(routed: list[tuple], by_id: dict, rects: dict, frames: dict) -> list[tuple]:
    """``routed`` (edge, start, end, path) with every line between two rows of network
    switches drawn on its upper box's track, as the module says; other lines as they were."""
    out = list(routed)
    for (lo, hi), members in sorted(_groups([e for e, *_ in routed], by_id, rects).items()):
        _tracks(out, members, lo, hi, by_id, rects, frames)
    return out


def room(edges: list, by_id: dict, rects: dict, frames: dict) -> tuple[float, float]:
    """(height, points): the boxes above the height must move up by the points for the
    tracks between the lowest pair of switch rows whose tracks do not fit in their gap
    (h100_fourtier's eight pods over its sixteen leaves: the tracks of eight thick lines
    did not fit in one row gap, and their straight lines crossed at a few degrees); (0, 0)
    when every pair's fit. Full meshes between the rows are left out: they are folded into
    a bar (``route.meshes``), not drawn on tracks."""
    from .route import meshes
    folded = {(a, b) for side, other, _cls in meshes(edges) for a in side for b in other}
    edges = [e for e in edges if (e.src, e.dst) not in folded and (e.dst, e.src) not in folded]
    for (lo, hi), members in sorted(_groups(edges, by_id, rects).items()):
        plan = _plan([(edges[k], None) for k in members], by_id, rects, frames, lo)
        if plan is not None and plan[1] > 0:
            uppers = {u for _k, u, _d, _w in plan[0]}
            return min(_outline(u, rects, frames)[1] for u in uppers) - 0.5, plan[1]
    return 0.0, 0.0


def _plan(lines: list[tuple], by_id: dict, rects: dict, frames: dict, lo: float):
    """The ends (key, upper box, lower box, width) of ``lines`` ((edge, key) pairs), each
    upper box's track height, and the points the tracks lack below the upper row (0 or
    less when they fit); None when the lowest track would sink under the lower row."""
    ends = []
    for e, k in lines:
        mid = lambda n: (rects[n][1] + rects[n][3]) / 2      # noqa: E731
        up, down = (e.src, e.dst) if mid(e.src) > mid(e.dst) else (e.dst, e.src)
        ends.append((k, up, down, penwidth(e.bandwidth)))
    uppers = sorted({u for _k, u, _d, _w in ends}, key=lambda u: (rects[u][0], u))
    lowers = {d for _k, _u, d, _w in ends}
    floor = max(_outline(d, rects, frames)[3] for d in lowers) + EXIT
    ceiling = min(_outline(u, rects, frames)[1] for u in uppers) - EXIT
    widest = {u: max(w for _k, uu, _d, w in ends if uu == u) for u in uppers}
    heights, y, last = {}, floor, None
    for u in uppers:
        if last is not None:
            y += max(TRACK, (last + widest[u]) / 2 + 3)
        heights[u] = y
        last = widest[u]
    if floor - widest[uppers[0]] / 2 < lo:
        return None
    return ends, y + last / 2 - ceiling, heights, lowers


def _tracks(out: list[tuple], members: list[int], lo: float, hi: float, by_id: dict,
            rects: dict, frames: dict) -> None:
    """The lines ``members`` between the rows at heights ``lo`` (below) and ``hi``, on
    tracks when they fit."""
    plan = _plan([(out[k][0], k) for k in members], by_id, rects, frames, lo)
    if plan is None or plan[1] > 0:
        return                  # no room: straight lines, as before
    ends, _lack, heights, lowers = plan
    rises = [(rects[d][0] + rects[d][2]) / 2 for d in lowers]
    for k, up, down, _w in ends:
        ru, rd = rects[up], rects[down]
        x_d = (rd[0] + rd[2]) / 2
        x_u = _entry(ru, rises)
        h = heights[up]
        path = [(x_d, rd[3]), (x_d, h), (x_u, h), (x_u, ru[1])]
        e = out[k][0]
        if e.src != down:
            path = path[::-1]
        out[k] = (e, path[0], path[-1], path)


def _outline(n: str, rects: dict, frames: dict) -> tuple[float, float, float, float]:
    """The box ``n`` with the smallest frame drawn round it, if one holds it alone among
    rows (a scalable unit's leaves): what a track keeps clear of."""
    r = rects[n]
    holding = [f for f in frames.values() if f[0] <= r[0] and r[2] <= f[2]
               and f[1] <= r[1] and r[3] <= f[3] and f[3] - f[1] < 3 * (r[3] - r[1])]
    if not holding:
        return r
    f = min(holding, key=lambda f: (f[2] - f[0]) * (f[3] - f[1]))
    return (min(r[0], f[0]), min(r[1], f[1]), max(r[2], f[2]), max(r[3], f[3]))


def _entry(box: tuple, rises: list[float]) -> float:
    """Where a line enters ``box`` from below: its middle, or the nearest point of its
    middle half no lower box's line rises within 3 pt of."""
    mid, half = (box[0] + box[2]) / 2, (box[2] - box[0]) / 4
    for d in (0, 4, -4, 8, -8, 12, -12, 16, -16, 20, -20):
        if abs(d) <= half and all(abs(mid + d - x) >= 3 for x in rises):
            return mid + d
    return mid
