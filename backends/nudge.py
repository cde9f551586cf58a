"""Lines drawn along unrelated lines moved apart, once every line is routed (issue 46).

The router draws each line on its own: a detour runs along the middle of the gap between two
rows and climbs the middle of the gap between two boxes, so two detours with no box in
common that use the same gap or column were drawn on top of each other, one trunk where a
reader sees one link (AWS p5's cpu1-pcie4 along the fabric-efa17 uplink and pcie0-gpu0, 22
such pairs in its logical view).

Here the inner pieces of every routed line (not the first and last, which end on their
boxes) are taken in order and each kept where it is, or moved sideways by STEP, 2 STEP, ...
(at most REACH, or three widths of a thick line), to the nearest place where it runs along
no parallel piece of a line it shares no box with (closer than STEP, or than their half
widths and GAP, over more than OVERLAP points), enters no box (nor a bar's text) its old
place did not (each piece and its neighbours checked on their own), and its neighbouring
pieces keep their direction; first where those neighbouring pieces, lengthened or
shortened, run along no unrelated line's end (or, moving vertical pieces once the
horizontal ones are placed, along no unrelated horizontal piece) either: a line turning
out of a box's gap ran along another's drop into the box right below it. A piece within
CLEAR of a box's edge may stay so, never move further into it. Lines sharing a box may
share a lane (a bundle into one switch stays one bundle); lines that only cross stay put.
Horizontal pieces are moved first, then vertical ones (moving a piece lengthens or
shortens its neighbours, which stay perpendicular to it).
"""

from __future__ import annotations

from collections import defaultdict

from .style import penwidth

#: Points between lanes, the farthest a piece moves, the run along another that counts.
STEP, REACH, OVERLAP = 4.0, 12.0, 2.0
#: Points of paper between two thick lines' edges; the widest line drawn (style.penwidth).
GAP, WIDEST = 1.5, 8.0
#: Points a moved piece keeps clear of a box.
CLEAR = 2.0
CELL = 50.0

Point = tuple[float, float]


