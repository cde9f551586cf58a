"""Lines for ``topoc render``, placed by topoc rather than by Graphviz.

After ``layout`` has placed every box in rows, this module decides how each line is drawn:

- a full mesh between two rows (every GPU to every NVSwitch, every tray to every switch tray,
  every leaf of a group to every spine of it) is *folded* into a band: one thin bar between
  the rows, one stub from each member to it, and one label saying what the mesh is;
- every line leaves a box from the side that faces the other box (bottom to top between rows,
  side to side in a row) and a line into a band drops straight onto it, so lines between
  neighbouring rows cross only the gap between them, never a box;
- labels are placed beside their line where they overlap no box and no other label; one that
  finds no room is left out (the legend gives each class's figures).

Graphviz (``neato -n2``) then draws the lines exactly as given (``pos`` and ``lp``).
Coordinates are Graphviz points, y growing upwards.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Sequence

import attrs

#: A mesh of at least this many lines between at least 2 x 2 boxes is folded into a band.
BAND_MIN_LINES = 6
BAND_H = 14.0
CHAR_W8, LABEL_H = 4.9, 10.0            # Helvetica 8 pt


@attrs.frozen
class Band:
    """A folded full mesh: a bar across ``x0..x1`` centred at ``y``, joining ``side`` (the
    members on one side of it) to ``other`` (the members across)."""

    id: str
    x0: float
    x1: float
    y: float
    side: tuple[str, ...]
    other: tuple[str, ...]
    cls: str
    label: str


Rect = tuple[float, float, float, float]        # x0, y0, x1, y1 (y up)


def rect(pos: tuple[float, float], size: tuple[float, float]) -> Rect:
    x, y = pos
    w, h = size
    return (x - w / 2, y - h / 2, x + w / 2, y + h / 2)


def overlaps(a: Rect, b: Rect, margin: float = 0.0) -> bool:
    return (a[0] < b[2] + margin and b[0] < a[2] + margin
            and a[1] < b[3] + margin and b[1] < a[3] + margin)


def meshes(edges: Sequence, members: Callable[[str], bool] = lambda _n: True) \
        -> list[tuple[tuple[str, ...], tuple[str, ...], str]]:
    """Complete bipartite blocks of one link class: boxes with the same set of neighbours
    (two or more) over that class, whose neighbours in turn all reach exactly them."""
    nbrs: dict[tuple[str, str], set[str]] = defaultdict(set)
    for e in edges:
        if members(e.src) and members(e.dst):
            nbrs[e.cls, e.src].add(e.dst)
            nbrs[e.cls, e.dst].add(e.src)
    by_set: dict[tuple[str, frozenset], list[str]] = defaultdict(list)
    for (cls, node), ns in nbrs.items():
        by_set[cls, frozenset(ns)].append(node)
    out, seen = [], set()
    for (cls, ns), side in sorted(by_set.items(), key=lambda kv: (kv[0][0], sorted(kv[1]))):
        other = sorted(ns)
        if len(side) < 2 or len(other) < 2 or len(side) * len(other) < BAND_MIN_LINES:
            continue
        if any(not nbrs[cls, o] >= set(side) for o in other):
            continue
        key = (cls, frozenset(side) | ns)
        if key in seen or set(side) & ns:
            continue
        seen.add(key)
        out.append((tuple(sorted(side)), tuple(other), cls))
    return out


def route(a: Rect, b: Rect, a_band: bool = False, b_band: bool = False) \
        -> tuple[tuple[float, float], tuple[float, float]]:
    """The two ends of a straight line from box ``a`` to box ``b``: from the side facing the
    other box; into a band (or out of one) vertically."""
    ax, ay = (a[0] + a[2]) / 2, (a[1] + a[3]) / 2
    bx, by = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    if a[1] >= b[3] - 0.5 or b[1] >= a[3] - 0.5:         # one above the other
        up = ay > by                                       # a above b
        ya = a[1] if up else a[3]
        yb = b[3] if up else b[1]
        if b_band:
            bx = min(max(ax, b[0] + 4), b[2] - 4)
        if a_band:
            ax = min(max(bx, a[0] + 4), a[2] - 4)
        return (ax, ya), (bx, yb)
    if ax <= bx:                                            # side by side
        return (a[2], ay), (b[0], by)
    return (a[0], ay), (b[2], by)


def segment_meets(p: tuple[float, float], q: tuple[float, float], r: Rect,
                  pad: float = 0.0) -> bool:
    """Whether the segment p..q passes through ``r`` grown by ``pad`` (a line's half width:
    a label placed there would be drawn under the line). Liang-Barsky clipping."""
    x0, y0, x1, y1 = r[0] - pad, r[1] - pad, r[2] + pad, r[3] + pad
    dx, dy = q[0] - p[0], q[1] - p[1]
    lo, hi = 0.0, 1.0
    for d, near, far in ((dx, x0 - p[0], x1 - p[0]), (dy, y0 - p[1], y1 - p[1])):
        if abs(d) < 1e-9:
            if near > 0 or far < 0:
                return False
            continue
        a, b = sorted((near / d, far / d))
        lo, hi = max(lo, a), min(hi, b)
        if lo > hi:
            return False
    return True


def spline(p: tuple[float, float], q: tuple[float, float]) -> str:
    """A straight segment as Graphviz's one-piece B-spline ``pos``."""
    (x0, y0), (x1, y1) = p, q
    return f"{x0:.1f},{y0:.1f} {x0:.1f},{y0:.1f} {x1:.1f},{y1:.1f} {x1:.1f},{y1:.1f}"


