"""``detour``: the same paths as the direct search over every box (kept here as the
reference), with work that grows with the rows a line crosses rather than with every box of
the picture (a racks view of thousands of boxes made render quadratic, issue 25)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from topoc.backends import route
from topoc.backends.route import Rows, _hits, detour


def reference_detour(p, q, rows):
    """The search before rows were indexed: every box of the rows between, every candidate."""
    lo, hi = sorted((p[1], q[1]))
    between = [(y, boxes) for y, boxes in rows.items()
               if lo < min(b[1] for b in boxes) and max(b[3] for b in boxes) < hi]
    if not between:
        return [p, q]
    spans = [b for _, boxes in between for b in boxes]
    if not any(_hits(p, q, b) for b in spans):
        return [p, q]
    candidates = {min(b[0] for b in spans) - 10, max(b[2] for b in spans) + 10}
    for _, boxes in between:
        xs = sorted(boxes)
        candidates |= {(a[2] + b[0]) / 2 for a, b in zip(xs, xs[1:]) if b[0] - a[2] > 6}
    free = [x for x in candidates if not any(b[0] - 3 < x < b[2] + 3 for b in spans)]
    if not free:
        return [p, q]
    x = min(free, key=lambda c: (abs(c - p[0]) + abs(c - q[0]), c))
    up = q[1] > p[1]
    first = min(b[1] for b in spans) if up else max(b[3] for b in spans)
    last = max(b[3] for b in spans) if up else min(b[1] for b in spans)
    y1 = (p[1] + first) / 2
    y2 = (last + q[1]) / 2
    return [p, (p[0], y1), (x, y1), (x, y2), (q[0], y2), q]


_X = st.integers(0, 400).map(float) | st.floats(0, 400, allow_nan=False)


@st.composite
def pictures(draw):
    """Rows of boxes (possibly overlapping, touching, with narrow and wide gaps) and a line."""
    rows = {}
    for r in range(draw(st.integers(0, 5))):
        y = 60.0 * r
        boxes = []
        for _ in range(draw(st.integers(1, 8))):
            x = draw(_X)
            boxes.append((x, y - draw(st.sampled_from([5.0, 10.0])), x + draw(
                st.sampled_from([4.0, 20.0, 37.5, 60.0])), y + draw(st.sampled_from([5.0, 12.0]))))
        rows[y] = boxes
    p = (draw(_X), draw(st.floats(-40, 300, allow_nan=False)))
    q = (draw(_X), draw(st.floats(-40, 300, allow_nan=False)))
    return rows, p, q


@settings(max_examples=400, deadline=None)
@given(pictures())
def test_detour_finds_the_reference_path(case):
    rows, p, q = case
    assert detour(p, q, Rows(rows)) == reference_detour(p, q, rows)
    assert detour(p, q, rows) == reference_detour(p, q, rows)


def test_a_line_looks_at_the_boxes_near_it_only(monkeypatch):
    """100 rows of 100 boxes, a vertical line through the middle of them: the straight-line
    test samples the one box that overlaps its column (the direct search sampled the row's
    boxes up to it: 51), and the free column is found among the two gaps nearest to it, each
    tried against the 100 rows (the direct search tried each of 9,902 candidates against the
    10,000 boxes)."""
    rows = {60.0 * r: [(40.0 * i, 60.0 * r - 10, 40.0 * i + 30, 60.0 * r + 10)
                       for i in range(100)] for r in range(100)}
    p, q = (2015.0, -40.0), (2015.0, 6000.0)
    calls = []
    real = route._hits
    monkeypatch.setattr(route, "_hits", lambda p, q, b: calls.append(b) or real(p, q, b))
    path = detour(p, q, rows)
    assert path == reference_detour(p, q, rows)
    assert path[2][0] == 1995.0                # the gap left of the box at 2000..2030
    assert calls == [(2000.0, -10.0, 2030.0, 10.0)]
    index = Rows(rows)
    covered = []
    real_covers = route._Row.covers
    monkeypatch.setattr(route._Row, "covers",
                        lambda self, x: covered.append(x) or real_covers(self, x))
    assert detour(p, q, index) == path
    assert sorted(set(covered)) == [1995.0] and len(covered) == 100