class _Boxes:
    """Boxes indexed in CELL-point squares: which ones a segment enters (grown by CLEAR)."""

    def __init__(self, rects: dict[str, tuple[float, float, float, float]]):
        self.ids = list(rects)
        self.rects = [rects[i] for i in self.ids]
        self.cells: dict[tuple[int, int], list[int]] = defaultdict(list)
        for k, (x0, y0, x1, y1) in enumerate(self.rects):
            for cx in range(int(x0 // CELL), int(x1 // CELL) + 1):
                for cy in range(int(y0 // CELL), int(y1 // CELL) + 1):
                    self.cells[cx, cy].append(k)

    def entered(self, p: Point, q: Point) -> set[tuple[int, bool]]:
        """The boxes an axis-parallel segment p..q passes inside of (CLEAR pt grown), each
        with whether it passes CLEAR pt inside the box: a piece within CLEAR of a box's
        edge may stay so, never move into it."""
        x0, x1 = sorted((p[0], q[0]))
        y0, y1 = sorted((p[1], q[1]))
        out = set()
        for cx in range(int((x0 - CLEAR) // CELL), int((x1 + CLEAR) // CELL) + 1):
            for cy in range(int((y0 - CLEAR) // CELL), int((y1 + CLEAR) // CELL) + 1):
                for k in self.cells.get((cx, cy), ()):
                    r = self.rects[k]
                    if x0 < r[2] + CLEAR and r[0] - CLEAR < x1 and \
                            y0 < r[3] + CLEAR and r[1] - CLEAR < y1:
                        out.add((k, False))
                        if x0 < r[2] - CLEAR and r[0] + CLEAR < x1 and \
                                y0 < r[3] - CLEAR and r[1] + CLEAR < y1:
                            out.add((k, True))
        return out


class _Lanes:
    """Parallel pieces placed so far, by their fixed coordinate (y of a horizontal piece, x
    of a vertical one) in STEP-wide buckets: whether a new one would run along one."""

    def __init__(self):
        self.buckets: dict[int, list[tuple[float, float, float, frozenset, float, int]]] = \
            defaultdict(list)
        self.of_line: dict[int, set[int]] = defaultdict(set)

    def add(self, at: float, lo: float, hi: float, ends: frozenset, width: float,
            line: int = -1) -> None:
        self.buckets[int(at // STEP)].append((at, lo, hi, ends, width, line))
        self.of_line[line].add(int(at // STEP))

    def drop(self, line: int) -> None:
        """Every piece of ``line`` taken out (its pieces move with it)."""
        for b in self.of_line.pop(line, ()):
            self.buckets[b] = [it for it in self.buckets[b] if it[5] != line]

    def clear(self, at: float, lo: float, hi: float, ends: frozenset, width: float,
              loose: bool = False) -> bool:
        """No piece of a line sharing no box with ``ends`` runs within a lane of this one
        over more than OVERLAP points (a lane: STEP, or the two lines' half widths and a
        gap, whichever is more: thick lines 4 pt apart read as one band; ``loose``: STEP)."""
        b = int(at // STEP)
        reach = int((WIDEST + width / 2 + GAP) // STEP) + 1
        for k in range(b - reach, b + reach + 1):
            for a, l0, h0, e, w, _line in self.buckets.get(k, ()):
                if abs(a - at) < max(STEP, 0 if loose else (w + width) / 2 + GAP) - 0.01 and \
                        min(hi, h0) - max(lo, l0) > OVERLAP and not (e & ends):
                    return False
        return True


def _axis(p: Point, q: Point) -> int | None:
    """0 for a horizontal piece, 1 for a vertical one, None for a slanted or empty one."""
    if abs(p[1] - q[1]) < 0.05 and abs(p[0] - q[0]) > 0.05:
        return 0
    if abs(p[0] - q[0]) < 0.05 and abs(p[1] - q[1]) > 0.05:
        return 1
    return None


def _moved(path: list[Point], i: int, axis: int, d: float) -> list[Point]:
    """``path`` with its piece i..i+1 moved by ``d`` across its ``axis``."""
    out = list(path)
    for j in (i, i + 1):
        x, y = out[j]
        out[j] = (x, y + d) if axis == 0 else (x + d, y)
    return out


def _keeps_shape(old: list[Point], new: list[Point], i: int) -> bool:
    """The pieces next to piece i keep their direction and some length."""
    for a, b in ((i - 1, i), (i + 1, i + 2)):
        if a < 0 or b >= len(old):
            continue
        for c in (0, 1):
            before, after = old[b][c] - old[a][c], new[b][c] - new[a][c]
            if abs(before) > 0.05 and (before > 0) != (after > 0) or \
                    abs(before) > 0.05 and abs(after) < 2.0:
                return False
    return True


def _add_pieces(index: _Lanes, k: int, path: list[Point], axis: int, ends: frozenset,
                width: float, settled: bool = True) -> None:
    """Every piece of line ``k`` along ``axis`` into ``index``; unless ``settled``, only its
    first and last (its inner ones may still move)."""
    for i, (p, q) in enumerate(zip(path, path[1:])):
        if not settled and 0 < i < len(path) - 2:
            continue
        if _axis(p, q) == axis:
            lo, hi = sorted((p[axis], q[axis]))
            index.add(p[1 - axis], lo, hi, ends, width, k)


def _clear_along(index: _Lanes, path: list[Point], j: int, axis: int, ends: frozenset,
                 width: float, loose: bool) -> bool:
    """Piece j of ``path`` (when it exists and runs along ``axis``) runs along no unrelated
    piece of ``index``."""
    if j < 0 or j >= len(path) - 1 or _axis(path[j], path[j + 1]) != axis:
        return True
    lo, hi = sorted((path[j][axis], path[j + 1][axis]))
    return index.clear(path[j][1 - axis], lo, hi, ends, width, loose)


def apart(routed: list[tuple], rects: dict, fixed: set[int] = frozenset()) -> list[tuple]:
    """``routed`` (edge, start, end, path) with inner pieces moved off unrelated lines, as the
    module says; a line's ends never move, nor do the lines ``fixed`` (indices: laid out in
    lanes of their own already). ``rects``: every box and bar text, by id."""
    boxes = _Boxes(rects)
    widths = [penwidth(e.bandwidth) for e, *_ in routed]
    paths = [list(path) for *_, path in routed]
    ends = [frozenset((e.src, e.dst)) for e, *_ in routed]
    for axis in (0, 1):
        lanes = _Lanes()
        # the pieces the other way that stay as they are now: a line's ends and a fixed
        # line's pieces, and once the horizontal pieces are placed, every horizontal one
        across = _Lanes()
        for k, path in enumerate(paths):
            _add_pieces(across, k, path, 1 - axis, ends[k], widths[k], axis == 1 or k in fixed)
        inner: list[tuple[int, int]] = []
        for k, path in enumerate(paths):        # the pieces that stay: ends and straight lines
            for i, (p, q) in enumerate(zip(path, path[1:])):
                if _axis(p, q) != axis:
                    continue
                if 0 < i < len(path) - 2 and k not in fixed:
                    inner.append((k, i))
                else:
                    lo, hi = sorted((p[axis], q[axis]))
                    lanes.add(p[1 - axis], lo, hi, ends[k], widths[k])
        for k, i in inner:
            path = paths[k]
            p, q = path[i], path[i + 1]
            lo, hi = sorted((p[axis], q[axis]))     # along the piece; across it: p[1 - axis]
            near = range(max(0, i - 1), min(len(path) - 1, i + 2))     # the piece, its neighbours
            was = [boxes.entered(path[j], path[j + 1]) for j in near]
            chosen = None
            n = int(max(REACH, 3 * (widths[k] + GAP)) // STEP)
            # a lane clear by the lines' widths, else one whose middle is clear (thick lines
            # touching, still two lines), else where the router put it; first where the
            # neighbouring pieces, lengthened or shortened, run along no unrelated line
            # either (a line turning out of a box's gap along another's end into the box
            # below it), then where the piece itself does
            for sides, loose, d in ((sides, loose, d) for sides in (True, False)
                                    for loose in (False, True) for d in
                                    (0.0, *(s * STEP * m for m in range(1, n + 1)
                                            for s in (1, -1)))):
                new = _moved(path, i, axis, d) if d else path
                if not lanes.clear(p[1 - axis] + d, lo, hi, ends[k], widths[k], loose):
                    continue
                if d and not _keeps_shape(path, new, i):
                    continue
                if sides and not all(_clear_along(across, new, j, 1 - axis, ends[k],
                                                  widths[k], loose)
                                     for j in (i - 1, i + 1)
                                     if axis == 1 or j in (0, len(new) - 2)):
                    continue
                if d and not all(boxes.entered(new[j], new[j + 1]) <= old
                                 for j, old in zip(near, was)):
                    continue
                chosen = new
                break
            if chosen is None:
                chosen = path       # nowhere free within REACH: left where the router put it
            if chosen is not path:
                across.drop(k)
                _add_pieces(across, k, chosen, 1 - axis, ends[k], widths[k], axis == 1)
            paths[k] = chosen
            lanes.add(chosen[i][1 - axis], lo, hi, ends[k], widths[k])
    return [(e, path[0], path[-1], path) for (e, _p, _q, _old), path in zip(routed, paths)]