def arc(p: tuple[float, float], q: tuple[float, float], bend: float) -> tuple[str, tuple]:
    """A curved arrow from ``p`` to ``q`` bowed ``bend`` points to its left, with the arrow
    head at ``q``; the spline and the point at the middle of the curve."""
    (x0, y0), (x1, y1) = p, q
    dx, dy = x1 - x0, y1 - y0
    length = max(1.0, (dx * dx + dy * dy) ** 0.5)
    nx, ny = -dy / length * bend, dx / length * bend
    c1 = (x0 + dx / 3 + nx, y0 + dy / 3 + ny)
    c2 = (x0 + 2 * dx / 3 + nx, y0 + 2 * dy / 3 + ny)
    # the curve stops 8 pt short of q; the arrow head covers the rest
    ex, ey = x1 - dx / length * 8, y1 - dy / length * 8
    mid = (x0 + dx / 2 + 0.75 * nx, y0 + dy / 2 + 0.75 * ny)
    return (f"e,{x1:.1f},{y1:.1f} {x0:.1f},{y0:.1f} {c1[0]:.1f},{c1[1]:.1f} "
            f"{c2[0]:.1f},{c2[1]:.1f} {ex:.1f},{ey:.1f}"), mid


def label_size(text: str) -> tuple[float, float]:
    lines = text.split("\n")
    return max(len(s) for s in lines) * CHAR_W8 + 4, len(lines) * LABEL_H + 2


class Labels:
    """Places labels where they overlap no box and no label placed before."""

    def __init__(self, boxes: Sequence[Rect]):
        self.taken: list[Rect] = list(boxes)
        self._cells: dict[tuple[int, int], list[int]] = defaultdict(list)
        for i, r in enumerate(self.taken):
            self._index(i, r)

    def _index(self, i: int, r: Rect) -> None:
        for cx in range(int(r[0] // 200), int(r[2] // 200) + 1):
            for cy in range(int(r[1] // 200), int(r[3] // 200) + 1):
                self._cells[cx, cy].append(i)

    def free(self, r: Rect) -> bool:
        seen = set()
        for cx in range(int(r[0] // 200), int(r[2] // 200) + 1):
            for cy in range(int(r[1] // 200), int(r[3] // 200) + 1):
                for i in self._cells.get((cx, cy), ()):
                    if i not in seen:
                        seen.add(i)
                        if overlaps(r, self.taken[i], 1.0):
                            return False
        return True

    def take(self, r: Rect) -> None:
        self.taken.append(r)
        self._index(len(self.taken) - 1, r)

    def place(self, text: str, p: tuple[float, float], q: tuple[float, float],
              clear: Callable[[Rect], bool] | None = None,
              width: float = 0.0) -> tuple[float, float] | None:
        """A centre for ``text`` beside the segment p..q, or None when there is no room;
        ``clear`` also rules out a spot (one another line runs through); ``width``, the
        line's, keeps the text off a thick line."""
        w, h = label_size(text)
        (x0, y0), (x1, y1) = p, q
        vertical = abs(x1 - x0) < abs(y1 - y0)
        off = width / 2 if clear is not None else 0.0
        beside = ((w / 2 + 3 + off, 0), (-w / 2 - 3 - off, 0))
        over = ((0, h / 2 + 2 + off), (0, -h / 2 - 2 - off))
        offsets = [beside if vertical else over]
        if clear is not None:       # lines checked: a slanted line's label may go further off
            offsets.append((*(over if vertical else beside),
                            *((sx * (w / 2 + 3 + off), sy * (h / 2 + 2 + off))
                              for sy in (1, -1)
                              for sx in (1, -1))))
        spots = [(0.5, 0.35, 0.65, 0.2, 0.8)]
        if clear is not None:
            spots.append((0.5, 0.35, 0.65, 0.2, 0.8, 0.275, 0.425, 0.575, 0.725, 0.125, 0.875))
        for tried, along in zip(offsets, spots):
            for t in along:
                x, y = x0 + (x1 - x0) * t, y0 + (y1 - y0) * t
                for dx, dy in tried:
                    r = (x + dx - w / 2, y + dy - h / 2, x + dx + w / 2, y + dy + h / 2)
                    if self.free(r) and (clear is None or clear(r)):
                        self.take(r)
                        return x + dx, y + dy
        return None


class Segments:
    """Drawn lines' straight pieces, indexed in 100-point cells: whether a label's box is
    clear of every line but its own (a label under another line of a fan is half hidden)."""

    def __init__(self):
        self.pieces: list[tuple[tuple[float, float], tuple[float, float], float, int]] = []
        self._cells: dict[tuple[int, int], list[int]] = defaultdict(list)
        self._ends: dict[int, frozenset] = {}

    def add(self, path: Sequence[tuple[float, float]], width: float, owner: int,
            ends: frozenset = frozenset()) -> None:
        """A line's pieces; ``ends``: its boxes (lines sharing one may be drawn along it, a
        bundle on a track: a label beside the one is beside the others)."""
        self._ends[owner] = ends
        for p, q in zip(path, path[1:]):
            i = len(self.pieces)
            self.pieces.append((p, q, width, owner))
            for cx in range(int(min(p[0], q[0]) // 100), int(max(p[0], q[0]) // 100) + 1):
                for cy in range(int(min(p[1], q[1]) // 100), int(max(p[1], q[1]) // 100) + 1):
                    self._cells[cx, cy].append(i)

    def clear(self, r: Rect, owner: int) -> bool:
        """No line runs through ``r`` (grown by the half width of each line but ``owner``'s,
        which may pass by its edge)."""
        for cx in range(int((r[0] - 5) // 100), int((r[2] + 5) // 100) + 1):
            for cy in range(int((r[1] - 5) // 100), int((r[3] + 5) // 100) + 1):
                for i in self._cells.get((cx, cy), ()):
                    p, q, width, who = self.pieces[i]
                    mine = who == owner or self._ends[who] & self._ends[owner]
                    # its own line (and its bundle) may pass by the label's edge, never
                    # through it
                    if segment_meets(p, q, r, width / 2 + 1 if not mine else 0.0):
                        return False
        return True


def polyline(points: Sequence[tuple[float, float]]) -> str:
    """Straight segments through ``points`` as one Graphviz B-spline ``pos``."""
    out = [points[0]]
    for prev, q in zip(points, points[1:]):
        out += [prev, q, q]
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in out)


@attrs.define
class _Row:
    """One row of boxes as ``detour`` reads it: its vertical extent and horizontal ends, its
    boxes sorted by left edge (with the widest box's width, to find the boxes near a line by
    bisection), the middles of the gaps wider than 6 pt between neighbours, and the x ranges
    a line keeps 3 pt clear of (each box grown by 3 pt, overlapping ones merged)."""

    bottom: float
    top: float
    left: float
    right: float
    boxes: list[Rect]
    lefts: list[float]
    widest: float
    gaps: list[float]
    starts: list[float]
    ends: list[float]

    @classmethod
    def of(cls, boxes: list[Rect]) -> _Row:
        xs = sorted(boxes)
        starts: list[float] = []
        ends: list[float] = []
        for b in xs:                    # by left edge: merge the open ranges that overlap
            a0, a1 = b[0] - 3, b[2] + 3
            if starts and a0 < ends[-1]:
                ends[-1] = max(ends[-1], a1)
            else:
                starts.append(a0)
                ends.append(a1)
        return cls(min(b[1] for b in xs), max(b[3] for b in xs), min(b[0] for b in xs),
                   max(b[2] for b in xs), xs, [b[0] for b in xs],
                   max(b[2] - b[0] for b in xs),
                   sorted({(a[2] + b[0]) / 2 for a, b in zip(xs, xs[1:]) if b[0] - a[2] > 6}),
                   starts, ends)

    def covers(self, x: float) -> bool:
        """Whether ``x`` lies within 3 pt of a box of this row (strictly, as a line must keep
        clear of it)."""
        i = bisect.bisect_left(self.starts, x) - 1
        return i >= 0 and x < self.ends[i]

    def near(self, x0: float, x1: float) -> list[Rect]:
        """The boxes a segment whose x stays within ``x0..x1`` could come within 3 pt of."""
        lo = bisect.bisect_right(self.lefts, x0 - 3 - self.widest - 1e-6)
        hi = bisect.bisect_left(self.lefts, x1 + 3 + 1e-6)
        return self.boxes[lo:hi]


class Rows:
    """Rows of boxes indexed once for ``detour``: a picture's lines each look at the rows they
    cross, and within a row only at the boxes near them and at the gaps nearest to them, so
    routing is not quadratic in the boxes (a racks view of 5,000 boxes)."""

    def __init__(self, rows: dict[float, list[Rect]]):
        self.rows = [_Row.of(boxes) for boxes in rows.values() if boxes]


def detour(p: tuple[float, float], q: tuple[float, float],
           rows: Rows | dict[float, list[Rect]]) -> list[tuple[float, float]]:
    """The line p..q, or when rows of boxes lie between its ends, a path that climbs through a
    gap every such row leaves free: p, into the gap next to p, along it to the free column, up
    the column to the gap next to q, then q. The column is the free candidate (a gap's middle,
    or 10 pt beyond the rows' ends) nearest to p and q, the leftmost of equals."""
    if not isinstance(rows, Rows):
        rows = Rows(rows)
    lo, hi = sorted((p[1], q[1]))
    between = [r for r in rows.rows if lo < r.bottom and r.top < hi]
    if not between:
        return [p, q]
    x0, x1 = sorted((p[0], q[0]))
    if not any(_hits(p, q, b) for r in between for b in r.near(x0, x1)):
        return [p, q]                   # the straight line passes clear
    candidates = sorted({min(r.left for r in between) - 10, max(r.right for r in between) + 10}
                        .union(*(r.gaps for r in between)))
    x = _nearest_free(candidates, p[0], q[0], between)
    if x is None:
        return [p, q]
    up = q[1] > p[1]
    first = min(r.bottom for r in between) if up else max(r.top for r in between)
    last = max(r.top for r in between) if up else min(r.bottom for r in between)
    y1 = (p[1] + first) / 2
    y2 = (last + q[1]) / 2
    return [p, (p[0], y1), (x, y1), (x, y2), (q[0], y2), q]


def _nearest_free(candidates: list[float], px: float, qx: float, between: list[_Row]) \
        -> float | None:
    """The sorted ``candidates``' free one (no row covers it) of least
    ``abs(c - px) + abs(c - qx)``, the smallest of equals; None when none is free. Outside
    ``px..qx`` that sum grows with the distance, so each side is walked outwards from the
    nearest and stops at its first free candidate (and the ones that tie with it)."""
    def key(c: float) -> tuple[float, float]:
        return (abs(c - px) + abs(c - qx), c)

    def free(c: float) -> bool:
        return not any(r.covers(c) for r in between)
    x0, x1 = sorted((px, qx))
    i, j = bisect.bisect_left(candidates, x0), bisect.bisect_right(candidates, x1)
    found = [c for c in candidates[i:j] if free(c)]
    for k in range(i - 1, -1, -1):      # left of both: the sum shrinks towards x0
        c = candidates[k]
        if found and key(c) > min(map(key, found)):
            break
        if free(c):
            found.append(c)
    best = min(found, key=key) if found else None
    for c in candidates[j:]:            # right of both: the sum grows away from x1
        if best is not None and key(c) > key(best):
            break
        if free(c):
            best = c if best is None else min(best, c, key=key)
            break
    return best


def _hits(p: tuple[float, float], q: tuple[float, float], box: Rect, margin: float = 3.0) -> bool:
    """Whether the segment p..q runs through ``box`` grown by ``margin``."""
    n = max(1, int(max(abs(q[0] - p[0]), abs(q[1] - p[1])) // 3))
    return any(box[0] - margin < p[0] + (q[0] - p[0]) * i / n < box[2] + margin and
               box[1] - margin < p[1] + (q[1] - p[1]) * i / n < box[3] + margin
               for i in range(n + 1))
